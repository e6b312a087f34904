#pragma once
// One job's lookups for stages 3-5 (steps, timeline, diagnosis): JobIndex, which the pipeline builds once per
// job and hands to each stage, and the job's expert-parallel groups.
#include "analysis/parallelism.h"
#include "analysis/recognition.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace prism {

// Per-record lookups for one job, shared by steps, timeline and diagnosis: the job-local index of an
// endpoint (position in RecognizedJob::nics), the kind of a NIC pair, the PP stage and DP group of a NIC and
// the leaf switch it hangs off. Pair kinds are a dense matrix for jobs up to 4096 NICs, else a hash map.
class JobIndex {
public:
    JobIndex(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
             const ParallelismResult& parallelism);
    int local(EndpointId e) const { return e < m_local.size() ? m_local[e] : -1; }
    std::size_t size() const { return m_nics.size(); }
    EndpointId endpoint(int local) const { return m_nics[std::size_t(local)]; }
    PairKind kind(int a, int b) const { // locals; PP when the pair was never classified
        if (!m_dense.empty()) [[likely]]
            return m_dense[std::size_t(a) * m_nics.size() + std::size_t(b)] == 1 ? PairKind::DP : PairKind::PP;
        return sparseKind(a, b);
    }
    int stage(int local) const { return m_stage[std::size_t(local)]; }     // 0 when pp = 1
    int dpGroup(int local) const { return m_group[std::size_t(local)]; }   // -1 when in no DP group
    int leaf(int local) const { return m_leaf[std::size_t(local)]; }       // topology switch index, or -1
    int host(int local) const { return m_host[std::size_t(local)]; }       // topology host index, or -1

private:
    PairKind sparseKind(int a, int b) const;
    std::vector<int> m_local;
    std::vector<EndpointId> m_nics;
    std::vector<int> m_stage, m_group, m_leaf, m_host;
    std::vector<std::uint8_t> m_dense; // n x n, 0 unknown, 1 DP, 2 PP
    std::unordered_map<std::uint64_t, PairKind> m_sparse;
};

// Expert-parallel groups: the components of the pairs of DP peers (one DP group) with traffic both ways, as an
// expert all-to-all has (a ring collective's hops go one way). Per job-local NIC its group (the local index
// of one member), or -1 for a NIC in no such pair.
std::vector<int> expertGroups(const FlowTable& flows, const RecognizedJob& job, const JobIndex& ix);
// The same from the DP peers each NIC sends to (peersOf[a]: the b of its records a -> b on a DP pair inside one DP
// group, each once, in the order of the first such record): where a pass over the records gathered them already.
std::vector<int> expertGroupsOfPeers(const std::vector<std::vector<int>>& peersOf);

// Whether the job's records come by start time (a sorted table's do): then a stage can hand a step, or a stretch
// of time, on once the records have moved past it, instead of holding every record's item to the end.
bool recordsByStart(const FlowTable& flows, const RecognizedJob& job);

} // namespace prism
