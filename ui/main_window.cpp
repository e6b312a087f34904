#include "main_window.h"

#include "capture_loader.h"
#include "details_panel.h"
#include "export.h"
#include "list_models.h"
#include "model/units.h"
#include "notes_panel.h"
#include "session_file.h"
#include "rank_chart.h"
#include "step_chart.h"
#include "summary_view.h"
#include "timeline_view.h"
#include "topology_view.h"
#include "view_state.h"
#include "view_style.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTreeView>
#include <QVBoxLayout>

// The resources live in the static ui library; Q_INIT_RESOURCE must be called outside any namespace.
static void initResources() { Q_INIT_RESOURCE(llmprism); }

namespace prism::ui {

namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }
} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    initResources();
    setWindowTitle(tr("LLMPrism"));
    setWindowIcon(QIcon(":/icons/llmprism.svg"));
    setAcceptDrops(true);
    setObjectName("MainWindow");

    m_loader = new CaptureLoader(this);
    m_state = new ViewState(this);
    m_stack = new QStackedWidget(this);
    m_stack->addWidget(createWelcome());
    createWorkspace();
    setCentralWidget(m_stack);
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
    updateBusy();
    connect(m_cancel, &QPushButton::clicked, m_loader, &CaptureLoader::cancel);

    connect(m_loader, &CaptureLoader::progress, this, [this](int id, double f, const QString& stage) {
        if (id != m_loadId) return;
        m_progress->setValue(int(f * 1000));
        m_statusLabel->setText(tr("%1 %2…").arg(stage, QFileInfo(m_loadingPath).fileName()));
    });
    connect(m_loader, &CaptureLoader::finished, this, [this](int id, SessionPtr s) {
        if (id != m_loadId) return;
        const bool window = m_loadKind == Load::Window && m_session && s && s->staged == m_session->staged;
        m_loadKind = Load::None;
        updateBusy();
        if (!window) addRecent(m_loadingPath);
        setSession(s, window);
    });
    connect(m_loader, &CaptureLoader::failed, this, [this](int id, const QString& path, const QString& msg) {
        if (id != m_loadId) return;
        const Load kind = m_loadKind;
        m_loadKind = Load::None;
        updateBusy();
        if (kind == Load::Window && m_session && m_session->staged) {
            const auto& jobs = m_session->staged->report.jobs;
            const QString job = m_loadingJob >= 0 && std::size_t(m_loadingJob) < jobs.size()
                                    ? q(jobs[std::size_t(m_loadingJob)].id)
                                    : QString();
            backToWindowJob();
            showError(path, msg, tr("Could not load the window"),
                      tr("LLMPrism could not load steps of %1 from\n%2").arg(job, path),
                      tr("The window shown before is kept."));
            return;
        }
        showError(path, msg);
        updateWindowBar();
    });
    connect(m_loader, &CaptureLoader::cancelled, this, [this](int id) {
        if (id != m_loadId) return;
        const Load kind = m_loadKind;
        m_loadKind = Load::None;
        updateBusy();
        if (kind == Load::Window) backToWindowJob();
        m_statusLabel->setText(tr("Loading cancelled"));
        updateWindowBar();
    });
    connect(m_state, &ViewState::jobChanged, this, [this] {
        updateNoteMarks();
        fillFindings();
        onSelectionChanged();
    });
    connect(m_state, &ViewState::selectionChanged, this, &MainWindow::onSelectionChanged);
    // Export and copy act on the view the user last clicked into.
    connect(qApp, &QApplication::focusChanged, this, [this](QWidget*, QWidget* now) {
        for (QWidget* w = now; w; w = w->parentWidget()) {
            if (w == m_timeline)
                m_currentView = View::Timeline;
            else if (w == m_stepChart)
                m_currentView = View::Steps;
            else if (w == m_rankChart)
                m_currentView = View::Ranks;
            else if (w == m_topology)
                m_currentView = View::Topology;
            else
                continue;
            break;
        }
    });

    resize(1400, 900);
    restoreLayout();
    setTheme(Theme(QSettings().value("view/theme", int(Theme::System)).toInt()));
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::createWelcome() {
    auto* page = new QWidget(this);
    page->setObjectName("welcomePage");
    auto* layout = new QVBoxLayout(page);
    layout->addStretch(2);
    auto* title = new QLabel(tr("<h2>LLMPrism</h2><p>Open a capture folder (flows.csv + topology.json) or a .prism "
                                "session: File ▸ Open, drop it on this window, or pick a recent one.</p>"),
                             page);
    title->setAlignment(Qt::AlignCenter);
    title->setWordWrap(true);
    layout->addWidget(title);
    auto* open = new QPushButton(tr("Open Capture Folder…"), page);
    open->setObjectName("welcomeOpen");
    auto* row = new QHBoxLayout;
    row->addStretch();
    row->addWidget(open);
    row->addStretch();
    layout->addLayout(row);
    m_welcomeRecent = new QListWidget(page);
    m_welcomeRecent->setObjectName("welcomeRecent");
    m_welcomeRecent->setMaximumWidth(640);
    m_welcomeRecent->setMaximumHeight(200);
    auto* row2 = new QHBoxLayout;
    row2->addStretch();
    row2->addWidget(m_welcomeRecent, 3);
    row2->addStretch();
    layout->addLayout(row2);
    layout->addStretch(3);
    connect(open, &QPushButton::clicked, this, [this] {
        QString dir = QFileDialog::getExistingDirectory(this, tr("Open capture folder"),
                                                        QSettings().value("paths/lastFolder").toString());
        if (!dir.isEmpty()) openPath(dir);
    });
    connect(m_welcomeRecent, &QListWidget::itemActivated, this,
            [this](QListWidgetItem* item) { openPath(item->text()); });
    return page;
}

