#include "main_window.h"

#include "capture_loader.h"
#include "model/units.h"
#include "summary_view.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPalette>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QStyleFactory>

namespace prism::ui {

static constexpr int kMaxRecent = 10;

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("LLMPrism"));
    setWindowIcon(QIcon(":/icons/llmprism.svg"));
    setAcceptDrops(true);
    setObjectName("MainWindow");

    m_loader = new CaptureLoader(this);
    m_summary = new SummaryView(this);
    setCentralWidget(m_summary);
    createDocks();
    createActions();

    m_statusLabel = new QLabel(tr("Ready"), this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->setMaximumWidth(220);
    m_progress->setTextVisible(false);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setObjectName("cancelButton");
    statusBar()->addWidget(m_statusLabel, 1);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);
    setBusy(false);
    connect(m_cancel, &QPushButton::clicked, m_loader, &CaptureLoader::cancel);

    connect(m_loader, &CaptureLoader::progress, this, [this](int id, double f, const QString& stage) {
        if (id != m_loadId) return;
        m_progress->setValue(int(f * 1000));
        m_statusLabel->setText(tr("%1 %2…").arg(stage, QFileInfo(m_loadingPath).fileName()));
    });
    connect(m_loader, &CaptureLoader::finished, this, [this](int id, SessionPtr s) {
        if (id != m_loadId) return;
        setBusy(false);
        addRecent(m_loadingPath);
        setSession(s);
    });
    connect(m_loader, &CaptureLoader::failed, this, [this](int id, const QString& path, const QString& msg) {
        if (id != m_loadId) return;
        setBusy(false);
        showError(path, msg);
    });
    connect(m_loader, &CaptureLoader::cancelled, this, [this](int id) {
        if (id != m_loadId) return;
        setBusy(false);
        m_statusLabel->setText(tr("Loading cancelled"));
    });

    QSettings settings;
    resize(1280, 800);
    restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
    setTheme(Theme(settings.value("view/theme", int(Theme::System)).toInt()));
}

MainWindow::~MainWindow() = default;

void MainWindow::createDocks() {
    auto* jobsDock = new QDockWidget(tr("Jobs"), this);
    jobsDock->setObjectName("jobsDock");
    m_jobList = new QListWidget(jobsDock);
    m_jobList->setObjectName("jobList");
    jobsDock->setWidget(m_jobList);
    addDockWidget(Qt::LeftDockWidgetArea, jobsDock);

    auto* problemsDock = new QDockWidget(tr("Input problems"), this);
    problemsDock->setObjectName("problemsDock");
    m_problems = new QListWidget(problemsDock);
    m_problems->setObjectName("problemsList");
    m_problems->setWordWrap(true);
    problemsDock->setWidget(m_problems);
    addDockWidget(Qt::BottomDockWidgetArea, problemsDock);
}

void MainWindow::createActions() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* openFolder = file->addAction(tr("&Open Capture Folder…"), this, [this] {
        QSettings s;
        QString dir = QFileDialog::getExistingDirectory(this, tr("Open capture folder"),
                                                        s.value("paths/lastFolder").toString());
        if (!dir.isEmpty()) openPath(dir);
    });
    openFolder->setShortcut(QKeySequence::Open);
    QAction* openFile = file->addAction(tr("Open &File…"), this, [this] {
        QSettings s;
        QString path = QFileDialog::getOpenFileName(this, tr("Open flows or topology file"),
                                                    s.value("paths/lastFolder").toString(),
                                                    tr("Captures (*.csv *.csv.gz *.json);;All files (*)"));
        if (!path.isEmpty()) openPath(path);
    });
    openFile->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    m_reloadAction = file->addAction(tr("&Reload"), this, [this] {
        if (m_session) openPath(m_session->source);
    });
    m_reloadAction->setShortcut(QKeySequence::Refresh);
    m_reloadAction->setEnabled(false);
    file->addSeparator();
    m_strictAction = file->addAction(tr("&Strict Input Checking"));
    m_strictAction->setCheckable(true);
    m_strictAction->setToolTip(tr("Stop at the first bad row instead of skipping bad rows"));
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    QMenu* theme = view->addMenu(tr("&Theme"));
    auto* group = new QActionGroup(this);
    const QList<QPair<QString, Theme>> themes{
        {tr("&System"), Theme::System}, {tr("&Light"), Theme::Light}, {tr("&Dark"), Theme::Dark}};
    QSettings settings;
    int current = settings.value("view/theme", int(Theme::System)).toInt();
    for (const auto& [name, t] : themes) {
        QAction* a = theme->addAction(name, this, [this, t = t] {
            setTheme(t);
            QSettings().setValue("view/theme", int(t));
        });
        a->setCheckable(true);
        a->setChecked(int(t) == current);
        group->addAction(a);
    }

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About LLMPrism"), this, [this] {
        QMessageBox::about(this, tr("About LLMPrism"),
                           tr("<h3>LLMPrism %1</h3><p>Black-box performance diagnosis of LLM training jobs "
                              "from network flow captures: jobs, parallelism, steps and stragglers.</p>")
                               .arg(QStringLiteral(LLMPRISM_VERSION)));
    });
}

