// MainWindow: the menus, the toolbar and their actions, the timeline's help, the theme, recent files.
#include "main_window.h"

#include "compare_window.h"
#include "database_dialog.h"
#include "notes_panel.h"
#include "timeline_view.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QFileDialog>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>
#include <QFileInfo>
#include <QToolBar>

namespace prism::ui {

static constexpr int kMaxRecent = 10;

CompareWindow* MainWindow::compareWith(const QString& path) {
    if (!m_session) return nullptr;
    if (m_session->staged) { // one window of one job is held: there is no whole run to compare
        QMessageBox::information(this, tr("Compare With"),
                                 tr("This capture is larger than memory and was analysed in stages: only one "
                                    "window of one job is held, not a whole run to compare. Compare two runs "
                                    "that fit the memory budget (llmprism --memory SIZE), or parts of them "
                                    "(--from, --to)."));
        return nullptr;
    }
    // A capture folder is picked in the file dialog by its topology.json: the run is the folder (named by it,
    // not "topology.json", in the window's title and the comparison).
    const QFileInfo picked(path);
    const QString run = picked.fileName() == "topology.json" ? picked.absolutePath() : path;
    auto* window = new CompareWindow(this);
    window->setAttribute(Qt::WA_DeleteOnClose);
    window->loadBaseline(run, m_session, m_strictAction && m_strictAction->isChecked());
    window->show();
    return window;
}

void MainWindow::createActions() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* openFolder =
        file->addAction(style()->standardIcon(QStyle::SP_DirOpenIcon), tr("&Open Capture Folder…"), this, [this] {
            QString dir = QFileDialog::getExistingDirectory(this, tr("Open capture folder"),
                                                            QSettings().value("paths/lastFolder").toString());
            if (!dir.isEmpty()) openPath(dir);
        });
    openFolder->setShortcut(QKeySequence::Open);
    QAction* openFile = file->addAction(tr("Open &File…"), this, [this] {
        // Several files may be picked: flow data of any kinds (pcap, IPFIX, CSV) and a topology.json, merged.
        const QStringList paths = QFileDialog::getOpenFileNames(
            this, tr("Open capture files or a session"), QSettings().value("paths/lastFolder").toString(),
            tr("Captures: flow data of any kind, topology.json, sessions (*)"));
        if (!paths.isEmpty()) openPaths(paths);
    });
    openFile->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    file->addAction(tr("Open &Database…"), this, [this] {
        DatabaseDialog dialog(this);
        if (dialog.exec() == QDialog::Accepted) openPaths(dialog.sources());
    });
    QAction* compare = file->addAction(tr("Compare &With…"), this, [this] {
        // The baseline run: a session, a flow file, or the topology.json of a capture folder (its flow data).
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Compare with another run (a session, a flow file, or a capture's topology.json)"),
            QSettings().value("paths/lastFolder").toString(), tr("Runs: sessions, flow data, topology.json (*)"));
        if (!path.isEmpty()) compareWith(path);
    });
    compare->setToolTip(tr("Compare the shown run with another one (e.g. yesterday's): what changed"));
    m_sessionActions << compare;
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    m_reloadAction = file->addAction(style()->standardIcon(QStyle::SP_BrowserReload), tr("&Reload"), this, [this] {
        if (m_session) m_session->sources.size() > 1 ? openPaths(m_session->sources) : openPath(m_session->source);
    });
    m_reloadAction->setShortcut(QKeySequence::Refresh);
    m_reloadAction->setEnabled(false);
    file->addSeparator();
    QAction* saveSessionAction = file->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton),
                                                 tr("&Save Session"), this, [this] { saveSessionInteractive(false); });
    saveSessionAction->setShortcut(QKeySequence::Save);
    saveSessionAction->setToolTip(tr("Save the capture, its analysis and your notes as a .prism session that "
                                     "reopens instantly (only the notes when the session is already a file)"));
    QAction* saveSessionAsAction =
        file->addAction(tr("Save Session &As…"), this, [this] { saveSessionInteractive(true); });
    saveSessionAsAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    m_sessionActions << saveSessionAction << saveSessionAsAction;
    file->addSeparator();
    QAction* exportCurrent = file->addAction(style()->standardIcon(QStyle::SP_FileIcon), tr("&Export View…"),
                                             this, [this] { exportViewDialog(m_currentView); });
    exportCurrent->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    exportCurrent->setToolTip(tr("Save the view you last clicked into as PNG or SVG, with a title line"));
    QAction* copyCurrent = file->addAction(tr("&Copy View to Clipboard"), this, [this] { copyView(m_currentView); });
    copyCurrent->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    QMenu* exportMenu = file->addMenu(tr("Export &As"));
    const QList<QPair<QString, View>> views{{tr("Timeline…"), View::Timeline},
                                            {tr("Step Chart…"), View::Steps},
                                            {tr("Time per Rank…"), View::Ranks},
                                            {tr("Topology…"), View::Topology}};
    for (const auto& [name, v] : views)
        m_sessionActions << exportMenu->addAction(name, this, [this, v = v] { exportViewDialog(v); });
    m_sessionActions << exportCurrent << copyCurrent;
    file->addSeparator();
    m_strictAction = file->addAction(tr("&Strict Input Checking"));
    m_strictAction->setCheckable(true);
    m_strictAction->setToolTip(tr("Stop at the first bad row instead of skipping bad rows"));
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* addNote = edit->addAction(tr("Add &Note…"), this, [this] { m_notes->addForSelectionInteractive(); });
    addNote->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_M));
    addNote->setToolTip(tr("Note on the selected step, rank or finding, or on the visible time range"));
    addNote->setProperty("inContextMenu", true);
    m_timeline->addAction(addNote); // also in the timeline's context menu
    m_sessionActions << addNote;

    QMenu* view = menuBar()->addMenu(tr("&View"));
    // Timeline actions: their shortcuts act while the timeline has focus (single keys must not fire while
    // typing elsewhere); the menu lists them so they can be found.
    auto timelineAction = [&](const QString& text, const QKeySequence& key, auto fn) {
        QAction* a = view->addAction(text, this, fn);
        a->setShortcut(key);
        a->setShortcutContext(Qt::WidgetShortcut);
        m_timeline->addAction(a);
        m_sessionActions << a;
        return a;
    };
    timelineAction(tr("&Fit All"), QKeySequence(Qt::Key_F), [this] { m_timeline->fitAll(); });
    timelineAction(tr("Fit All &Rows"), QKeySequence(Qt::SHIFT | Qt::Key_F), [this] {
        m_timeline->fitRows();
        m_timeline->fitAll();
    });
    timelineAction(tr("&Undo Zoom"), QKeySequence(Qt::Key_Backspace), [this] { m_timeline->undoZoom(); });
    QAction* find = view->addAction(tr("&Find Rank, Host or Step…"), this, [this] {
        m_timeline->setFocus();
        m_timeline->openSearch();
    });
    find->setShortcut(QKeySequence::Find);
    m_sessionActions << find;
    view->addSeparator();
    m_sessionActions << view->addAction(tr("&Collapse All Groups"), this,
                                        [this] { m_timeline->setAllCollapsed(true); });
    m_sessionActions << view->addAction(tr("E&xpand All Groups"), this, [this] { m_timeline->setAllCollapsed(false); });
    QMenu* rows = view->addMenu(tr("Row &Height"));
    auto* rowGroup = new QActionGroup(this);
    const int savedRow = QSettings().value("view/rowHeight", 18).toInt();
    for (auto [name, px] : {std::pair{tr("Compact"), 6}, std::pair{tr("Normal"), 18}, std::pair{tr("Large"), 26}}) {
        QAction* a = rows->addAction(name, this, [this, px = px] {
            m_timeline->setRowHeight(px);
            QSettings().setValue("view/rowHeight", px);
        });
        a->setCheckable(true);
        a->setChecked(px == savedRow);
        rowGroup->addAction(a);
    }
    m_timeline->setRowHeight(savedRow);
    m_absoluteAction = view->addAction(tr("&Absolute Time"), this, [this](bool on) {
        m_timeline->setAbsoluteTime(on);
        QSettings().setValue("view/absoluteTime", on);
    });
    m_absoluteAction->setCheckable(true);
    m_absoluteAction->setChecked(QSettings().value("view/absoluteTime", false).toBool());
    m_timeline->setAbsoluteTime(m_absoluteAction->isChecked());
    view->addSeparator();
    for (auto [name, v, key] : {std::tuple{tr("&Step Chart"), View::Steps, Qt::Key_1},
                                std::tuple{tr("Time per &Rank"), View::Ranks, Qt::Key_2},
                                std::tuple{tr("&Topology"), View::Topology, Qt::Key_3}}) {
        QAction* a = view->addAction(name, this, [this, v = v] { showView(v); });
        a->setShortcut(QKeySequence(Qt::ALT | key));
    }
    view->addSeparator();
    QMenu* theme = view->addMenu(tr("T&heme"));
    auto* group = new QActionGroup(this);
    const QList<QPair<QString, Theme>> themes{
        {tr("&System"), Theme::System}, {tr("&Light"), Theme::Light}, {tr("&Dark"), Theme::Dark}};
    const int current = QSettings().value("view/theme", int(Theme::System)).toInt();
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
    help->addAction(tr("&Timeline Keys and Mouse"), this, &MainWindow::showTimelineHelp);
    help->addAction(tr("&About LLMPrism"), this, [this] {
        QMessageBox::about(this, tr("About LLMPrism"),
                           tr("<h3>LLMPrism %1</h3><p>Black-box performance diagnosis of LLM training jobs "
                              "from network flow captures: jobs, parallelism, steps and stragglers.</p>")
                               .arg(QStringLiteral(LLMPRISM_VERSION)));
    });

    QToolBar* bar = addToolBar(tr("Main"));
    bar->setObjectName("mainToolBar");
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->addAction(openFolder);
    bar->addAction(m_reloadAction);
    bar->addAction(saveSessionAction);
    bar->addSeparator();
    bar->addAction(exportCurrent);
    QAction* copyTool = bar->addAction(style()->standardIcon(QStyle::SP_FileDialogDetailedView), tr("Copy"), this,
                                       [this] { copyView(m_currentView); });
    copyTool->setToolTip(tr("Copy the view you last clicked into to the clipboard (Ctrl+Shift+C)"));
    m_sessionActions << copyTool;
    for (QAction* a : m_sessionActions) a->setEnabled(false);
}