void MainWindow::createWorkspace() {
    auto* work = new QWidget(this);
    work->setObjectName("workspace");
    auto* layout = new QVBoxLayout(work);
    layout->setContentsMargins(0, 0, 0, 0);

    m_hsplit = new QSplitter(Qt::Horizontal, work);
    m_hsplit->setObjectName("mainSplitter");
    layout->addWidget(m_hsplit);

    // Left: jobs over findings.
    m_leftSplit = new QSplitter(Qt::Vertical, m_hsplit);
    m_leftSplit->setObjectName("leftSplitter");
    auto titled = [](const QString& title, QWidget* w, QWidget* parent) {
        auto* box = new QWidget(parent);
        auto* l = new QVBoxLayout(box);
        l->setContentsMargins(4, 4, 0, 0);
        l->setSpacing(2);
        auto* label = new QLabel("<b>" + title + "</b>", box);
        l->addWidget(label);
        l->addWidget(w);
        return box;
    };
    m_jobModel = new JobTableModel(this);
    m_jobList = createList(m_jobModel, "jobList");
    m_jobList->setAlternatingRowColors(true);
    m_jobList->header()->setStretchLastSection(false);
    m_leftSplit->addWidget(titled(tr("Jobs"), m_jobList, m_leftSplit));
    m_findingModel = new FindingTableModel(this);
    m_findings = createList(m_findingModel, "findingsList");
    m_findings->setToolTip(tr("Click a finding to zoom the timeline to its place and steps"));
    m_leftSplit->addWidget(titled(tr("Findings"), m_findings, m_leftSplit));
    m_leftSplit->setStretchFactor(0, 1);
    m_leftSplit->setStretchFactor(1, 2);
    m_hsplit->addWidget(m_leftSplit);

    // Centre: timeline over tabs.
    m_vsplit = new QSplitter(Qt::Vertical, m_hsplit);
    m_vsplit->setObjectName("centreSplitter");
    // Above the timeline, a banner when the topology does not fit the capture (none, or another cluster's: every
    // job comes out split per rail) or the records are too coarse in time for the steps (report notes "time
    // resolution: ..."): what was found and what fixes it.
    auto* centreTop = new QWidget(m_vsplit);
    auto* centreLayout = new QVBoxLayout(centreTop);
    centreLayout->setContentsMargins(0, 0, 0, 0);
    centreLayout->setSpacing(0);
    m_resolutionBanner = new QLabel(centreTop);
    m_resolutionBanner->setObjectName("resolutionBanner");
    m_resolutionBanner->setWordWrap(true);
    m_resolutionBanner->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_resolutionBanner->setStyleSheet("QLabel { background: #fff3cd; color: #664d03; border-bottom: 1px solid #e0c36a; "
                                      "padding: 6px; }");
    m_resolutionBanner->hide();
    centreLayout->addWidget(m_resolutionBanner);
    // A capture larger than memory is shown one job's window at a time: which steps, and buttons for the
    // windows before and after (docs/GUI.md "Captures larger than memory").
    m_windowBar = new QWidget(centreTop);
    m_windowBar->setObjectName("windowBar");
    m_windowBar->setStyleSheet("#windowBar { background: #e7f1fb; border-bottom: 1px solid #9fc3e7; } "
                               "#windowBar QLabel { color: #12385e; }");
    auto* windowLayout = new QHBoxLayout(m_windowBar);
    windowLayout->setContentsMargins(6, 3, 6, 3);
    m_windowLabel = new QLabel(m_windowBar);
    m_windowLabel->setObjectName("windowLabel");
    m_windowLabel->setWordWrap(true);
    m_windowLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    windowLayout->addWidget(m_windowLabel, 1);
    m_windowEarlier = new QPushButton(tr("◀ Earlier steps"), m_windowBar);
    m_windowEarlier->setObjectName("windowEarlier");
    m_windowLater = new QPushButton(tr("Later steps ▶"), m_windowBar);
    m_windowLater->setObjectName("windowLater");
    windowLayout->addWidget(m_windowEarlier);
    windowLayout->addWidget(m_windowLater);
    connect(m_windowEarlier, &QPushButton::clicked, this, [this] {
        if (!m_session || !m_session->staged) return;
        const int shown = m_session->windowLast - m_session->windowFirst + 1;
        loadWindow(m_session->windowJob, std::max(0, m_session->windowFirst - shown));
    });
    connect(m_windowLater, &QPushButton::clicked, this, [this] {
        if (m_session && m_session->staged) loadWindow(m_session->windowJob, m_session->windowLast + 1);
    });
    m_windowBar->hide();
    centreLayout->addWidget(m_windowBar);
    m_timeline = new TimelineView(m_state, centreTop);
    centreLayout->addWidget(m_timeline, 1);
    m_vsplit->addWidget(centreTop);
    m_notes = new NotesPanel(m_state);
    m_leftSplit->addWidget(titled(tr("Notes"), m_notes, m_leftSplit));
    m_leftSplit->setStretchFactor(2, 1);
    connect(m_notes, &NotesPanel::notesChanged, this, [this] {
        updateTitle();
        updateNoteMarks();
    });
    connect(m_timeline, &TimelineView::noteMarkClicked, m_notes, [this](qint64 id) { m_notes->jumpTo(id); });
    m_tabs = new QTabWidget(m_vsplit);
    m_tabs->setObjectName("bottomTabs");
    m_tabs->setDocumentMode(true);
    m_stepChart = new StepChart(m_state, m_tabs);
    m_stepChart->setFocusPolicy(Qt::ClickFocus);
    m_tabs->addTab(m_stepChart, tr("Step time"));
    m_rankChart = new RankChart(m_state, m_tabs);
    m_rankChart->setFocusPolicy(Qt::ClickFocus);
    m_tabs->addTab(m_rankChart, tr("Time per rank"));
    auto* topoPage = new QWidget(m_tabs);
    auto* topoLayout = new QVBoxLayout(topoPage);
    topoLayout->setContentsMargins(0, 2, 0, 0);
    topoLayout->setSpacing(2);
    auto* topoBar = new QHBoxLayout;
    topoBar->setContentsMargins(6, 0, 6, 0);
    topoBar->addWidget(new QLabel(tr("Colour GPUs by"), topoPage));
    m_topologyColor = new QComboBox(topoPage);
    m_topologyColor->setObjectName("topologyColorBy");
    m_topologyColor->addItems({tr("job"), tr("DP group (selected job)"), tr("PP stage (selected job)")});
    topoBar->addWidget(m_topologyColor);
    topoBar->addStretch();
    topoLayout->addLayout(topoBar);
    m_topology = new TopologyView(m_state, topoPage);
    m_topology->setFocusPolicy(Qt::ClickFocus);
    topoLayout->addWidget(m_topology, 1);
    connect(m_topologyColor, &QComboBox::currentIndexChanged, this, [this](int i) {
        m_topology->setColorBy(TopologyView::ColorBy(i));
        QSettings().setValue("view/topologyColor", i);
    });
    m_tabs->addTab(topoPage, tr("Topology"));
    m_summary = new SummaryView(m_tabs);
    m_tabs->addTab(m_summary, tr("Capture"));
    m_problems = new QListWidget(m_tabs);
    m_problems->setObjectName("problemsList");
    m_problems->setWordWrap(true);
    m_tabs->addTab(m_problems, tr("Input problems"));
    m_vsplit->addWidget(m_tabs);
    m_vsplit->setStretchFactor(0, 3);
    m_vsplit->setStretchFactor(1, 2);
    m_hsplit->addWidget(m_vsplit);

    // Right: details.
    m_details = new DetailsPanel(m_state, m_hsplit);
    m_hsplit->addWidget(titled(tr("Details"), m_details, m_hsplit));
    m_hsplit->setStretchFactor(0, 0);
    m_hsplit->setStretchFactor(1, 1);
    m_hsplit->setStretchFactor(2, 0);
    m_hsplit->setSizes({390, 900, 290});
    m_vsplit->setSizes({560, 300});

    connect(m_jobList->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        if (m_filling) return;
        const QModelIndexList rows = m_jobList->selectionModel()->selectedRows();
        if (rows.isEmpty()) return;
        const int job = rows.first().data(JobTableModel::JobRole).toInt();
        m_state->setJob(job);
        // A staged capture holds one job's window: choosing another job loads its first steps; coming back to the
        // job shown while that load runs drops the load (its result would replace what was chosen last).
        if (!m_session || !m_session->staged) return;
        if (job != m_session->windowJob) loadWindow(job, 0);
        else if (m_loadKind == Load::Window) {
            m_loader->cancel();
            m_loadId = -1;
            m_loadKind = Load::None;
            updateBusy();
            updateWindowBar();
            m_statusLabel->setText(
                tr("Back to %1's window").arg(q(m_session->staged->report.jobs[std::size_t(job)].id)));
        }
    });
    auto showFinding = [this](const QModelIndex& index) {
        const QVariant f = index.data(FindingTableModel::FindingRole); // none on the "no findings" row
        if (f.isValid()) m_state->select(Selection::ofFinding(f.toInt()), true);
    };
    connect(m_findings, &QTreeView::clicked, this, showFinding);
    connect(m_findings, &QTreeView::activated, this, showFinding);
    m_stack->addWidget(work);
}

