// llmprism: the desktop application. `llmprism [CAPTURE]` opens the GUI; `--screenshot OUT.png` renders one
// view (or the whole window) headless (no display needed) and exits.
#include "capture_loader.h"
#include "export.h"
#include "main_window.h"
#include "model/units.h"
#include "rank_chart.h"
#include "step_chart.h"
#include "timeline_view.h"
#include "topology_view.h"
#include "view_state.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QPixmap>
#include <QRegularExpression>
#include <QSettings>
#include <QTemporaryDir>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

using namespace prism::ui;

namespace {

// The heap in two arenas: the GUI thread's, and one that every other thread shares (the capture's loader and
// the analysis' workers). glibc gives each new thread an arena of its own, up to 8 a core, and memory a stage
// frees in one arena is not what the next stage, on other threads, allocates from: it stayed resident beside
// the new. On the first half of `large` the GUI's peak from capture to window 140-144 -> 138-140 MiB, opened
// interactively 157-162 -> 155.5-156.6 MiB, and 5 MiB less held while the capture is open; on `large` 255 ->
// 248-250 MiB; no slower (one arena for all: as low, but 5-10% slower; three: in between; docs/BENCHMARKS.md).
// MALLOC_ARENA_MAX or GLIBC_TUNABLES in the environment decide instead.
void shareHeapArenas() {
#if defined(__GLIBC__)
    if (!std::getenv("MALLOC_ARENA_MAX") && !std::getenv("GLIBC_TUNABLES")) mallopt(M_ARENA_MAX, 2);
#endif
}

int fail(int code, const QString& message) {
    std::fprintf(stderr, "llmprism: %s\n", qPrintable(message));
    return code;
}

struct ShotOptions {
    QString out, view, job, theme, steps, selectStep, colorBy, find;
    QSize size;
    bool strict = false;
    bool fitRows = false;
};

int screenshot(const QStringList& capture, const ShotOptions& o) {
    // Never read or write the user's settings: a screenshot must not depend on (or change) them.
    QTemporaryDir settingsDir;
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir.path());

    SessionPtr session;
    try {
        session = CaptureLoader::loadNow(capture, o.strict);
        // A capture analysed in stages shows one window: the one of --job (else the first window's job) that
        // starts at the first step of --steps (else at step 0).
        if (session->staged && session->windowJob >= 0 && (!o.job.isEmpty() || !o.steps.isEmpty())) {
            const auto& jobs = session->staged->report.jobs;
            int job = session->windowJob;
            for (int j = 0; j < int(jobs.size()); ++j)
                if (QString::fromStdString(jobs[std::size_t(j)].id) == o.job) job = j;
            const int from = o.steps.isEmpty() ? 0 : o.steps.split('-').value(0).toInt();
            const auto [first, last] = prism::windowSteps(jobs[std::size_t(job)], session->staged->jobs[std::size_t(job)],
                                                          from, session->staged->budget);
            if (job != session->windowJob || first != session->windowFirst) {
                auto window = CaptureLoader::windowSession(session->staged, job, first, last);
                window->source = session->source;
                session = window;
            }
        }
    } catch (const std::exception& e) {
        return fail(1, "error: " + CaptureLoader::describeError(e).replace('\n', ' '));
    }
    const auto theme = o.theme == "dark" ? MainWindow::Theme::Dark : MainWindow::Theme::Light;
    QSettings().setValue("view/theme", int(theme)); // the window applies the saved theme when it starts
    MainWindow::setTheme(theme);

    ViewState state;
    state.setSession(session);
    if (!o.job.isEmpty()) {
        const auto& jobs = session->report().jobs;
        int found = -1;
        QStringList ids;
        for (int j = 0; j < int(jobs.size()); ++j) {
            ids << QString::fromStdString(jobs[std::size_t(j)].id);
            if (ids.back() == o.job) found = j;
        }
        if (found < 0)
            return fail(2, QString("no job %1 in %2 (jobs: %3)")
                               .arg(o.job, capture.value(0), ids.isEmpty() ? "none" : ids.join(", ")));
        state.setJob(found);
    }
    auto stepPos = [&](const QString& text) {
        bool ok = false;
        int index = text.toInt(&ok);
        return ok && state.jobData() ? state.jobData()->stepPosition(index) : -1;
    };

