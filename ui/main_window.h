#pragma once
// The main window (docs/GUI.md "The window"): job list, findings and the user's notes on the left, the per-rank
// timeline in the centre with the step chart, per-rank chart, topology, capture summary and input problems
// in tabs below, the details of the selection on the right. Every view follows one ViewState. Loading runs
// in a CaptureLoader worker with progress and Cancel; window state, splitters, theme and recent files persist.
// The job and finding lists are item models (list_models.h) in sorting proxies. Menus and actions are in
// main_window_actions.cpp, session files and notes in main_window_session.cpp.
#include "analysis_session.h"

#include <QMainWindow>

class QAbstractItemModel;
class QAction;
class QLabel;
class QListWidget;
class QMenu;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSplitter;
class QStackedWidget;
class QTabWidget;
class QTreeView;
class QComboBox;

namespace prism::ui {

class CaptureLoader;
class CompareWindow;
class DetailsPanel;
class ExportableView;
class FindingTableModel;
class JobTableModel;
class NotesPanel;
class RankChart;
class StepChart;
class SummaryView;
class TimelineView;
class TopologyView;
class ViewState;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens a capture folder or file (or a .prism session) in the background; errors show in a dialog and
    // the status bar, and the current session stays.
    void openPath(const QString& path);
    // Several files (or folders) opened together as one capture: flow data of any kinds and a topology.json.
    void openPaths(const QStringList& paths);
    // File ▸ Compare With…: a window comparing `path` (the baseline, A) with the shown run (B), loaded in the
    // background; null without a shown run.
    CompareWindow* compareWith(const QString& path);
    // Shows an already loaded session (used by --screenshot and tests).
    // `keepNotes`: the session is another window of the staged capture shown, its notes stay.
    void setSession(const SessionPtr& session, bool keepNotes = false);
    SessionPtr session() const { return m_session; }
    // Selects a job by its report id ("job-1"); false when there is none.
    bool selectJob(const QString& id);
    // A capture analysed in stages (session()->staged): loads job `job`'s window of steps from `firstStep` on in
    // the background (the window bar's Earlier / Later, and choosing another job, do this). False when the
    // shown session is not staged.
    bool loadWindow(int job, int firstStep);
    QWidget* windowBar() const { return m_windowBar; }

    enum class View { Timeline, Steps, Ranks, Topology };
    // Brings a view forward (the timeline is always shown; the others are tabs below it).
    void showView(View view);
    ExportableView* exportable(View view) const;

    // Session files (.prism). saveSessionAs writes everything (capture, analysis, notes) atomically and
    // synchronously (tests, --save); the menu's Save Session As runs the same in the background with progress.
    // saveSession writes only the notes when the session came from a .prism file, else asks for a file.
    bool saveSessionAs(const QString& path, QString* error = nullptr);
    void saveSessionInteractive(bool askPath);
    // The .prism file the shown session lives in (opened from or saved to), empty for a capture.
    QString sessionPath() const { return m_sessionPath; }
    NotesPanel* notesPanel() const { return m_notes; }
    bool hasUnsavedNotes() const;
    CaptureLoader* loader() const { return m_loader; }
    ViewState* viewState() const { return m_state; }
    TimelineView* timeline() const { return m_timeline; }
    StepChart* stepChart() const { return m_stepChart; }
    RankChart* rankChart() const { return m_rankChart; }
    TopologyView* topologyView() const { return m_topology; }
    DetailsPanel* detailsPanel() const { return m_details; }
    SummaryView* summaryView() const { return m_summary; }
    // The lists show their models (list_models.h) through a sorting proxy: view->model() is the proxy.
    QTreeView* jobList() const { return m_jobList; }
    QTreeView* findingsList() const { return m_findings; }
    QListWidget* problemsList() const { return m_problems; }
    QString lastError() const { return m_lastError; }
    QStringList recentFiles() const;

    enum class Theme { System, Light, Dark };
    // Applies to the whole application (Fusion style with a light or dark palette, or the system's).
    static void setTheme(Theme theme);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void createActions(); // main_window_actions.cpp
    void showTimelineHelp();
    void createWorkspace();
    QTreeView* createList(QAbstractItemModel* model, const QString& name);
    QWidget* createWelcome();
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    // The progress bar while a load or a save runs; Cancel only for a load (a save is not cancelled).
    void updateBusy();
    // A window load that failed, was cancelled or is no longer wanted: the job list and the views go back to the
    // job whose window is shown.
    void backToWindowJob();
    // A dialog (window-modal, not blocking) and the status bar: "Could not open capture" PATH and why, unless
    // another title and text are given; `after` follows the message.
    void showError(const QString& path, const QString& message, const QString& title = {}, const QString& text = {},
                   const QString& after = {});
    void fillJobs();
    void fillFindings();
    void fillProblems();
    void onSelectionChanged();
    void exportViewDialog(View view);
    void copyView(View view);
    void saveLayout() const;
    void restoreLayout();
    bool maybeKeepNotes(); // asks to save unsaved notes; false: the user cancelled
    void updateTitle();
    QString shownPath() const; // the .prism file of the session, else its capture
    void updateNoteMarks(); // the shown job's notes as flags on the timeline
    void updateWindowBar(); // the staged capture's window: which steps of which job, Earlier / Later

    CaptureLoader* m_loader = nullptr;
    ViewState* m_state = nullptr;
    QStackedWidget* m_stack = nullptr;
    QListWidget* m_welcomeRecent = nullptr;
    QSplitter* m_hsplit = nullptr;
    QSplitter* m_vsplit = nullptr;
    QSplitter* m_leftSplit = nullptr;
    TimelineView* m_timeline = nullptr;
    StepChart* m_stepChart = nullptr;
    RankChart* m_rankChart = nullptr;
    TopologyView* m_topology = nullptr;
    QComboBox* m_topologyColor = nullptr;
    DetailsPanel* m_details = nullptr;
    NotesPanel* m_notes = nullptr;
    SummaryView* m_summary = nullptr;
    QTreeView* m_jobList = nullptr;
    QTreeView* m_findings = nullptr;
    JobTableModel* m_jobModel = nullptr;
    FindingTableModel* m_findingModel = nullptr;
    QListWidget* m_problems = nullptr;
    QTabWidget* m_tabs = nullptr;
    QMenu* m_recentMenu = nullptr;
    QAction* m_strictAction = nullptr;
    QAction* m_reloadAction = nullptr;
    QAction* m_absoluteAction = nullptr;
    QList<QAction*> m_sessionActions; // enabled only with a session
    QLabel* m_statusLabel = nullptr;
    QLabel* m_resolutionBanner = nullptr; // a topology that does not fit, "time resolution" notes: above the timeline
    QWidget* m_windowBar = nullptr;       // a staged capture's window, above the timeline
    QLabel* m_windowLabel = nullptr;
    QPushButton* m_windowEarlier = nullptr;
    QPushButton* m_windowLater = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    SessionPtr m_session;
    QString m_sessionPath;
    bool m_saving = false;
    // What the loader is doing for this window: nothing, opening a capture (m_loadingPath), or loading another window
    // of the staged capture shown (m_loadingJob's).
    enum class Load { None, Open, Window };
    Load m_loadKind = Load::None;
    int m_loadingJob = -1;
    QString m_loadingPath;
    QString m_lastError;
    int m_loadId = 0;
    View m_currentView = View::Timeline;
    bool m_filling = false;
};

} // namespace prism::ui