// A list of the model's rows as QTreeWidget showed them, sorted by a proxy on the model's SortRole.
QTreeView* MainWindow::createList(QAbstractItemModel* model, const QString& name) {
    auto* proxy = new QSortFilterProxyModel(this);
    proxy->setSourceModel(model);
    proxy->setSortRole(JobTableModel::SortRole);
    auto* view = new QTreeView;
    view->setObjectName(name);
    view->setModel(proxy);
    view->setRootIsDecorated(false);
    view->setUniformRowHeights(true);
    view->setSortingEnabled(true);
    return view;
}

// ---- loading --------------------------------------------------------------------------------------------

void MainWindow::openPath(const QString& path) { openPaths(QStringList{path}); }

void MainWindow::openPaths(const QStringList& paths) {
    if (paths.isEmpty() || !maybeKeepNotes()) return;
    const QString& path = paths.front();
    m_loadingPath = path;
    if (!path.startsWith("clickhouse://")) // a table on a server has no folder
        QSettings().setValue("paths/lastFolder", QFileInfo(path).isDir() ? path : QFileInfo(path).absolutePath());
    m_loadKind = Load::Open;
    m_progress->setValue(0);
    updateBusy();
    m_statusLabel->setText(paths.size() == 1 ? tr("Opening %1…").arg(path)
                                             : tr("Opening %1 and %n more…", "", int(paths.size()) - 1).arg(path));
    m_loadId = m_loader->load(paths, m_strictAction->isChecked());
}

