#include "analysis/job_index.h"

#include "util/parallel.h"

#include <algorithm>
#include <numeric>

namespace prism {

namespace {

constexpr std::size_t kDenseLimit = 4096;

std::uint64_t pairKey(std::uint32_t a, std::uint32_t b) {
    return (std::uint64_t(std::min(a, b)) << 32) | std::max(a, b);
}

} // namespace

JobIndex::JobIndex(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                   const ParallelismResult& par)
    : m_local(flows.endpoints.size(), -1), m_nics(job.nics) {
    const std::size_t n = m_nics.size();
    for (std::size_t i = 0; i < n; ++i)
        if (m_nics[i] < m_local.size()) m_local[m_nics[i]] = int(i);
    m_stage.assign(n, 0);
    m_group.assign(n, -1);
    m_leaf.assign(n, -1);
    m_host.assign(n, -1);
    for (const auto& chain : par.ppChains)
        for (std::size_t s = 0; s < chain.size(); ++s)
            if (int l = local(chain[s]); l >= 0) m_stage[std::size_t(l)] = int(s);
    for (std::size_t g = 0; g < par.dpGroups.size(); ++g)
        for (EndpointId e : par.dpGroups[g])
            if (int l = local(e); l >= 0) m_group[std::size_t(l)] = int(g);
    for (std::size_t i = 0; i < n; ++i) {
        if (auto nic = topology.nicByIp(flows.endpoints.at(m_nics[i]))) {
            m_leaf[i] = topology.nics[std::size_t(*nic)].switchIndex;
            m_host[i] = topology.nics[std::size_t(*nic)].host;
        }
    }
    if (n <= kDenseLimit) m_dense.assign(n * n, 0);
    for (const PairInfo& p : par.pairs) {
        const int a = local(p.a), b = local(p.b);
        if (a < 0 || b < 0) continue;
        if (!m_dense.empty()) {
            const std::uint8_t v = p.kind == PairKind::DP ? 1 : 2;
            m_dense[std::size_t(a) * n + std::size_t(b)] = v;
            m_dense[std::size_t(b) * n + std::size_t(a)] = v;
        } else {
            m_sparse[pairKey(std::uint32_t(a), std::uint32_t(b))] = p.kind;
        }
    }
}

PairKind JobIndex::sparseKind(int a, int b) const {
    auto it = m_sparse.find(pairKey(std::uint32_t(a), std::uint32_t(b)));
    return it == m_sparse.end() ? PairKind::PP : it->second;
}

std::vector<int> expertGroups(const FlowTable& flows, const RecognizedJob& job, const JobIndex& ix) {
    const std::size_t n = ix.size();
    std::vector<std::vector<int>> peersOf(n); // the DP peers each NIC sends to (a DP group is small)
    for (std::uint32_t r : job.records) {
        const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
        if (a < 0 || b < 0 || ix.dpGroup(a) < 0 || ix.dpGroup(a) != ix.dpGroup(b) || ix.kind(a, b) != PairKind::DP)
            continue;
        auto& v = peersOf[std::size_t(a)];
        if (std::find(v.begin(), v.end(), b) == v.end()) v.push_back(b);
    }
    return expertGroupsOfPeers(peersOf);
}

std::vector<int> expertGroupsOfPeers(const std::vector<std::vector<int>>& peersOf) {
    const std::size_t n = peersOf.size();
    std::vector<int> group(n, -1);
    std::vector<int> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](int x) {
        while (parent[std::size_t(x)] != x) x = parent[std::size_t(x)] = parent[std::size_t(parent[std::size_t(x)])];
        return x;
    };
    std::vector<char> paired(n, 0);
    for (std::size_t a = 0; a < n; ++a)
        for (int b : peersOf[a]) {
            const auto& back = peersOf[std::size_t(b)];
            if (std::find(back.begin(), back.end(), int(a)) == back.end()) continue;
            parent[std::size_t(find(int(a)))] = find(b);
            paired[a] = paired[std::size_t(b)] = 1;
        }
    for (std::size_t l = 0; l < n; ++l)
        if (paired[l]) group[l] = find(int(l));
    return group;
}

bool recordsByStart(const FlowTable& flows, const RecognizedJob& job) {
    // In parts side by side (at least 65536 records each): a job's 4M records took 6 ms on one core.
    const std::size_t n = job.records.size(), parts = partsFor(n, 0, 65536);
    std::vector<std::uint8_t> inOrder(parts, 1);
    parallelFor(parts, unsigned(parts), [&](std::size_t k, unsigned) {
        for (std::size_t j = std::max<std::size_t>(1, n * k / parts), to = n * (k + 1) / parts; j < to; ++j)
            if (flows.startNs[job.records[j]] < flows.startNs[job.records[j - 1]]) {
                inOrder[k] = 0;
                return;
            }
    });
    return std::all_of(inOrder.begin(), inOrder.end(), [](std::uint8_t b) { return b != 0; });
}

} // namespace prism
