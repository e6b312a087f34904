#pragma once
#include "analysis_session.h"

#include <QMainWindow>

class QAction;
class QLabel;
class QListWidget;
class QMenu;
class QProgressBar;
class QPushButton;

namespace prism::ui {

class CaptureLoader;
class SummaryView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens a capture folder or file in the background; errors show in a dialog and the status bar.
    void openPath(const QString& path);
    // Shows an already loaded session (used by --screenshot and tests).
    void setSession(const SessionPtr& session);
    SessionPtr session() const { return m_session; }
    CaptureLoader* loader() const { return m_loader; }
    SummaryView* summaryView() const { return m_summary; }
    QListWidget* problemsList() const { return m_problems; }
    QListWidget* jobList() const { return m_jobList; }
    QString lastError() const { return m_lastError; }
    QStringList recentFiles() const;

    enum class Theme { System, Light, Dark };
    void setTheme(Theme theme);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void createActions();
    void createDocks();
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    void setBusy(bool busy);
    void showError(const QString& path, const QString& message);

    CaptureLoader* m_loader = nullptr;
    SummaryView* m_summary = nullptr;
    QListWidget* m_jobList = nullptr;
    QListWidget* m_problems = nullptr;
    QMenu* m_recentMenu = nullptr;
    QAction* m_strictAction = nullptr;
    QAction* m_reloadAction = nullptr;
    QLabel* m_statusLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    SessionPtr m_session;
    QString m_loadingPath;
    QString m_lastError;
    int m_loadId = 0;
};

} // namespace prism::ui
