#pragma once
// What every view shows: the session, the selected job (with its derived JobData), the current selection
// and the visible time range (zoom()). Views read it and call select(); one signal per change keeps them
// in step.
#include "job_data.h"
#include "zoom_control.h"

#include <QObject>

namespace prism::ui {

struct Selection {
    enum class Kind { None, Step, Rank, Segment, Host, Nic, Switch, Finding };
    Kind kind = Kind::None;
    int step = -1;    // position in JobData::steps()
    int rank = -1;    // rank of the selected job
    int segment = -1; // index into the rank's segments
    int host = -1;    // topology host index
    int nic = -1;     // topology NIC index (a NIC and its link to the leaf)
    int sw = -1;      // topology switch index
    int finding = -1; // index into the job's findings

    static Selection ofStep(int s) {
        Selection x;
        x.kind = Kind::Step;
        x.step = s;
        return x;
    }
    static Selection ofRank(int r) {
        Selection x;
        x.kind = Kind::Rank;
        x.rank = r;
        return x;
    }
    static Selection ofSegment(int r, int seg) {
        Selection x;
        x.kind = Kind::Segment;
        x.rank = r;
        x.segment = seg;
        return x;
    }
    static Selection ofHost(int h) {
        Selection x;
        x.kind = Kind::Host;
        x.host = h;
        return x;
    }
    static Selection ofNic(int n) {
        Selection x;
        x.kind = Kind::Nic;
        x.nic = n;
        return x;
    }
    static Selection ofSwitch(int s) {
        Selection x;
        x.kind = Kind::Switch;
        x.sw = s;
        return x;
    }
    static Selection ofFinding(int f) {
        Selection x;
        x.kind = Kind::Finding;
        x.finding = f;
        return x;
    }
    bool isNone() const { return kind == Kind::None; }
    friend bool operator==(const Selection&, const Selection&) = default;
};

class ViewState : public QObject {
    Q_OBJECT
public:
    explicit ViewState(QObject* parent = nullptr);

    void setSession(const SessionPtr& session); // selects the first job (or none)
    const SessionPtr& session() const { return m_session; }
    void setJob(int job); // -1: no job
    int job() const { return m_job; }
    const JobDataPtr& jobData() const { return m_jobData; }
    // The job's visible time range and its undo, reset to the whole job when the job changes (before
    // jobChanged is emitted).
    ZoomControl* zoom() const { return m_zoom; }

    // `reveal`: views that can scroll or zoom bring the selection into sight (a click in the step chart
    // shows the step in the timeline; a click inside the timeline does not move it).
    void select(const Selection& selection, bool reveal = true);
    void clearSelection() { select(Selection{}, false); }
    const Selection& selection() const { return m_selection; }
    // Ranks the selection points at (a rank, a segment's rank and peer, a host's ranks, a finding's ranks).
    std::vector<int> highlightedRanks() const;

signals:
    void sessionChanged();
    void jobChanged(int job);
    void selectionChanged(const prism::ui::Selection& selection, bool reveal);

private:
    SessionPtr m_session;
    int m_job = -1;
    JobDataPtr m_jobData;
    Selection m_selection;
    ZoomControl* m_zoom;
};

} // namespace prism::ui
