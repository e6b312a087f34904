#pragma once
// Per-job numbers every view shares, derived once when a job is selected: rank lookup by address and host,
// step durations and their median, where each finding points (ranks, steps, time), straggler ranks, and the
// time split of a rank within a step (compute / communication / waiting), computed on demand from segments.
#include "analysis_session.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace prism::ui {

// Time of one rank split by what it did. Communication is PP send/receive, DP sync and other RoCE traffic.
struct TimeSplit {
    std::int64_t compute = 0;
    std::int64_t comm = 0;
    std::int64_t wait = 0;
    std::int64_t total() const { return compute + comm + wait; }
};

// Where a finding points in the timeline.
struct FindingPlace {
    std::vector<int> ranks; // ranks involved (empty: the whole job, e.g. a slow step)
    int firstStep = -1;     // positions in JobData::steps(), -1 when the job has no steps
    int lastStep = -1;
    std::int64_t startNs = 0; // time span of those steps (the job's span without steps)
    std::int64_t endNs = 0;
    QString where; // "node-0003:2", "10.0.0.3 → 10.1.0.4", "leaf-g0-r1", "whole job"
};

class JobData {
public:
    JobData(SessionPtr session, int job);

    const AnalysisSession& session() const { return *m_session; }
    int jobIndex() const { return m_job; }
    const JobInfo& info() const;
    const JobTimeline& timeline() const;
    const ParallelismResult* parallelism() const; // null when the analysis has none for this job
    const Topology& topology() const { return m_session->capture.topology; }

    // The job's time span: its timeline's (the report's without one), through the end of its last step.
    std::int64_t startNs() const;
    std::int64_t endNs() const; // > startNs()

    int rankCount() const { return int(timeline().ranks.size()); }
    QString rankLabel(int rank) const;
    int rankByIp(const std::string& ip) const; // -1 when the address is not a rank of this job
    int nicOfRank(int rank) const;             // topology NIC index, -1 when unknown
    int hostOfRank(int rank) const;            // topology host index, -1 when unknown
    std::vector<int> ranksOfHost(int host) const;
    std::vector<int> ranksOfSwitch(const std::string& name) const; // ranks whose NIC is cabled to the switch

    const std::vector<StepInfo>& steps() const;
    int stepPosition(int stepIndex) const; // position in steps() of StepInfo::index, -1 when absent
    std::int64_t medianStepNs() const { return m_medianStepNs; }
    int slowStepCount() const;

    bool isStraggler(int rank) const { return rank >= 0 && rank < int(m_straggler.size()) && m_straggler[rank]; }
    const std::vector<int>& findingsOfRank(int rank) const;
    const FindingPlace& place(int finding) const { return m_places.at(std::size_t(finding)); }
    int findingCount() const { return int(m_places.size()); }

    // Time split of a rank within [t0, t1) (clipped segments), and within one step (position in steps()).
    TimeSplit split(int rank, std::int64_t t0, std::int64_t t1) const;
    TimeSplit splitInStep(int rank, int step) const;
    // Whole-job split per rank (computed once).
    const TimeSplit& jobSplit(int rank) const { return m_jobSplit.at(std::size_t(rank)); }

    // Total bytes a rank sent and received over the whole job: its transfers with the job's other ranks (the
    // bytes of its segments).
    std::uint64_t bytesOfRank(int rank) const { return m_bytes.at(std::size_t(rank)); }

    // Short text for titles: "job-0 · 64 GPUs · TP 8 × PP 2 × DP 4".
    QString title() const;

private:
    void placeFindings();

    SessionPtr m_session;
    int m_job = 0;
    std::unordered_map<std::string, int> m_rankByIp;
    std::vector<int> m_nic;
    std::vector<int> m_host;
    std::vector<char> m_straggler;
    std::vector<std::vector<int>> m_rankFindings;
    std::vector<FindingPlace> m_places;
    std::vector<TimeSplit> m_jobSplit;
    std::vector<std::uint64_t> m_bytes;
    std::unordered_map<int, int> m_stepPos;
    std::int64_t m_medianStepNs = 0;
};

using JobDataPtr = std::shared_ptr<const JobData>;

} // namespace prism::ui