    std::unique_ptr<QWidget> widget;
    ExportableView* view = nullptr;
    std::unique_ptr<MainWindow> window;
    if (o.view == "window") {
        window = std::make_unique<MainWindow>();
        window->setSession(session);
        if (!o.job.isEmpty()) window->selectJob(o.job);
        window->resize(o.size);
    } else if (o.view == "timeline") {
        auto* tl = new TimelineView(&state);
        tl->setJobData(state.jobData());
        widget.reset(tl);
        view = tl;
    } else if (o.view == "steps") {
        auto* c = new StepChart(&state);
        widget.reset(c);
        view = c;
    } else if (o.view == "ranks") {
        auto* c = new RankChart(&state);
        widget.reset(c);
        view = c;
    } else if (o.view == "topology") {
        auto* t = new TopologyView(&state);
        t->setColorBy(o.colorBy == "dp"       ? TopologyView::ColorBy::DpGroup
                          : o.colorBy == "pp" ? TopologyView::ColorBy::PpStage
                                              : TopologyView::ColorBy::Job);
        widget.reset(t);
        view = t;
    } else {
        return fail(2, QString("unknown --view %1 (timeline, steps, ranks, topology or window)").arg(o.view));
    }
    ViewState* vs = window ? window->viewState() : &state;
    QWidget* shown = window ? static_cast<QWidget*>(window.get()) : widget.get();
    shown->resize(o.size);
    shown->show();
    QApplication::processEvents();
    TimelineView* tl = window ? window->timeline() : dynamic_cast<TimelineView*>(widget.get());
    if (tl && o.fitRows) {
        tl->fitRows();
        tl->fitAll();
    }
    if (!o.steps.isEmpty()) {
        const QStringList parts = o.steps.split('-');
        const int a = stepPos(parts.value(0)), b = stepPos(parts.value(1, parts.value(0)));
        if (a < 0 || b < 0) return fail(2, QString("--steps %1: no such step in this job").arg(o.steps));
        if (tl) tl->zoomToSteps(a, b);
    }
    // A job with findings shows the rank of its top finding that names one unless told what to show (the
    // default screenshot of samples/anomalies showed stage 0 only, its slow rank at stage 1 off the image).
    if (tl && o.find.isEmpty() && o.selectStep.isEmpty() && !o.fitRows) tl->revealFindingRank();
    if (!o.find.isEmpty() && tl && !tl->search(o.find))
        return fail(2, QString("--find %1: no such rank, host, address or step in this job").arg(o.find));
    if (!o.selectStep.isEmpty()) {
        const int s = stepPos(o.selectStep);
        if (s < 0) return fail(2, QString("--select-step %1: no such step in this job").arg(o.selectStep));
        vs->select(prism::ui::Selection::ofStep(s), false);
    }
    QApplication::processEvents();
    // A window's grab has no title bar (the window manager draws it): the timeline's title names the capture,
    // job, range and findings above it.
    QImage image = window ? withTitleStrip(window->grab().toImage(), window.get(), window->timeline()->exportTitle())
                          : renderViewImage(*view, o.size);
    if (!image.save(o.out)) return fail(1, QString("error: cannot write %1").arg(o.out));
    std::printf("wrote %s\n", qPrintable(o.out));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    shareHeapArenas();         // before any thread starts
    Q_INIT_RESOURCE(llmprism); // the resources live in the static ui library
    // --screenshot, --version and --help must work without a display (they aborted with exit 134 there): pick the
    // offscreen platform before Qt starts.
    auto given = [&](std::initializer_list<const char*> flags) { // as FLAG or FLAG=VALUE
        return std::any_of(argv + 1, argv + argc, [&](const char* a) {
            return std::any_of(flags.begin(), flags.end(), [&](const char* flag) {
                const std::size_t n = std::strlen(flag);
                return std::strncmp(a, flag, n) == 0 && (a[n] == '\0' || a[n] == '=');
            });
        });
    };
    const bool display = std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY");
    if ((given({"--screenshot"}) || (!display && given({"--version", "-v", "--help", "-h", "--help-all"}))) &&
        !std::getenv("QT_QPA_PLATFORM"))
        setenv("QT_QPA_PLATFORM", "offscreen", 1);

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
    parser.addPositionalArgument("capture", "Capture folder, flows.csv[.gz], topology.json or .prism session to open.",
                                 "[CAPTURE]");
    QCommandLineOption shotOpt("screenshot", "Render a view headless to OUT.png and exit.", "OUT.png");
    QCommandLineOption viewOpt("view", "View for --screenshot: timeline (default), steps, ranks, topology or window.",
                               "VIEW", "timeline");
    QCommandLineOption jobOpt("job", "Job to show (report id, e.g. job-1); default the first.", "ID");
    QCommandLineOption sizeOpt("size", "Image size for --screenshot, WIDTHxHEIGHT (default 1600x900).", "WxH",
                               "1600x900");
    QCommandLineOption themeOpt("theme", "Theme for --screenshot: light (default) or dark.", "THEME", "light");
    QCommandLineOption stepsOpt("steps", "Zoom the timeline to steps FIRST[-LAST] (step indices).", "RANGE");
    QCommandLineOption selectOpt("select-step", "Select step N (the per-rank chart shows it).", "N");
    QCommandLineOption colorOpt("color-by", "Topology colours for --screenshot: job, dp or pp.", "MODE", "job");
    QCommandLineOption findOpt("find", "Find and select a rank, host, address or step (as Ctrl+F does).", "TEXT");
    QCommandLineOption fitRowsOpt("fit-rows", "Shrink the timeline rows so that every rank fits (an overview).");
    QCommandLineOption strictOpt("strict", "Stop at the first bad input row.");
    QCommandLineOption topologyOpt("topology",
                                   "The cluster's topology.json, for a lone flow file or a clickhouse:// table "
                                   "(default: topology.json next to the flow data).",
                                   "T.json");
    QCommandLineOption memoryOpt("memory",
                                 "Memory a capture may take before it is analysed in stages and shown one job's "
                                 "window at a time (8G, 512M; default 60% of the memory available; also "
                                 "LLMPRISM_MEMORY).",
                                 "SIZE");
    parser.addOptions({shotOpt, viewOpt, jobOpt, sizeOpt, themeOpt, stepsOpt, selectOpt, colorOpt, findOpt, fitRowsOpt,
                       strictOpt, memoryOpt, topologyOpt});
    parser.process(app);
    const QStringList args = parser.positionalArguments();
    // The capture as the loader takes it: the path or URL, and the topology named with it.
    QStringList capture = args.mid(0, 1);
    if (parser.isSet(topologyOpt)) {
        if (args.isEmpty()) return fail(2, "--topology needs a CAPTURE to go with");
        capture << parser.value(topologyOpt);
    }
    if (parser.isSet(memoryOpt)) {
        if (!prism::parseSize(parser.value(memoryOpt).toStdString()))
            return fail(2, "--memory expects a size such as 8G or 512M, found \"" + parser.value(memoryOpt) + "\"");
        qputenv("LLMPRISM_MEMORY", parser.value(memoryOpt).toUtf8());
    }