void MainWindow::showTimelineHelp() {
    QMessageBox::information(
        this, tr("Timeline keys and mouse"),
        tr("<table cellpadding='2'>"
           "<tr><td><b>Wheel</b></td><td>zoom around the cursor (Ctrl: finer, Shift: faster)</td></tr>"
           "<tr><td><b>Drag</b></td><td>pan (left/right in time, up/down through the ranks)</td></tr>"
           "<tr><td><b>Right-drag, Shift+drag, drag on the time axis</b></td><td>zoom to the range</td></tr>"
           "<tr><td><b>W / S</b></td><td>zoom in / out</td></tr>"
           "<tr><td><b>A / D</b></td><td>pan left / right</td></tr>"
           "<tr><td><b>F</b>, <b>Shift+F</b></td><td>fit all; fit all rows too</td></tr>"
           "<tr><td><b>Backspace</b></td><td>undo zoom</td></tr>"
           "<tr><td><b>Ctrl+F</b></td><td>find a rank (host:gpu), host, address or step</td></tr>"
           "<tr><td><b>Left / Right</b></td><td>previous / next step when a step is selected</td></tr>"
           "<tr><td><b>Click</b></td><td>select (segment, rank label, step in the step lane, group header "
           "collapses)</td></tr>"
           "<tr><td><b>Double-click</b></td><td>zoom to the step</td></tr>"
           "<tr><td><b>Alt+wheel</b></td><td>row height</td></tr>"
           "<tr><td><b>Esc</b></td><td>clear the selection</td></tr></table>"));
}

// ---- theme and recent files -----------------------------------------------------------------------------

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
        p.setColor(QPalette::AlternateBase, QColor(0x25, 0x27, 0x2b));
        p.setColor(QPalette::ToolTipBase, base);
        p.setColor(QPalette::ToolTipText, text);
        p.setColor(QPalette::Text, text);
        p.setColor(QPalette::Button, window);
        p.setColor(QPalette::ButtonText, text);
        p.setColor(QPalette::Mid, QColor(0x45, 0x48, 0x4e));
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

QStringList MainWindow::recentFiles() const { return QSettings().value("paths/recent").toStringList(); }

void MainWindow::addRecent(const QString& path) {
    if (path.startsWith("clickhouse://")) return; // Open Database… remembers the table and its topology
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
    if (m_welcomeRecent) {
        m_welcomeRecent->clear();
        m_welcomeRecent->addItems(recent);
        m_welcomeRecent->setVisible(!recent.isEmpty());
    }
}

} // namespace prism::ui