void MainWindow::setSession(const SessionPtr& session, bool keepNotes) {
    m_session = session;
    m_sessionPath = session ? session->sessionPath : QString();
    m_lastError.clear();
    m_summary->setSession(session);
    m_reloadAction->setEnabled(bool(session));
    for (QAction* a : m_sessionActions) a->setEnabled(bool(session));
    m_stack->setCurrentIndex(session ? 1 : 0);
    m_state->setSession(session);
    if (keepNotes) m_notes->keepForWindow(session);
    else m_notes->setSession(session);
    updateNoteMarks();
    fillJobs();
    fillProblems();
    updateTitle();
    QStringList notices; // a topology that does not fit, records too coarse in time
    if (session && session->report().capture)
        if (const std::string misfit = topologyMisfit(*session->report().capture); !misfit.empty()) notices << q(misfit);
    if (session)
        for (const std::string& n : session->report().notes)
            if (n.find("time resolution:") != std::string::npos) notices << q(n);
    m_resolutionBanner->setText(notices.join("\n"));
    m_resolutionBanner->setVisible(!notices.isEmpty());
    updateWindowBar();
    if (!session) return;
    const auto& s = *session->report().capture;
    QString status = tr("%1, %2").arg(q(formatCounted(s.records, "record")),
                                      q(formatCounted(session->report().jobs.size(), "job")));
    if (s.skippedRows || s.warnings)
        status += tr(" — %1 skipped, %2 (see Input problems)")
                      .arg(q(formatCounted(s.skippedRows, "row")), q(formatCounted(s.warnings, "warning")));
    m_statusLabel->setText(status);
}