    if (parser.isSet(shotOpt)) {
        if (args.size() != 1) return fail(2, "--screenshot needs exactly one CAPTURE");
        ShotOptions o;
        o.out = parser.value(shotOpt);
        o.view = parser.value(viewOpt).toLower();
        o.job = parser.value(jobOpt);
        o.theme = parser.value(themeOpt).toLower();
        o.steps = parser.value(stepsOpt);
        o.selectStep = parser.value(selectOpt);
        o.colorBy = parser.value(colorOpt).toLower();
        o.strict = parser.isSet(strictOpt);
        o.fitRows = parser.isSet(fitRowsOpt);
        o.find = parser.value(findOpt);
        const auto m = QRegularExpression("^(\\d+)x(\\d+)$").match(parser.value(sizeOpt));
        if (!m.hasMatch()) return fail(2, "--size must be WIDTHxHEIGHT, e.g. 1600x900");
        o.size = QSize(std::clamp(m.captured(1).toInt(), 320, 8000), std::clamp(m.captured(2).toInt(), 200, 8000));
        if (o.theme != "light" && o.theme != "dark") return fail(2, "--theme must be light or dark");
        return screenshot(capture, o);
    }

    MainWindow window;
    window.show();
    if (!capture.isEmpty()) window.openPaths(capture);
    return app.exec();
}