void MainWindow::openPath(const QString& path) {
    m_loadingPath = path;
    QSettings().setValue("paths/lastFolder", QFileInfo(path).isDir() ? path : QFileInfo(path).absolutePath());
    setBusy(true);
    m_statusLabel->setText(tr("Opening %1…").arg(path));
    m_loadId = m_loader->load(path, m_strictAction->isChecked());
}

void MainWindow::setSession(const SessionPtr& session) {
    m_session = session;
    m_lastError.clear();
    m_summary->setSession(session);
    m_jobList->clear();
    m_problems->clear();
    m_reloadAction->setEnabled(bool(session));
    if (!session) return;
    setWindowTitle(tr("%1 — LLMPrism").arg(QFileInfo(session->source).fileName()));
    for (const JobInfo& j : session->report().jobs)
        m_jobList->addItem(tr("%1   %2 GPUs · TP %3 × PP %4 × DP %5")
                               .arg(QString::fromStdString(j.id))
                               .arg(j.gpus.size())
                               .arg(j.tp)
                               .arg(j.pp)
                               .arg(j.dp));
    const LoadDiagnostics& d = session->capture.diagnostics;
    for (const InputIssue& e : d.errors) {
        auto* item = new QListWidgetItem(style()->standardIcon(QStyle::SP_MessageBoxCritical),
                                         tr("Skipped row — %1").arg(QString::fromStdString(e.toString())));
        m_problems->addItem(item);
    }
    if (d.skippedRows > d.errors.size())
        m_problems->addItem(tr("… and %1 more skipped rows").arg(d.skippedRows - d.errors.size()));
    for (const InputIssue& w : d.warnings)
        m_problems->addItem(new QListWidgetItem(style()->standardIcon(QStyle::SP_MessageBoxWarning),
                                                QString::fromStdString(w.toString())));
    if (d.warningCount > d.warnings.size())
        m_problems->addItem(tr("… and %1 more warnings").arg(d.warningCount - d.warnings.size()));
    const auto& s = *session->report().capture;
    m_statusLabel->setText(tr("%1 records, %2 jobs, %3 rows skipped")
                               .arg(QString::fromStdString(formatCount(s.records)))
                               .arg(session->report().jobs.size())
                               .arg(s.skippedRows));
}

void MainWindow::showError(const QString& path, const QString& message) {
    m_lastError = message;
    m_statusLabel->setText(tr("Could not open %1").arg(QFileInfo(path).fileName()));
    auto* box = new QMessageBox(QMessageBox::Critical, tr("Could not open capture"),
                                tr("LLMPrism could not open\n%1").arg(path), QMessageBox::Ok, this);
    box->setObjectName("errorDialog");
    box->setInformativeText(message);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open(); // window-modal, never blocks the event loop
}

void MainWindow::setBusy(bool busy) {
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    if (busy) m_progress->setValue(0);
}

QStringList MainWindow::recentFiles() const { return QSettings().value("paths/recent").toStringList(); }

void MainWindow::addRecent(const QString& path) {
    QString abs = QFileInfo(path).absoluteFilePath();
    QStringList recent = recentFiles();
    recent.removeAll(abs);
    recent.prepend(abs);
    while (recent.size() > kMaxRecent) recent.removeLast();
    QSettings().setValue("paths/recent", recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    m_recentMenu->clear();
    const QStringList recent = recentFiles();
    for (const QString& path : recent) m_recentMenu->addAction(path, this, [this, path] { openPath(path); });
    m_recentMenu->setEnabled(!recent.isEmpty());
}

void MainWindow::setTheme(Theme theme) {
    static const QPalette systemPalette = QApplication::palette();
    if (theme == Theme::System) {
        QApplication::setPalette(systemPalette);
        return;
    }
    QApplication::setStyle(QStyleFactory::create("Fusion"));
    QPalette p;
    if (theme == Theme::Dark) {
        const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), text(0xdf, 0xe1, 0xe5);
        p.setColor(QPalette::Window, window);
        p.setColor(QPalette::WindowText, text);
        p.setColor(QPalette::Base, base);
        p.setColor(QPalette::AlternateBase, window);
        p.setColor(QPalette::ToolTipBase, base);
        p.setColor(QPalette::ToolTipText, text);
        p.setColor(QPalette::Text, text);
        p.setColor(QPalette::Button, window);
        p.setColor(QPalette::ButtonText, text);
        p.setColor(QPalette::Highlight, QColor(0x3e, 0x7b, 0xd6));
        p.setColor(QPalette::HighlightedText, Qt::white);
        p.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xff));
        p.setColor(QPalette::PlaceholderText, QColor(0x8a, 0x8f, 0x98));
        p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
        p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
        p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
    } else {
        p = QApplication::style()->standardPalette();
    }
    QApplication::setPalette(p);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls() && !event->mimeData()->urls().isEmpty() &&
        event->mimeData()->urls().first().isLocalFile())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const auto urls = event->mimeData()->urls();
    if (!urls.isEmpty() && urls.first().isLocalFile()) {
        openPath(urls.first().toLocalFile());
        event->acceptProposedAction();
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    m_loader->cancel();
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    QMainWindow::closeEvent(event);
}

} // namespace prism::ui