bool MainWindow::loadWindow(int job, int firstStep) {
    if (!m_session || !m_session->staged) return false;
    const auto& jobs = m_session->staged->report.jobs;
    if (job < 0 || std::size_t(job) >= jobs.size()) return false;
    if (m_loadKind == Load::Open) { // the capture opening replaces this one and its windows
        backToWindowJob();
        m_statusLabel->setText(tr("Opening %1… (it replaces this capture; no window is loaded meanwhile)")
                                   .arg(QFileInfo(m_loadingPath).fileName()));
        return false;
    }
    m_loadingPath = m_session->source;
    m_loadKind = Load::Window;
    m_loadingJob = job;
    m_progress->setValue(0);
    updateBusy();
    m_statusLabel->setText(tr("Loading a window of %1…").arg(q(jobs[std::size_t(job)].id)));
    m_windowEarlier->setEnabled(false);
    m_windowLater->setEnabled(false);
    m_loadId = m_loader->loadWindow(m_session, job, firstStep);
    return m_loadId >= 0;
}

void MainWindow::updateWindowBar() {
    const bool staged = m_session && m_session->staged;
    m_windowBar->setVisible(staged);
    if (!staged) return;
    const StagedCapture& st = *m_session->staged;
    const int job = m_session->windowJob;
    if (job < 0) {
        m_windowLabel->setText(tr("<b>Analysed in stages</b> (larger than the memory budget of %1): no jobs found.")
                                   .arg(q(formatBytes(st.budget))));
        m_windowEarlier->hide();
        m_windowLater->hide();
        return;
    }
    const JobInfo& info = st.report.jobs[std::size_t(job)];
    const int steps = int(info.steps.size());
    // The window's steps as shown: those asked for and the whole ones in its margins.
    int shownFirst = m_session->windowFirst, shownLast = m_session->windowLast;
    for (const StepInfo& s : m_session->report().jobs[std::size_t(job)].steps) {
        shownFirst = std::min(shownFirst, s.index);
        shownLast = std::max(shownLast, s.index);
    }
    const QString where = steps ? tr("steps %1–%2 of %3").arg(shownFirst).arg(shownLast).arg(steps) : tr("all of it");
    m_windowLabel->setText(tr("<b>Larger than memory: analysed in stages.</b> The timeline holds one window of %1: "
                              "%2 (%3 records; memory budget %4). The job list covers every step of every job; "
                              "choose another job to load its first steps.")
                               .arg(q(info.id), where, q(formatCount(m_session->capture.flows.size())),
                                    q(formatBytes(st.budget))));
    m_windowEarlier->show();
    m_windowLater->show();
    m_windowEarlier->setEnabled(steps && m_session->windowFirst > 0);
    m_windowLater->setEnabled(steps && m_session->windowLast + 1 < steps);
}

bool MainWindow::selectJob(const QString& id) {
    if (!m_session) return false;
    const auto& jobs = m_session->report().jobs;
    for (int j = 0; j < int(jobs.size()); ++j) {
        if (q(jobs[std::size_t(j)].id) != id) continue;
        m_state->setJob(j);
        return true;
    }
    return false;
}

