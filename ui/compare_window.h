#pragma once
// File ▸ Compare With… (docs/GUI.md "Comparing two runs"): run A (the baseline picked, e.g. yesterday's) and run B
// (the one shown in the main window) side by side — the two per-rank timelines one above the other, aligned by
// step and zoomed together, the step time of both, the breakdown per rank and step as a diff table, the
// differences of core/analysis/compare.h largest first, and B's topology coloured by difference — and the whole
// of it exported as one image for a ticket.
#include "analysis/compare.h"
#include "analysis_session.h"

#include <QMainWindow>
#include <functional>
#include <map>
#include <memory>

class QComboBox;
class QLabel;
class QTableWidget;

namespace prism::ui {

class CaptureLoader;
class CompareStepChart;
class CompareTopology;
class TimelineView;
class ViewState;

class CompareWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit CompareWindow(QWidget* parent = nullptr);
    ~CompareWindow() override;

    // Compares two loaded runs (tests, and once a load is done): A the baseline, B the run it is compared with.
    void setRuns(const SessionPtr& a, const SessionPtr& b);
    // Loads A in the background (a capture or a .prism session), then compares it with `b`. loaded() or
    // loadFailed(message) tells how it went; until then the window says what it is loading.
    void loadBaseline(const QString& path, const SessionPtr& b, bool strict = false);
    void swapRuns(); // B becomes the baseline

    const SessionPtr& runA() const { return m_a; }
    const SessionPtr& runB() const { return m_b; }
    const Comparison& comparison() const { return m_comparison; }
    int pairCount() const { return int(m_comparison.jobs.size()); }
    void setPair(int pair); // index into comparison().jobs
    const JobComparison* currentJob() const;

    TimelineView* timelineA() const { return m_timelineA; }
    TimelineView* timelineB() const { return m_timelineB; }
    CompareStepChart* stepChart() const { return m_chart; }
    CompareTopology* topology() const { return m_topology; }
    QTableWidget* breakdownTable() const { return m_breakdown; }
    QTableWidget* differencesTable() const { return m_differences; }
    QString summaryText() const; // the headline: what changed most

    // Both timelines on step `step` (position in A's steps) and its neighbours.
    void showStep(int step);
    // Selects difference `row` (its place in both timelines).
    void showDifference(int row);

    // The whole window's content with a title line naming both runs and the jobs: one image for a ticket.
    QImage renderImage();
    bool exportImage(const QString& path, QString* error = nullptr);

signals:
    void loaded();
    void loadFailed(const QString& message);

private:
    void rebuild();
    void fillTables();
    void follow(bool fromB); // the other timeline to the same steps as this one
    QString runText(bool b) const;
    void exportDialog();
    // The records of runs that hold none, read again (AnalysisSession::withRecords), or why they could not be.
    struct RecordsRead {
        std::vector<std::pair<SessionPtr, std::shared_ptr<const Capture>>> read;
        std::vector<std::pair<SessionPtr, QString>> failed;
    };
    std::vector<SessionPtr> recordsWanted(const std::vector<SessionPtr>& runs) const; // neither held nor read yet
    static RecordsRead readRecords(const std::vector<SessionPtr>& runs);
    void keep(const RecordsRead& r); // into m_records and m_unreadable
    // Reads the records `runs` want on a worker thread, then runs `then` on this window's thread; at once when
    // none needs reading.
    void readRecordsThen(const std::vector<SessionPtr>& runs, std::function<void()> then);

    SessionPtr m_a, m_b;
    Comparison m_comparison;
    // The runs' flow records for the links, read again once per run shown here (a capture opened whole holds
    // none: AnalysisSession::withRecords), and why a run's could not be.
    std::map<SessionPtr, std::shared_ptr<const Capture>> m_records; // by run (kept alive while listed)
    std::map<SessionPtr, QString> m_unreadable;
    QString m_linksUnread;
    int m_reading = 0; // the read of records in the background that is current (a newer load makes one stale)
    int m_pair = -1;
    bool m_following = false;
    CaptureLoader* m_loader = nullptr;
    int m_loadId = 0;
    ViewState* m_stateA = nullptr;
    ViewState* m_stateB = nullptr;
    TimelineView* m_timelineA = nullptr;
    TimelineView* m_timelineB = nullptr;
    QLabel* m_labelA = nullptr;
    QLabel* m_labelB = nullptr;
    QLabel* m_summary = nullptr;
    QComboBox* m_pairs = nullptr;
    CompareStepChart* m_chart = nullptr;
    CompareTopology* m_topology = nullptr;
    QTableWidget* m_breakdown = nullptr;
    QTableWidget* m_differences = nullptr;
    QWidget* m_content = nullptr;
};

} // namespace prism::ui
