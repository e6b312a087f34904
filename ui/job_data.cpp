#include "job_data.h"

#include "analysis/stats.h"
#include "model/capture.h"

#include <QObject>
#include <algorithm>

namespace prism::ui {

namespace {

const JobTimeline& emptyTimeline() {
    static const JobTimeline tl;
    return tl;
}

void addClipped(TimeSplit& out, const Segment& s, std::int64_t t0, std::int64_t t1) {
    const std::int64_t d = std::min(s.endNs, t1) - std::max(s.startNs, t0);
    if (d <= 0) return;
    switch (s.kind) {
    case SegmentKind::Compute: out.compute += d; break;
    case SegmentKind::Wait: out.wait += d; break;
    default: out.comm += d; break;
    }
}

} // namespace

JobData::JobData(SessionPtr session, int job) : m_session(std::move(session)), m_job(job) {
    const JobTimeline& tl = timeline();
    const Topology& topo = topology();
    const int n = int(tl.ranks.size());
    m_nic.assign(std::size_t(n), -1);
    m_host.assign(std::size_t(n), -1);
    m_straggler.assign(std::size_t(n), 0);
    m_rankFindings.assign(std::size_t(n), {});
    m_bytes.assign(std::size_t(n), 0);
    for (int r = 0; r < n; ++r) {
        const RankTimeline& rt = tl.ranks[std::size_t(r)];
        m_rankByIp.emplace(rt.ip, r);
        if (auto ip = IpAddr::parse(rt.ip)) {
            if (auto nic = topo.nicByIp(*ip)) {
                m_nic[std::size_t(r)] = *nic;
                m_host[std::size_t(r)] = topo.nics[std::size_t(*nic)].host;
            }
        }
    }
    const auto& st = steps();
    for (int i = 0; i < int(st.size()); ++i) m_stepPos.emplace(st[std::size_t(i)].index, i);
    if (!st.empty()) {
        std::vector<std::int64_t> d;
        d.reserve(st.size());
        for (const StepInfo& s : st) d.push_back(s.durationNs());
        m_medianStepNs = upperMedian(std::move(d));
    }
    m_jobSplit.assign(std::size_t(n), {});
    for (int r = 0; r < n; ++r)
        tl.ranks[std::size_t(r)].forEachSegment([&](const Segment& s) {
            addClipped(m_jobSplit[std::size_t(r)], s, s.startNs, s.endNs);
            m_bytes[std::size_t(r)] += s.bytes;
        });

    // Bytes per rank (sent plus received) from its segments: its transfers with the job's other ranks (the
    // views hold no flow records).
    placeFindings();
}

const JobInfo& JobData::info() const { return m_session->analysis.report.jobs.at(std::size_t(m_job)); }

const JobTimeline& JobData::timeline() const {
    const auto& jobs = m_session->analysis.jobs;
    return std::size_t(m_job) < jobs.size() ? jobs[std::size_t(m_job)].timeline : emptyTimeline();
}

const ParallelismResult* JobData::parallelism() const {
    const auto& jobs = m_session->analysis.jobs;
    return std::size_t(m_job) < jobs.size() ? &jobs[std::size_t(m_job)].parallelism : nullptr;
}

const std::vector<StepInfo>& JobData::steps() const {
    // The timeline is built from the report's steps; prefer it (its segments index into it).
    const JobTimeline& tl = timeline();
    return tl.steps.empty() ? info().steps : tl.steps;
}

std::int64_t JobData::startNs() const {
    const JobTimeline& tl = timeline();
    return tl.endNs > tl.startNs ? tl.startNs : info().startNs;
}

std::int64_t JobData::endNs() const {
    const JobTimeline& tl = timeline();
    std::int64_t e = tl.endNs > tl.startNs ? tl.endNs : info().endNs;
    if (!steps().empty()) e = std::max(e, steps().back().endNs);
    return std::max(e, startNs() + 1);
}

int JobData::stepPosition(int stepIndex) const {
    auto it = m_stepPos.find(stepIndex);
    return it == m_stepPos.end() ? -1 : it->second;
}

int JobData::slowStepCount() const {
    int n = 0;
    for (const StepInfo& s : steps()) n += s.slow ? 1 : 0;
    return n;
}

QString JobData::rankLabel(int rank) const {
    if (rank < 0 || rank >= rankCount()) return {};
    return QString::fromStdString(timeline().ranks[std::size_t(rank)].label);
}

int JobData::rankByIp(const std::string& ip) const {
    auto it = m_rankByIp.find(ip);
    if (it != m_rankByIp.end()) return it->second;
    // Addresses in findings may be written differently (IPv6 forms): compare canonical text.
    if (auto parsed = IpAddr::parse(ip)) {
        it = m_rankByIp.find(parsed->toString());
        if (it != m_rankByIp.end()) return it->second;
    }
    return -1;
}

int JobData::nicOfRank(int rank) const { return rank >= 0 && rank < rankCount() ? m_nic[std::size_t(rank)] : -1; }

int JobData::hostOfRank(int rank) const { return rank >= 0 && rank < rankCount() ? m_host[std::size_t(rank)] : -1; }

std::vector<int> JobData::ranksOfHost(int host) const {
    std::vector<int> out;
    for (int r = 0; r < rankCount(); ++r)
        if (m_host[std::size_t(r)] == host) out.push_back(r);
    return out;
}

std::vector<int> JobData::ranksOfSwitch(const std::string& name) const {
    std::vector<int> out;
    const Topology& topo = topology();
    for (int r = 0; r < rankCount(); ++r) {
        int nic = m_nic[std::size_t(r)];
        if (nic >= 0 && topo.nics[std::size_t(nic)].switchName == name) out.push_back(r);
    }
    return out;
}

const std::vector<int>& JobData::findingsOfRank(int rank) const {
    static const std::vector<int> none;
    return rank >= 0 && rank < rankCount() ? m_rankFindings[std::size_t(rank)] : none;
}

TimeSplit JobData::split(int rank, std::int64_t t0, std::int64_t t1) const {
    TimeSplit out;
    if (rank < 0 || rank >= rankCount() || t1 <= t0) return out;
    const JobTimeline& tl = timeline();
    std::vector<Segment> scratch;
    for (const Segment& s : tl.ranks[std::size_t(rank)].visibleSegments(t0, t1, scratch)) addClipped(out, s, t0, t1);
    return out;
}

TimeSplit JobData::splitInStep(int rank, int step) const {
    const auto& st = steps();
    if (step < 0 || step >= int(st.size()) || rank < 0 || rank >= rankCount()) return {};
    // The timeline's per-step stats when it has them (same numbers, no walk over segments).
    if (const RankStepStats* s = timeline().stats(std::size_t(rank), std::size_t(step)))
        return {s->computeNs, s->ppSendNs + s->ppRecvNs + s->dpSyncNs + s->otherNs, s->waitNs};
    return split(rank, st[std::size_t(step)].startNs, st[std::size_t(step)].endNs);
}

QString JobData::title() const {
    const JobInfo& j = info();
    QString t = QString("%1 · %2 GPUs · TP %3 × PP %4 × DP %5")
                    .arg(QString::fromStdString(j.id))
                    .arg(j.gpuTotal())
                    .arg(j.tp)
                    .arg(j.pp)
                    .arg(j.dp);
    // Every view's image title carries it: a ticket's picture of a job split per rail says why.
    if (const auto& c = session().report().capture; c && !topologyMisfit(*c).empty())
        t += c->topologyGiven ? QObject::tr(" · hosts unknown (the topology does not fit)")
                              : QObject::tr(" · hosts unknown (no topology)");
    return t;
}

void JobData::placeFindings() {
    const JobInfo& j = info();
    const auto& st = steps();
    const JobTimeline& tl = timeline();
    for (int f = 0; f < int(j.findings.size()); ++f) {
        const Finding& fd = j.findings[std::size_t(f)];
        FindingPlace p;
        auto addIp = [&](const std::string& ip) {
            int r = rankByIp(ip);
            if (r >= 0 && std::find(p.ranks.begin(), p.ranks.end(), r) == p.ranks.end()) p.ranks.push_back(r);
        };
        auto label = [&](const std::string& ip) {
            int r = rankByIp(ip);
            return r >= 0 ? rankLabel(r) : QString::fromStdString(ip);
        };
        if (fd.kind == "slow_stage" && fd.stage >= 0) {
            for (int r = 0; r < rankCount(); ++r)
                if (timeline().ranks[std::size_t(r)].stage == fd.stage) p.ranks.push_back(r);
            p.where = QObject::tr("PP stage %1").arg(fd.stage);
        } else if (fd.kind == "slow_switch" || (!fd.switchName.empty() && fd.ip.empty() && fd.srcIp.empty())) {
            p.ranks = ranksOfSwitch(fd.switchName);
            p.where = QString::fromStdString(fd.switchName);
        } else if (!fd.srcIp.empty() || !fd.dstIp.empty()) {
            addIp(fd.srcIp);
            addIp(fd.dstIp);
            p.where = QString("%1 → %2").arg(label(fd.srcIp), label(fd.dstIp));
        } else if (!fd.ip.empty()) {
            addIp(fd.ip);
            for (const std::string& g : fd.group) addIp(g);
            p.where = label(fd.ip);
            if (!fd.switchName.empty()) p.where += QString(" ↔ %1").arg(QString::fromStdString(fd.switchName));
        } else {
            p.where = QObject::tr("whole job");
        }
        p.firstStep = stepPosition(fd.firstStep);
        p.lastStep = stepPosition(fd.lastStep);
        if (!st.empty()) {
            // Step indices outside the known steps: clamp to the job's steps so the place stays visible.
            if (p.firstStep < 0) p.firstStep = std::clamp(fd.firstStep, 0, int(st.size()) - 1);
            if (p.lastStep < 0) p.lastStep = std::clamp(fd.lastStep, 0, int(st.size()) - 1);
            if (p.lastStep < p.firstStep) std::swap(p.firstStep, p.lastStep);
            p.startNs = st[std::size_t(p.firstStep)].startNs;
            p.endNs = st[std::size_t(p.lastStep)].endNs;
        } else {
            p.startNs = tl.startNs ? tl.startNs : j.startNs;
            p.endNs = tl.endNs ? tl.endNs : j.endNs;
        }
        if (fd.kind == "slow_rank")
            for (int r : p.ranks) m_straggler[std::size_t(r)] = 1;
        for (int r : p.ranks) m_rankFindings[std::size_t(r)].push_back(f);
        m_places.push_back(std::move(p));
    }
}

} // namespace prism::ui