void MainWindow::fillJobs() {
    m_filling = true;
    m_jobList->setSortingEnabled(false); // columns sized without room for a sort indicator in each
    m_jobModel->setSession(m_session);
    if (m_session)
        for (int c = 0; c < JobTableModel::ColumnCount; ++c) m_jobList->resizeColumnToContents(c);
    m_jobList->setSortingEnabled(true);
    m_jobList->sortByColumn(JobTableModel::Job, Qt::AscendingOrder);
    m_filling = false;
    onSelectionChanged(); // the shown job's row
}

void MainWindow::fillFindings() {
    m_filling = true;
    m_findings->setSortingEnabled(false);
    m_findingModel->setJob(m_state->jobData());
    // "No findings": one row across the columns (a spanned row does not widen the first column).
    if (m_findingModel->hasPlaceholder()) m_findings->setFirstColumnSpanned(0, {}, true);
    if (m_state->jobData())
        for (int c = 0; c < FindingTableModel::ColumnCount; ++c) m_findings->resizeColumnToContents(c);
    m_findings->setSortingEnabled(true);
    m_findings->sortByColumn(FindingTableModel::Steps, Qt::AscendingOrder);
    m_filling = false;
}

void MainWindow::fillProblems() {
    m_problems->clear();
    int count = 0;
    if (m_session) {
        const LoadDiagnostics& d = m_session->capture.diagnostics;
        for (const InputIssue& e : d.errors) {
            m_problems->addItem(new QListWidgetItem(style()->standardIcon(QStyle::SP_MessageBoxCritical),
                                                    tr("Skipped row — %1").arg(q(e.toString()))));
        }
        if (d.skippedRows > d.errors.size())
            m_problems->addItem(tr("… and %1 more skipped rows").arg(d.skippedRows - d.errors.size()));
        for (const InputIssue& w : d.warnings)
            m_problems->addItem(
                new QListWidgetItem(style()->standardIcon(QStyle::SP_MessageBoxWarning), q(w.toString())));
        if (d.warningCount > d.warnings.size())
            m_problems->addItem(tr("… and %1 more warnings").arg(d.warningCount - d.warnings.size()));
        count = int(d.skippedRows + d.warningCount);
    }
    const int tab = m_tabs->indexOf(m_problems);
    m_tabs->setTabText(tab, count ? tr("Input problems (%1)").arg(count) : tr("Input problems"));
    m_tabs->setTabIcon(tab, count ? style()->standardIcon(QStyle::SP_MessageBoxWarning) : QIcon());
}

void MainWindow::onSelectionChanged() {
    // Keep the job list and the findings list in step with the shared selection.
    m_filling = true;
    auto selectRow = [](QTreeView* view, int role, int value) {
        const QAbstractItemModel* m = view->model();
        const QModelIndexList hit = value < 0 || m->rowCount() == 0
                                        ? QModelIndexList()
                                        : m->match(m->index(0, 0), role, value, 1, Qt::MatchExactly);
        const auto rows = QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows;
        hit.isEmpty() ? view->selectionModel()->clearSelection() : view->selectionModel()->select(hit.first(), rows);
    };
    selectRow(m_jobList, JobTableModel::JobRole, m_state->job());
    const Selection& s = m_state->selection();
    selectRow(m_findings, FindingTableModel::FindingRole, s.kind == Selection::Kind::Finding ? s.finding : -1);
    m_filling = false;
}

// ---- views and export -----------------------------------------------------------------------------------

void MainWindow::showView(View view) {
    switch (view) {
    case View::Timeline: m_timeline->setFocus(); break;
    case View::Steps: m_tabs->setCurrentWidget(m_stepChart); break;
    case View::Ranks: m_tabs->setCurrentWidget(m_rankChart); break;
    case View::Topology: m_tabs->setCurrentIndex(m_tabs->indexOf(m_topology->parentWidget())); break;
    }
    m_currentView = view;
}

ExportableView* MainWindow::exportable(View view) const {
    switch (view) {
    case View::Timeline: return m_timeline;
    case View::Steps: return m_stepChart;
    case View::Ranks: return m_rankChart;
    case View::Topology: return m_topology;
    }
    return m_timeline;
}

