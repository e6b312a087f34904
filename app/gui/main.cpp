// llmprism: the desktop application. `llmprism [CAPTURE]` opens the GUI; `--screenshot OUT.png` renders
// the window headless (no display needed) and exits.
#include "capture_loader.h"
#include "main_window.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QPixmap>
#include <QTimer>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
    // --screenshot must work without a display: pick the offscreen platform before Qt starts.
    bool screenshot = false;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--screenshot") == 0 || std::strncmp(argv[i], "--screenshot=", 13) == 0)
            screenshot = true;
    if (screenshot && !std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);

    QApplication app(argc, argv);
    QApplication::setOrganizationName("LLMPrism");
    QApplication::setApplicationName("LLMPrism");
    QApplication::setApplicationVersion(LLMPRISM_VERSION);
    QApplication::setWindowIcon(QIcon(":/icons/llmprism.svg"));

    QCommandLineParser parser;
    parser.setApplicationDescription("Black-box performance diagnosis of LLM training jobs from network flow "
                                     "captures.");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("capture", "Capture folder, flows.csv[.gz] or topology.json to open.",
                                 "[CAPTURE]");
    QCommandLineOption shotOpt("screenshot", "Render the window headless to OUT.png and exit.", "OUT.png");
    QCommandLineOption viewOpt("view", "View to show with --screenshot: summary (more views arrive later).", "VIEW",
                               "summary");
    QCommandLineOption jobOpt("job", "Job to select with --screenshot.", "ID");
    QCommandLineOption strictOpt("strict", "Stop at the first bad input row.");
    parser.addOptions({shotOpt, viewOpt, jobOpt, strictOpt});
    parser.process(app);
    const QStringList args = parser.positionalArguments();

    if (parser.isSet(shotOpt)) {
        if (args.size() != 1) {
            std::fprintf(stderr, "llmprism: --screenshot needs exactly one CAPTURE\n");
            return 2;
        }
        prism::ui::SessionPtr session;
        try {
            session = prism::ui::CaptureLoader::loadNow(args.first(), parser.isSet(strictOpt));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "llmprism: error: %s\n", e.what());
            return 1;
        }
        prism::ui::MainWindow window;
        window.setSession(session);
        window.resize(1400, 900);
        window.show();
        QApplication::processEvents();
        const QString out = parser.value(shotOpt);
        if (!window.grab().save(out)) {
            std::fprintf(stderr, "llmprism: error: cannot write %s\n", qPrintable(out));
            return 1;
        }
        std::printf("wrote %s\n", qPrintable(out));
        return 0;
    }

    prism::ui::MainWindow window;
    window.show();
    if (!args.isEmpty()) window.openPath(args.first());
    return app.exec();
}
