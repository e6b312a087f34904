#include "view_state.h"

#include <algorithm>

namespace prism::ui {

ViewState::ViewState(QObject* parent) : QObject(parent), m_zoom(new ZoomControl(this)) {}

void ViewState::setSession(const SessionPtr& session) {
    m_session = session;
    m_job = -2; // force setJob to emit
    m_selection = {};
    emit sessionChanged();
    // A window of a capture analysed in stages opens on its job (the one with a timeline).
    const int first = session && session->staged && session->windowJob >= 0 ? session->windowJob : 0;
    setJob(session && !session->report().jobs.empty() ? first : -1);
}

void ViewState::setJob(int job) {
    if (!m_session || job < 0 || job >= int(m_session->report().jobs.size())) job = -1;
    if (job == m_job) return;
    m_job = job;
    m_jobData = job >= 0 ? std::make_shared<const JobData>(m_session, job) : nullptr;
    m_selection = {};
    m_zoom->reset(m_jobData ? m_jobData->startNs() : 0, m_jobData ? m_jobData->endNs() : 1);
    emit jobChanged(job);
    emit selectionChanged(m_selection, false);
}

void ViewState::select(const Selection& selection, bool reveal) {
    if (!m_jobData && selection.kind != Selection::Kind::None && selection.kind != Selection::Kind::Host &&
        selection.kind != Selection::Kind::Nic && selection.kind != Selection::Kind::Switch)
        return;
    if (selection == m_selection && !reveal) return;
    m_selection = selection;
    emit selectionChanged(m_selection, reveal);
}

std::vector<int> ViewState::highlightedRanks() const {
    std::vector<int> out;
    if (!m_jobData) return out;
    const JobData& d = *m_jobData;
    switch (m_selection.kind) {
    case Selection::Kind::Rank: out.push_back(m_selection.rank); break;
    case Selection::Kind::Segment: {
        out.push_back(m_selection.rank);
        const RankTimeline& rt = d.timeline().ranks.at(std::size_t(m_selection.rank));
        if (m_selection.segment >= 0 && std::size_t(m_selection.segment) < rt.segmentCount()) {
            std::uint32_t peer = rt.segment(std::size_t(m_selection.segment)).peer;
            if (peer < std::uint32_t(d.rankCount())) out.push_back(int(peer));
        }
        break;
    }
    case Selection::Kind::Host: out = d.ranksOfHost(m_selection.host); break;
    case Selection::Kind::Nic:
        for (int r = 0; r < d.rankCount(); ++r)
            if (d.nicOfRank(r) == m_selection.nic) out.push_back(r);
        break;
    case Selection::Kind::Switch:
        if (m_selection.sw >= 0 && m_selection.sw < int(d.topology().switches.size()))
            out = d.ranksOfSwitch(d.topology().switches[std::size_t(m_selection.sw)].name);
        break;
    case Selection::Kind::Finding:
        if (m_selection.finding >= 0 && m_selection.finding < d.findingCount())
            out = d.place(m_selection.finding).ranks;
        break;
    default: break;
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

} // namespace prism::ui