void MainWindow::exportViewDialog(View view) {
    if (!m_session) return;
    if (view != View::Timeline) showView(view);
    QSettings settings;
    static const char* names[] = {"timeline", "steps", "ranks", "topology"};
    QString base = QFileInfo(m_session->source).fileName();
    if (const JobDataPtr& d = m_state->jobData()) base += "-" + q(d->info().id);
    base += QString("-%1.png").arg(names[int(view)]);
    const QString dir = settings.value("paths/lastExport", QFileInfo(m_session->source).absolutePath()).toString();
    QString selected;
    QString path = QFileDialog::getSaveFileName(this, tr("Export view"), dir + "/" + base,
                                                tr("PNG image (*.png);;SVG image (*.svg)"), &selected);
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().isEmpty()) path += selected.contains("svg") ? ".svg" : ".png";
    settings.setValue("paths/lastExport", QFileInfo(path).absolutePath());
    QString error;
    if (!exportView(*exportable(view), path, &error)) {
        QMessageBox::warning(this, tr("Export failed"), error);
        return;
    }
    statusBar()->showMessage(tr("Exported %1").arg(path), 6000);
}

void MainWindow::copyView(View view) {
    if (!m_session) return;
    copyViewToClipboard(*exportable(view));
    statusBar()->showMessage(tr("Copied the %1 to the clipboard")
                                 .arg(view == View::Timeline    ? tr("timeline")
                                          : view == View::Steps ? tr("step chart")
                                          : view == View::Ranks ? tr("per-rank chart")
                                                                : tr("topology")),
                             4000);
}

// ---- errors, busy state, layout, drag and drop ----------------------------------------------------------

void MainWindow::showError(const QString& path, const QString& message, const QString& title, const QString& text,
                           const QString& after) {
    m_lastError = message;
    m_statusLabel->setText(title.isEmpty() ? tr("Could not open %1").arg(QFileInfo(path).fileName()) : title);
    auto* box =
        new QMessageBox(QMessageBox::Critical, title.isEmpty() ? tr("Could not open capture") : title,
                        text.isEmpty() ? tr("LLMPrism could not open\n%1").arg(path) : text, QMessageBox::Ok, this);
    box->setObjectName("errorDialog");
    box->setInformativeText(after.isEmpty() ? message : message + "\n\n" + after);
    if (!m_strictAction->isChecked() && message.contains(QRegularExpression(", line \\d+")))
        box->setDetailedText(tr("Bad rows are skipped unless File ▸ Strict Input Checking is on; this error "
                                "concerns the whole file."));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open(); // window-modal, never blocks the event loop
}

void MainWindow::updateBusy() {
    const bool loading = m_loadKind != Load::None;
    m_progress->setVisible(loading || m_saving);
    m_cancel->setVisible(loading);
}

void MainWindow::backToWindowJob() {
    if (!m_session || !m_session->staged || m_session->windowJob < 0) return;
    if (m_state->job() != m_session->windowJob) m_state->setJob(m_session->windowJob); // the list follows
    onSelectionChanged();
    updateWindowBar();
}

void MainWindow::saveLayout() const {
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    settings.setValue("window/mainSplitter", m_hsplit->saveState());
    settings.setValue("window/centreSplitter", m_vsplit->saveState());
    settings.setValue("window/leftSplitter", m_leftSplit->saveState());
    settings.setValue("window/bottomTab", m_tabs->currentIndex());
}

void MainWindow::restoreLayout() {
    QSettings settings;
    restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
    m_hsplit->restoreState(settings.value("window/mainSplitter").toByteArray());
    m_vsplit->restoreState(settings.value("window/centreSplitter").toByteArray());
    m_leftSplit->restoreState(settings.value("window/leftSplitter").toByteArray());
    m_tabs->setCurrentIndex(settings.value("window/bottomTab", 0).toInt());
    m_topologyColor->setCurrentIndex(settings.value("view/topologyColor", 0).toInt());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls() && !event->mimeData()->urls().isEmpty() &&
        event->mimeData()->urls().first().isLocalFile())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    QStringList paths; // every local file dropped: merged into one capture
    for (const QUrl& url : event->mimeData()->urls())
        if (url.isLocalFile()) paths << url.toLocalFile();
    if (!paths.isEmpty()) {
        openPaths(paths);
        event->acceptProposedAction();
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (!maybeKeepNotes()) {
        event->ignore();
        return;
    }
    m_loader->cancel();
    saveLayout();
    QMainWindow::closeEvent(event);
}

} // namespace prism::ui
