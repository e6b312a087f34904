#include "analysis/steps.h"

#include "analysis/exchanges.h"

#include <algorithm>
#include <optional>
#include <cmath>
#include <limits>
#include <numeric>

namespace prism {

namespace {

using Piece = std::pair<std::int64_t, std::int64_t>;
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kDenseLimit = 4096;

std::uint64_t pairKey(std::uint32_t a, std::uint32_t b) {
    return (std::uint64_t(std::min(a, b)) << 32) | std::max(a, b);
}

// One record of the series the steps are cut from (sender and receiver: job-local indices).
using SyncRec = DpRecord;

// The expert exchanges leave the series and are returned (the ring's hops among them rejoin their burst later,
// when they start inside one).
std::vector<SyncRec> ringHopsOnly(std::vector<SyncRec>& dp, std::size_t nics, std::int64_t exchangeWindowNs) {
    const std::vector<char> exchange = expertExchanges(dp, nics, exchangeWindowNs);
    std::vector<SyncRec> out, kept;
    for (std::size_t i = 0; i < dp.size(); ++i) (exchange[i] ? out : kept).push_back(dp[i]);
    if (!out.empty()) dp = std::move(kept);
    return out;
}

// Union of intervals sorted by start into non-overlapping pieces; pieceOf[i] is the piece of interval i.
template <typename It>
std::vector<Piece> unionPieces(It first, It last, std::vector<std::uint32_t>* pieceOf) {
    std::vector<Piece> out;
    for (It it = first; it != last; ++it) {
        if (out.empty() || it->s > out.back().second) out.push_back({it->s, it->e});
        else out.back().second = std::max(out.back().second, it->e);
        if (pieceOf) pieceOf->push_back(std::uint32_t(out.size() - 1));
    }
    return out;
}

} // namespace

bool StepDivision::isExchange(EndpointId src, EndpointId dst, std::int64_t alignedStartNs) const {
    if (expertPairs.empty()) return false;
    const ExpertPair key{std::min(src, dst), std::max(src, dst), 0};
    auto it = std::lower_bound(expertPairs.begin(), expertPairs.end(), key);
    if (it == expertPairs.end() || it->a != key.a || it->b != key.b) return false;
    const auto& w = syncWindowsNs[it->windows];
    auto next = std::upper_bound(w.begin(), w.end(), alignedStartNs,
                                 [](std::int64_t v, const Piece& x) { return v < x.first; });
    return next == w.begin() || alignedStartNs > std::prev(next)->second;
}

const char* stepSourceName(StepSource source) {
    switch (source) {
    case StepSource::None: return "none";
    case StepSource::DataParallel: return "DP sync bursts";
    case StepSource::Pipeline: return "PP traffic rhythm";
    }
    return "?";
}

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

PairKind JobIndex::kind(int a, int b) const {
    if (!m_dense.empty())
        return m_dense[std::size_t(a) * m_nics.size() + std::size_t(b)] == 1 ? PairKind::DP : PairKind::PP;
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

// A distributed optimizer (ZeRO-1/2, Megatron's) syncs twice per step: the gradient reduce-scatter ends the
// step, the optimizer runs on the shard with the network quiet, then the parameter all-gather opens the next
// step. So a ring's collectives alternate: closer (reduce-scatter), opener (all-gather), closer, ... An
// all-gather lies nearer to the reduce-scatter before it (the optimizer's quiet) than to the one after it
// (the forward and backward passes), a reduce-scatter nearer to the all-gather after it.
//  1. Cut at the step rhythm, a burst is often reduce-scatter, quiet, all-gather: one quiet gap inside it
//     dominates (>= 4x its other inner gaps, >= minBoundaryGapNs). When at least three bursts and half of
//     those with inner gaps have one, each is cut there (a pause cuts its step's pair apart: fewer have one).
//  2. The parts then alternate. Each inner part whose quiet before and after differ by 1.5x or more votes for
//     the parity of the openers (the nearer neighbour is its partner); when two thirds of the inner parts
//     vote and three quarters of the votes agree, the parts at that parity are openers (one burst per step
//     with a few uneven steps, as anomalies make them, casts a few votes of chance: half of a 10-step job's
//     did; pauses between the two turn a few votes: 8 of 48 with four 400 ms pauses). Parity, not each
//     part's own gaps, decides: a checkpoint between a reduce-scatter and its all-gather (a pause of any
//     length) turns the gaps around those two parts, not the alternation.
// Plain all-reduce syncs (one burst per step, evenly spaced) cast no votes and are left as they are.
static void splitDistributedOptimizer(const std::vector<Piece>& pieces, std::vector<std::size_t>& cuts,
                               std::vector<char>& opener, const StepParams& params) {
    opener.clear();
    if (pieces.size() < 2) return;
    std::vector<std::pair<std::size_t, std::size_t>> bursts; // pieces [lo, hi]
    std::size_t lo = 0;
    for (std::size_t c : cuts) {
        bursts.push_back({lo, c});
        lo = c + 1;
    }
    if (lo < pieces.size()) bursts.push_back({lo, pieces.size() - 1});
    std::vector<std::size_t> split(bursts.size(), 0); // first piece of the part after the dominant gap, 0: none
    std::size_t multi = 0, dominant = 0;
    for (std::size_t j = 0; j < bursts.size(); ++j) {
        auto [l, h] = bursts[j];
        if (h == l) continue;
        ++multi;
        std::int64_t g1 = -1, g2 = 0;
        std::size_t at = l;
        for (std::size_t i = l; i < h; ++i) {
            const std::int64_t g = pieces[i + 1].first - pieces[i].second;
            if (g > g1) {
                g2 = std::max(g2, g1);
                g1 = g;
                at = i;
            } else {
                g2 = std::max(g2, g);
            }
        }
        if (g1 >= params.minBoundaryGapNs && g1 >= 4 * std::max<std::int64_t>(g2, 0)) {
            split[j] = at + 1;
            ++dominant;
        }
    }
    const bool splitting = dominant >= 3 && 2 * dominant >= multi;
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    for (std::size_t j = 0; j < bursts.size(); ++j) {
        auto [l, h] = bursts[j];
        if (splitting && split[j]) {
            parts.push_back({l, split[j] - 1});
            parts.push_back({split[j], h});
        } else {
            parts.push_back({l, h});
        }
    }
    const std::size_t P = parts.size();
    if (P < 4) return;
    auto gapAfter = [&](std::size_t k) {
        return double(pieces[parts[k + 1].first].first - pieces[parts[k].second].second);
    };
    int votes[2] = {0, 0}; // openers at even / odd positions
    std::size_t voters = 0;
    for (std::size_t k = 1; k + 1 < P; ++k) {
        const double before = std::max(1.0, gapAfter(k - 1)), after = std::max(1.0, gapAfter(k));
        if (std::max(before, after) < 1.5 * std::min(before, after)) continue;
        ++voters;
        const bool isOpener = before < after;
        ++votes[(k % 2 == 0) == isOpener ? 0 : 1];
    }
    const int agree = std::max(votes[0], votes[1]);
    if (voters < 3 || 3 * voters < 2 * (P - 2) || 4 * agree < 3 * int(voters)) return;
    const std::size_t parity = votes[0] >= votes[1] ? 0 : 1;
    cuts.clear();
    for (std::size_t k = 0; k + 1 < P; ++k) cuts.push_back(parts[k].second);
    opener.assign(P, 0);
    for (std::size_t k = 0; k < P; ++k) opener[k] = k % 2 == parity;
}

// The quiet gaps between consecutive pieces (gap[i]: after piece i) and their indices, longest first.
static std::vector<std::size_t> gapsLongestFirst(const std::vector<Piece>& pieces, std::vector<std::int64_t>& gap) {
    const std::size_t n = pieces.size();
    gap.assign(n - 1, 0);
    for (std::size_t i = 0; i + 1 < n; ++i) gap[i] = pieces[i + 1].first - pieces[i].second;
    std::vector<std::size_t> order(n - 1);
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return gap[a] > gap[b]; });
    return order;
}

// Pieces per step when pieces are cut after each of `cuts` (sorted): the first and the last step included.
static std::vector<double> piecesPerStep(const std::vector<std::size_t>& cuts, std::size_t pieces) {
    std::vector<double> counts;
    std::size_t prev = 0;
    for (std::size_t c : cuts) {
        counts.push_back(double(c + 1 - prev));
        prev = c + 1;
    }
    counts.push_back(double(pieces - prev));
    return counts;
}

// Whether steps hold their pieces evenly: the steps of about `median` pieces (within band; the first and the
// last, which the capture may cut: at most that) and the slowed steps put back together (mergeFragments) hold
// three quarters of all pieces.
static bool evenlyHeld(const std::vector<double>& counts, double median, double band,
                       const std::vector<char>& slowed = {}) {
    double regular = 0, all = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) {
        const bool edge = k == 0 || k + 1 == counts.size();
        if ((k < slowed.size() && slowed[k]) ||
            (counts[k] <= median * band && (edge || counts[k] >= median / band)))
            regular += counts[k];
        all += counts[k];
    }
    return 4 * regular >= 3 * all;
}

static double innerMedian(const std::vector<double>& counts) {
    return medianOf(std::vector<double>(counts.begin() + 1, counts.end() - 1));
}

// A step cut apart by quiet inside it: a GPU 3x slow in an expert-parallel group stretches the gaps between
// its step's exchanges beyond the optimizer's quiet, and the division at the longest gaps cuts that step into
// 4-9 fragments, each shorter in time than any usual step and holding fewer pieces (a step is never faster
// than usual; a slow link that merges a step's rounds leaves it fewer pieces, but its usual length). The usual
// count: that of the step holding the median piece (most pieces lie in usual steps, however many fragments
// there are); the usual length: the median of the steps within band of that count. A run of two or more
// fragments (inner steps under usual / band in count and in length) is k slow steps: groups of equal numbers
// of fragments, each holding at least usual / band pieces (the quiet a slow GPU adds splits rounds: a slowed
// step holds more pieces, not fewer) and lasting at least band x the usual length (only a step slowed that
// much has quiet inside it to cut at; where the usual steps are two real steps that lost the quiet between
// them, two real steps are no fragments of one). The largest k whose groups are alike (slow steps in a row
// are the same passes slowed the same way: fragment lengths position by position within 10% of the group's
// length in all), else one group. A run with no such grouping is left as it is.
// Returns, per step of the new division, whether it is such a group.
static std::vector<char> mergeFragments(const std::vector<Piece>& pieces, std::vector<std::size_t>& cuts,
                                        double band) {
    const std::vector<double> counts = piecesPerStep(cuts, pieces.size());
    std::vector<char> merged(counts.size(), 0);
    if (counts.size() < 4) return merged;
    std::vector<double> inner(counts.begin() + 1, counts.end() - 1);
    std::sort(inner.begin(), inner.end());
    const double total = std::accumulate(inner.begin(), inner.end(), 0.0);
    double usual = inner.back(), seen = 0;
    for (double c : inner)
        if ((seen += c) * 2 >= total) {
            usual = c;
            break;
        }
    // Inner step j (1..cuts.size()-1) spans pieces (cuts[j-1], cuts[j]].
    auto length = [&](std::size_t j) { return double(pieces[cuts[j]].second - pieces[cuts[j - 1]].second); };
    std::vector<double> usualLengths;
    for (std::size_t j = 1; j + 1 < counts.size(); ++j)
        if (counts[j] >= usual / band && counts[j] <= usual * band) usualLengths.push_back(length(j));
    if (usualLengths.empty()) return merged;
    const double usualLength = medianOf(usualLengths);
    auto fragment = [&](std::size_t j) { return counts[j] < usual / band && length(j) < usualLength / band; };
    std::vector<char> keep(cuts.size(), 1); // cut j ends step j
    std::vector<char> grouped(counts.size(), 0); // step j is a fragment of a merged group
    for (std::size_t a = 1; a + 1 < counts.size();) {
        std::size_t b = a;
        while (b + 1 < counts.size() && fragment(b)) ++b;
        const std::size_t L = b - a;
        std::size_t bestK = 0;
        for (std::size_t k = 1; L >= 2 && k <= L / 2; ++k) {
            if (L % k != 0) continue;
            const std::size_t m = L / k;
            bool valid = true;
            double spread = 0, all = 0;
            for (std::size_t g = 0; g < k && valid; ++g) {
                double sum = 0, span = 0;
                for (std::size_t i = 0; i < m; ++i) {
                    sum += counts[a + g * m + i];
                    span += length(a + g * m + i);
                }
                valid = sum >= usual / band && span >= usualLength * band;
            }
            for (std::size_t i = 0; i < m && valid; ++i) {
                double lo = std::numeric_limits<double>::infinity(), hi = 0;
                for (std::size_t g = 0; g < k; ++g) {
                    lo = std::min(lo, length(a + g * m + i));
                    hi = std::max(hi, length(a + g * m + i));
                    all += length(a + g * m + i) / double(k);
                }
                spread += hi - lo;
            }
            if (valid && (k == 1 || spread <= 0.1 * all)) bestK = k;
        }
        if (bestK > 0) {
            const std::size_t m = L / bestK;
            for (std::size_t i = 0; i < L; ++i) {
                if ((i + 1) % m != 0) keep[a + i] = 0;
                grouped[a + i] = 1;
            }
        }
        a = std::max(b, a + 1);
    }
    std::size_t w = 0;
    merged.assign(1, 0);
    for (std::size_t j = 0; j < cuts.size(); ++j) {
        merged.back() |= grouped[j]; // original step j lies in the new step being built
        if (!keep[j]) continue;
        cuts[w++] = cuts[j];
        merged.push_back(0);
    }
    merged.back() |= grouped[cuts.size()];
    cuts.resize(w);
    return merged;
}

// Whether the division at the `coarse` longest gaps holds the pieces of the one at the `fine` longest evenly.
static bool holdsEvenly(const std::vector<std::size_t>& order, std::size_t coarse, std::size_t fine, double band) {
    std::vector<std::size_t> cuts(order.begin(), order.begin() + std::ptrdiff_t(coarse));
    std::vector<char> isFine(order.size() + 1, 0);
    for (std::size_t k = 0; k < fine; ++k) isFine[order[k]] = 1;
    std::sort(cuts.begin(), cuts.end());
    std::vector<double> counts; // fine pieces per coarse step
    std::size_t prev = 0;
    for (std::size_t c : cuts) {
        double n = 1;
        for (std::size_t i = prev; i < c; ++i) n += isFine[i];
        counts.push_back(n);
        prev = c + 1;
    }
    double last = 1;
    for (std::size_t i = prev; i < order.size(); ++i) last += isFine[i];
    counts.push_back(last);
    return counts.size() < 3 || evenlyHeld(counts, innerMedian(counts), band);
}

std::vector<std::size_t> chooseCuts(const std::vector<Piece>& pieces, const StepParams& p, double lengthExponent,
                                    bool activeSpans, bool clearGapWins) {
    const std::size_t n = pieces.size();
    if (n < 2) return {};
    std::vector<std::int64_t> gap;
    const std::vector<std::size_t> order = gapsLongestFirst(pieces, gap);

    // Candidate cut counts c (the c largest gaps): only where the gap size drops, so that a threshold between
    // the c-th and the (c+1)-th gap is a real separation.
    struct Candidate {
        double drop;
        std::size_t cuts;
    };
    std::vector<Candidate> cands;
    for (std::size_t c = 1; c <= n - 1; ++c) {
        const std::int64_t g = gap[order[c - 1]];
        if (g < p.minBoundaryGapNs) break;
        const std::int64_t next = c < n - 1 ? gap[order[c]] : 0;
        const double drop = double(g) / double(std::max<std::int64_t>(next, 1));
        if (drop >= 1.1) cands.push_back({drop, c});
    }
    if (cands.empty()) return {};
    if (cands.size() > p.maxCandidates) {
        std::partial_sort(cands.begin(), cands.begin() + std::ptrdiff_t(p.maxCandidates), cands.end(),
                          [](const Candidate& a, const Candidate& b) { return a.drop > b.drop; });
        cands.resize(p.maxCandidates);
    }

    // Score: (regular intervals between burst ends - 1) x (median interval)^lengthExponent. A single interval
    // is regular by itself and proves nothing. Over-splitting breaks intervals into irregular pieces;
    // under-splitting at the few longest gaps (periodic pauses) keeps regular intervals but fewer of them.
    // With exponent 1 the score is the time covered by regular intervals, which never rewards splitting a
    // rhythm finer (PP traffic has a micro-batch rhythm inside each step); with exponent 0.5 the count
    // dominates, which finds every step between periodic pauses where bursts have no inner rhythm (DP sync).
    double bestScore = 0;
    std::size_t bestCuts = 0;
    double bestDrop = 0;
    const Candidate* sharpest = &cands.front();
    std::vector<std::size_t> cuts;
    std::vector<double> iv;
    for (const Candidate& cand : cands) {
        if (cand.drop > sharpest->drop) sharpest = &cand;
        cuts.assign(order.begin(), order.begin() + std::ptrdiff_t(cand.cuts));
        std::sort(cuts.begin(), cuts.end());
        iv.clear();
        for (std::size_t j = 0; j < cuts.size(); ++j) {
            const std::int64_t next = j + 1 < cuts.size() ? pieces[cuts[j + 1]].second : pieces.back().second;
            iv.push_back(double(next - (activeSpans ? pieces[cuts[j] + 1].first : pieces[cuts[j]].second)));
        }
        const double P = medianOf(iv);
        double regular = -1;
        for (double x : iv)
            if (x >= P / p.regularBand && x <= P * p.regularBand) ++regular;
        const double score = regular * std::pow(std::max(P, 0.0), lengthExponent);
        if (score > bestScore || (score == bestScore && score > 0 && cand.cuts > bestCuts)) {
            bestScore = score;
            bestCuts = cand.cuts;
            bestDrop = cand.drop;
        }
    }
    // Two or three bursts leave no rhythm to judge: cut at a clearly dominant quiet gap.
    if (bestCuts == 0 && sharpest->drop >= 4.0) bestCuts = sharpest->cuts;
    // The rhythm of the majority, when there is none: a 3x slow GPU for 5 of 20 steps and a pause before 4
    // others left 10 steps of the usual length, and the rhythm cut at 72 against 52 ms (1.4x) while every gap
    // between bursts (50-200 ms) stood 7,000x above those inside them (11 of 20 steps found).
    // And when the rhythm's steps do not hold the sharp division's pieces evenly: a step is the same passes
    // each time, so a coarser rhythm holds the same number of them in each step (a distributed optimizer's
    // reduce-scatter and all-gather: two). A pause before each of 5 steps in a row, with 7 more steps slowed,
    // made the pauses the most regular rhythm (one step between each, the first 13 steps in one).
    if (clearGapWins && bestCuts > 0 && sharpest->drop >= 100.0 && sharpest->cuts > bestCuts &&
        (bestDrop < 2.0 || !holdsEvenly(order, bestCuts, sharpest->cuts, p.regularBand)))
        bestCuts = sharpest->cuts;
    cuts.assign(order.begin(), order.begin() + std::ptrdiff_t(bestCuts));
    std::sort(cuts.begin(), cuts.end());
    return cuts;
}

std::vector<std::size_t> chooseCoarseCuts(const std::vector<Piece>& pieces, const StepParams& p) {
    const std::size_t n = pieces.size();
    if (n < 8) return {};
    // Candidates: the c longest quiet gaps, where the gap size drops (as chooseCuts), coarsest first. A step
    // repeats the same passes, so it holds the same number of pieces whatever its length: slow steps, slow
    // links and pauses change the times, not the count. The coarsest candidate whose steps (the first and last,
    // which the capture may cut, aside; at least four) hold 3 or more pieces (median), and where the steps
    // within regularBand of that median (the edge steps: not above it) hold three quarters of the pieces, is
    // the step rhythm (a pause before each of 5 steps in a row cuts those steps as regular as the rhythm, but
    // leaves most pieces in one long group). Its time regularity was not: a 400 ms pause before
    // 5 of 20 steps made the pauses alone the most regular division, and a slow link a finer one (55 cuts).
    std::vector<std::int64_t> gap;
    const std::vector<std::size_t> order = gapsLongestFirst(pieces, gap);
    std::vector<std::size_t> cuts;
    for (std::size_t c = 1; c < n - 1; ++c) {
        const std::int64_t g = gap[order[c - 1]];
        if (g < p.minBoundaryGapNs) break;
        if (double(g) < 1.1 * double(std::max<std::int64_t>(gap[order[c]], 1))) continue;
        if (c + 1 < 6) continue; // four steps besides the edges
        cuts.assign(order.begin(), order.begin() + std::ptrdiff_t(c));
        std::sort(cuts.begin(), cuts.end());
        const std::vector<char> slowed = mergeFragments(pieces, cuts, p.regularBand);
        const std::vector<double> counts = piecesPerStep(cuts, n);
        if (counts.size() < 6) {
            cuts.clear();
            continue;
        }
        const double median = innerMedian(counts);
        if (median < 3) { // finer candidates only put fewer pieces in a step
            cuts.clear();
            break;
        }
        if (evenlyHeld(counts, median, p.regularBand, slowed)) break;
        cuts.clear();
    }
    if (cuts.empty()) return {};
    // Periodic pauses (checkpoints, evaluation) group steps of one sync each, which are alike: the intervals
    // between piece ends inside the coarse steps then spread little (a step's jitter, a few slow steps). DP
    // traffic in the forward and backward passes comes at the pace of the passes (forward, backward, warm-up,
    // cool-down), which differ: a mean absolute deviation of 35-54% of the median on the moe and fsdp presets.
    // Under 15%: no coarse rhythm, unless the rounds that open the coarse steps say otherwise (below). (Not the
    // MAD: most of the intervals may be alike, as an FSDP forward's.)
    std::vector<double> inner, innerGaps;
    for (std::size_t i = 0, c = 0; i + 1 < pieces.size(); ++i) {
        while (c < cuts.size() && cuts[c] < i) ++c;
        if (c < cuts.size() && cuts[c] == i) continue; // the interval spans a cut
        inner.push_back(double(pieces[i + 1].second - pieces[i].second));
        innerGaps.push_back(double(pieces[i + 1].first - pieces[i].second));
    }
    if (inner.empty()) return {};
    const double median = medianOf(inner);
    double deviation = 0;
    for (double x : inner) deviation += std::fabs(x - median);
    if (deviation >= 0.15 * median * double(inner.size())) return cuts;
    // A pause adds quiet, not activity: across a cut that is a pause, the interval between piece ends less the
    // quiet beyond the usual inner gap is one usual interval (the round after the pause is a step's sync like
    // the others). When a step's passes come as rounds whose finest ones merged (an FSDP forward's gathers 1 ms
    // apart, cut as one 18 ms round while the backward's 2 ms rounds 2 ms apart stayed apart: intervals inside
    // 4-5 ms, 7.5% deviation), the round opening each coarse step holds several usual intervals of activity.
    // Coarse when three quarters of the cuts open with more than twice the usual interval.
    const double usualGap = medianOf(innerGaps);
    std::size_t long_ = 0;
    for (std::size_t c : cuts) {
        const double across = double(pieces[c + 1].second - pieces[c].second);
        const double excess = std::max(0.0, double(pieces[c + 1].first - pieces[c].second) - usualGap);
        if (across - excess > 2.0 * median) ++long_;
    }
    return 4 * long_ >= 3 * cuts.size() ? cuts : std::vector<std::size_t>{};
}

DrainScan scanDrains(const std::vector<Piece>& pieces, const std::vector<LinkRecord>& recs, const StepParams& p) {
    DrainScan out;
    const std::size_t n = pieces.size();
    if (n == 0) return out;
    const std::size_t G = n - 1;
    std::uint32_t links = 0;
    for (const LinkRecord& r : recs) links = std::max(links, r.link + 1);
    if (links == 0) {
        out.share.assign(G, 0.0);
        return out;
    }

    // Transfers, as depth changes after the piece they fall in: a record that starts while the previous one of
    // its link and direction is still open (another channel) or within kTransferJoinNs of its end (the next
    // active-timeout piece) continues that transfer.
    constexpr std::int64_t kTransferJoinNs = 5'000;
    struct Event {
        std::uint32_t piece, link;
        std::int32_t delta;
    };
    std::vector<Event> events;
    std::vector<std::int64_t> lastEnd(2 * std::size_t(links), std::numeric_limits<std::int64_t>::min());
    std::size_t k = 0;
    for (const LinkRecord& r : recs) {
        while (k + 1 < n && pieces[k].second < r.s) ++k;
        std::int64_t& last = lastEnd[2 * std::size_t(r.link) + (r.dir > 0 ? 1 : 0)];
        const bool joins = last != std::numeric_limits<std::int64_t>::min() && r.s <= last + kTransferJoinNs;
        last = joins ? std::max(last, r.e) : r.e;
        if (!joins) events.push_back({std::uint32_t(k), r.link, r.dir > 0 ? 1 : -1});
    }

    // Sweep the gaps: a link rests when its depth is at its lowest so far (in flight is never negative; a
    // capture that starts mid-step sees the gradients of earlier activations come back first, and reaches
    // the resting level at the first drain). Where most links rest the pipeline is drained, so the others
    // are re-levelled there (a gradient whose every record was lost leaves its link one too deep).
    std::vector<bool> head(links, false);
    for (const LinkRecord& r : recs) head[r.link] = head[r.link] || r.head;
    const std::size_t heads = std::size_t(std::count(head.begin(), head.end(), true));
    std::vector<int> depth(links, 0), level(links, 0);
    std::size_t atRest = links, headsAtRest = heads;
    std::vector<double>& share = out.share;
    share.resize(n); // after each piece; the last one is the state the capture ends in
    bool drained = false;
    std::size_t e = 0;
    for (std::size_t g = 0; g < n; ++g) {
        for (; e < events.size() && events[e].piece == g; ++e) {
            const std::uint32_t l = events[e].link;
            const bool was = depth[l] == level[l];
            depth[l] += events[e].delta;
            level[l] = std::min(level[l], depth[l]);
            const bool now = depth[l] == level[l];
            atRest = atRest + now - was;
            if (head[l]) headsAtRest = headsAtRest + now - was;
        }
        share[g] = double(atRest) / double(links);
        if (heads) share[g] = std::min(share[g], double(headsAtRest) / double(heads));
        if (share[g] < p.drainedShare) continue;
        if (!drained) // gradients came back for activations sent before the capture began
            out.startsMidStep = std::any_of(level.begin(), level.end(), [](int v) { return v < 0; });
        drained = true;
        if (atRest < links) {
            level = depth;
            atRest = links;
            headsAtRest = heads;
        }
    }
    out.endShare = share.back();
    share.pop_back();
    return out;
}

std::vector<std::size_t> choosePipelineCuts(const std::vector<Piece>& pieces, const std::vector<LinkRecord>& recs,
                                            const StepParams& p, DrainScan* scanOut) {
    DrainScan scan = scanDrains(pieces, recs, p);
    const std::vector<double>& share = scan.share;
    std::vector<Piece> drained;          // the activity between drained gaps
    std::vector<std::size_t> lastPiece; // of each
    std::int64_t start = pieces.empty() ? 0 : pieces.front().first;
    for (std::size_t g = 0; g < share.size(); ++g) {
        if (share[g] < p.drainedShare || pieces[g + 1].first - pieces[g].second < p.minBoundaryGapNs) continue;
        drained.push_back({start, pieces[g].second});
        lastPiece.push_back(g);
        start = pieces[g + 1].first;
    }
    if (drained.empty()) {
        if (scanOut) *scanOut = std::move(scan);
        return chooseCuts(pieces, p, 1.0);
    }
    drained.push_back({start, pieces.back().second});
    lastPiece.push_back(pieces.size() - 1);
    std::vector<std::size_t> cuts = chooseCuts(drained, p, 1.0, true);
    for (std::size_t& c : cuts) c = lastPiece[c];
    if (scanOut) *scanOut = std::move(scan);
    return cuts;
}

StepDivision divideSteps(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                         const ParallelismResult& par, const StepParams& params, std::int64_t captureFirstNs,
                         const JobIndex* index) {
    StepDivision out;
    if (job.records.empty()) return out;
    std::optional<JobIndex> own;
    const JobIndex& ix = index ? *index : own.emplace(flows, topology, job, par);
    const std::size_t nics = ix.size();

    // The series: DP records grouped by DP group; without DP traffic, PP records as one group.
    std::vector<SyncRec> dpRecs, ppRecs;
    for (std::uint32_t r : job.records) {
        const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
        if (a < 0 || b < 0) continue;
        const SyncRec sr{flows.startNs[r], std::max(flows.endNs[r], flows.startNs[r]), a, b, 0};
        // A DP record inside one DP group; a pipeline collective (tied embeddings) joins two groups and is no
        // group's sync.
        if (ix.kind(a, b) == PairKind::DP && ix.dpGroup(a) >= 0 && ix.dpGroup(a) == ix.dpGroup(b)) {
            dpRecs.push_back(sr);
            dpRecs.back().group = ix.dpGroup(a);
        } else {
            ppRecs.push_back(sr);
        }
    }
    std::vector<SyncRec> exchanges = ringHopsOnly(dpRecs, nics, params.exchangeWindowNs);
    std::vector<SyncRec> recs;
    std::vector<LinkRecord> links; // PP records between adjacent stages, for the drain test (no DP traffic only)
    if (dpRecs.empty() && !ppRecs.empty()) {
        std::unordered_map<std::uint64_t, std::uint32_t> linkOf;
        links.reserve(ppRecs.size());
        for (std::uint32_t r : job.records) {
            const int a = ix.local(flows.src[r]), b = ix.local(flows.dst[r]);
            if (a < 0 || b < 0 || std::abs(ix.stage(a) - ix.stage(b)) != 1) continue;
            const auto [it, added] =
                linkOf.try_emplace(pairKey(std::uint32_t(a), std::uint32_t(b)), std::uint32_t(linkOf.size()));
            links.push_back({flows.startNs[r], std::max(flows.endNs[r], flows.startNs[r]), it->second,
                             ix.stage(b) > ix.stage(a) ? 1 : -1, std::min(ix.stage(a), ix.stage(b)) == 0});
        }
        auto byStart = [](const LinkRecord& x, const LinkRecord& y) { return x.s < y.s; };
        if (!std::is_sorted(links.begin(), links.end(), byStart))
            std::stable_sort(links.begin(), links.end(), byStart);
    }
    if (!dpRecs.empty()) {
        out.source = StepSource::DataParallel;
        recs = std::move(dpRecs);
        // Without a pipeline every ring syncs in the same phase, after the backward pass, and the job-wide quiet
        // time between syncs is the forward pass: the syncs of all rings are cut as one series. Per ring, a ring
        // slowed by a slow link (a NIC fallen back from 200 to 25 Gb/s) stretches its sync until its own rhythm
        // cuts it apart (`pure-dp` with an 8x slow link: as few as 16 of 20 steps found, up to 10 spurious).
        // With a pipeline the stages sync one after another (the last stage first), so each ring is cut on its
        // own.
        const bool onePhase = std::all_of(recs.begin(), recs.end(), [&](const SyncRec& r) {
            return ix.stage(r.src) == ix.stage(recs.front().src);
        });
        if (onePhase) {
            for (SyncRec& r : recs) r.group = 0;
            for (SyncRec& r : exchanges) r.group = 0;
        }
    } else {
        out.source = StepSource::Pipeline;
        recs = std::move(ppRecs);
    }
    if (recs.empty()) return out;
    {
        // Group by group, keeping start order (records come by start): a counting sort, linear.
        int groups = 0;
        for (const SyncRec& r : recs) groups = std::max(groups, r.group + 1);
        std::vector<std::size_t> at(std::size_t(groups) + 1, 0);
        for (const SyncRec& r : recs) ++at[std::size_t(r.group) + 1];
        for (std::size_t g = 1; g < at.size(); ++g) at[g] += at[g - 1];
        std::vector<SyncRec> sorted(recs.size());
        for (const SyncRec& r : recs) sorted[at[std::size_t(r.group)]++] = r;
        recs = std::move(sorted);
    }

    // 1. Bursts per group.
    struct Burst {
        std::int64_t s, e;
        int group;
        bool opener; // a distributed optimizer's parameter all-gather: part of the next step, no step end
    };
    std::vector<Burst> bursts;
    std::vector<std::uint32_t> burstOf(recs.size());
    DrainScan drains; // PP only: where the pipeline is at rest
    for (std::size_t a = 0; a < recs.size();) {
        std::size_t b = a;
        while (b < recs.size() && recs[b].group == recs[a].group) ++b;
        auto byStart = [](const SyncRec& x, const SyncRec& y) { return x.s < y.s; };
        if (!std::is_sorted(recs.begin() + std::ptrdiff_t(a), recs.begin() + std::ptrdiff_t(b), byStart))
            std::sort(recs.begin() + std::ptrdiff_t(a), recs.begin() + std::ptrdiff_t(b), byStart);
        std::vector<std::uint32_t> pieceOf;
        pieceOf.reserve(b - a);
        const std::vector<Piece> pieces =
            unionPieces(recs.begin() + std::ptrdiff_t(a), recs.begin() + std::ptrdiff_t(b), &pieceOf);
        std::vector<std::size_t> cuts = out.source == StepSource::DataParallel
                                            ? chooseCuts(pieces, params, 0.5, false, true)
                                            : choosePipelineCuts(pieces, links, params, &drains);
        std::vector<char> openerBurst; // per burst of this group: a parameter all-gather that opens a step
        if (out.source == StepSource::DataParallel) splitDistributedOptimizer(pieces, cuts, openerBurst, params);
        std::vector<std::uint32_t> burstOfPiece(pieces.size());
        const std::uint32_t base = std::uint32_t(bursts.size());
        std::size_t c = 0;
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            const std::uint32_t id = base + std::uint32_t(c);
            if (id == bursts.size())
                bursts.push_back({pieces[i].first, pieces[i].second, recs[a].group,
                                  c < openerBurst.size() && openerBurst[c] != 0});
            bursts[id].e = std::max(bursts[id].e, pieces[i].second);
            burstOfPiece[i] = id;
            if (c < cuts.size() && cuts[c] == i) ++c;
        }
        for (std::size_t i = a; i < b; ++i) burstOf[i] = burstOfPiece[pieceOf[i - a]];
        a = b;
    }
    // Records of expert pairs that start inside a sync burst of their group, give or take a boundary gap (for
    // clock skew, and for the next active-timeout piece of a hop whose own record on a one-way pair was lost),
    // are the ring's hops on those pairs: they rejoin their burst, and may end it. Records come by start, so
    // a hop's pieces extend the burst one after the other.
    if (!exchanges.empty()) {
        std::vector<std::uint32_t> byGroup(bursts.size()); // bursts by group, then start
        std::iota(byGroup.begin(), byGroup.end(), 0u);
        std::stable_sort(byGroup.begin(), byGroup.end(), [&](std::uint32_t x, std::uint32_t y) {
            return std::pair(bursts[x].group, bursts[x].s) < std::pair(bursts[y].group, bursts[y].s);
        });
        for (const SyncRec& r : exchanges) {
            auto it = std::upper_bound(byGroup.begin(), byGroup.end(), std::pair(r.group, r.s + params.minBoundaryGapNs),
                                       [&](const std::pair<int, std::int64_t>& v, std::uint32_t id) {
                                           return v < std::pair(bursts[id].group, bursts[id].s);
                                       });
            if (it == byGroup.begin()) continue;
            const std::uint32_t id = *std::prev(it);
            if (bursts[id].group != r.group || r.s > bursts[id].e + params.minBoundaryGapNs) continue;
            recs.push_back(r);
            burstOf.push_back(id);
            bursts[id].e = std::max(bursts[id].e, r.e);
        }
    }
    // Every sync burst with its records, openers included, for the sync windows of isExchange (below).
    const std::vector<SyncRec> allRecs = exchanges.empty() ? std::vector<SyncRec>{} : recs;
    const std::vector<std::uint32_t> allBurstOf = exchanges.empty() ? std::vector<std::uint32_t>{} : burstOf;
    const std::vector<Burst> allBursts = exchanges.empty() ? std::vector<Burst>{} : bursts;

    // The all-gathers that open steps end none: their records and bursts leave the sync series.
    if (std::any_of(bursts.begin(), bursts.end(), [](const Burst& b) { return b.opener; })) {
        std::vector<std::uint32_t> newId(bursts.size());
        std::vector<Burst> kept;
        for (std::size_t id = 0; id < bursts.size(); ++id) {
            newId[id] = std::uint32_t(kept.size());
            if (!bursts[id].opener) kept.push_back(bursts[id]);
        }
        std::size_t w = 0;
        for (std::size_t i = 0; i < recs.size(); ++i)
            if (!bursts[burstOf[i]].opener) {
                recs[w] = recs[i];
                burstOf[w++] = newId[burstOf[i]];
            }
        recs.resize(w);
        burstOf.resize(w);
        bursts = std::move(kept);
        out.notes.push_back("two DP collectives per step (a distributed optimizer: gradient reduce-scatter, then "
                            "parameter all-gather): steps end with the reduce-scatter, the all-gather opens the "
                            "next step");
    }

    // 2. Rounds: a group syncs once per round and rounds are apart by the inter-step quiet time. The first
    // pass opens a round when a group repeats; its quiet gaps give the scale for the second pass, which also
    // opens a round on a long quiet gap (a group that missed a round) and keeps a group's split burst whole.
    std::vector<std::uint32_t> byStart(bursts.size());
    std::iota(byStart.begin(), byStart.end(), 0u);
    std::stable_sort(byStart.begin(), byStart.end(),
                     [&](std::uint32_t x, std::uint32_t y) { return bursts[x].s < bursts[y].s; });
    int groups = 0;
    for (const Burst& b : bursts) groups = std::max(groups, b.group + 1);
    std::vector<std::uint32_t> roundOf(bursts.size());
    // A group's burst that follows its previous one by less than a fifth of the group's usual gap between
    // bursts is that burst cut in two (a ring slowed by a slow link waits for its slowest hop between buckets):
    // no repeat. Else one such split would open a round in the middle of another, and every later round
    // would hold the end of one step and the start of the next (the quiet between rounds lost).
    std::vector<double> splitGap(std::size_t(groups), 0.0);
    {
        std::vector<std::vector<double>> own(std::size_t(groups), std::vector<double>{});
        std::vector<std::int64_t> lastEnd(std::size_t(groups), kNever);
        for (std::uint32_t id : byStart) {
            const Burst& b = bursts[id];
            std::int64_t& last = lastEnd[std::size_t(b.group)];
            if (last != kNever) own[std::size_t(b.group)].push_back(double(b.s - last));
            last = std::max(last == kNever ? b.e : last, b.e);
        }
        for (std::size_t g = 0; g < own.size(); ++g) splitGap[g] = 0.2 * medianOf(own[g]);
    }
    auto formRounds = [&](double quietNs) {
        std::vector<int> lastRound(std::size_t(groups), -1);
        std::vector<std::int64_t> lastEnd(std::size_t(groups), 0);
        int cur = -1;
        std::int64_t curEnd = 0;
        std::vector<double> gaps;
        for (std::uint32_t id : byStart) {
            const Burst& b = bursts[id];
            const double g = cur < 0 ? 0.0 : double(b.s - curEnd);
            const bool repeat = cur >= 0 && lastRound[std::size_t(b.group)] == cur;
            bool open = cur < 0;
            if (quietNs <= 0) open = open || (repeat && double(b.s - lastEnd[std::size_t(b.group)]) >= splitGap[std::size_t(b.group)]);
            else open = open || g > 0.5 * quietNs || (repeat && g > 0.2 * quietNs);
            if (open) {
                if (cur >= 0) gaps.push_back(g);
                ++cur;
                curEnd = b.e;
            }
            curEnd = std::max(curEnd, b.e);
            lastRound[std::size_t(b.group)] = cur;
            lastEnd[std::size_t(b.group)] = std::max(lastEnd[std::size_t(b.group)], b.e);
            roundOf[id] = std::uint32_t(cur);
        }
        return gaps;
    };
    const double quiet = medianOf(formRounds(0));
    if (quiet >= double(params.minBoundaryGapNs)) formRounds(quiet);
    std::size_t rounds = 0;
    for (std::uint32_t r : roundOf) rounds = std::max<std::size_t>(rounds, r + 1);

    // Rounds that are one step's sync in pieces. Behind a 3x slow GPU the stages of a pipeline sync tens of
    // milliseconds apart (each half of the groups then forms a round: a 114 ms step found as 87 + 27 ms), and
    // a group whose sync waits in the middle can have its burst cut in two by its own rhythm (the tail then
    // opens a round). So a round that lies nearer to the previous round than to the next joins it when its
    // groups are all missing from that round (they complete it), or when it is at most half of the groups, all
    // of which already synced in that round (a tail).
    if (rounds >= 2 && groups >= 3) {
        std::vector<std::int64_t> rs(rounds, kNever), re(rounds, std::numeric_limits<std::int64_t>::min());
        std::vector<std::vector<char>> has(rounds, std::vector<char>(std::size_t(groups), 0));
        for (std::size_t id = 0; id < bursts.size(); ++id) {
            const std::size_t r = roundOf[id];
            rs[r] = std::min(rs[r], bursts[id].s);
            re[r] = std::max(re[r], bursts[id].e);
            has[r][std::size_t(bursts[id].group)] = 1;
        }
        std::vector<std::uint32_t> into(rounds);
        std::uint32_t kept = 0;
        std::int64_t keptEnd = 0;
        std::vector<char> keptHas;
        for (std::size_t r = 0; r < rounds; ++r) {
            int members = 0, repeats = 0, keptMembers = 0;
            for (int g = 0; g < groups; ++g) {
                const bool inKept = r > 0 && keptHas[std::size_t(g)];
                keptMembers += inKept;
                if (has[r][std::size_t(g)]) {
                    ++members;
                    repeats += inKept;
                }
            }
            const std::int64_t toNext = r + 1 < rounds ? rs[r + 1] - re[r] : std::numeric_limits<std::int64_t>::max();
            const bool completes = repeats == 0 && keptMembers < groups;
            const bool tail = repeats == members && 2 * members <= groups;
            if (r > 0 && (completes || tail) && rs[r] - keptEnd < toNext) {
                into[r] = kept;
                keptEnd = std::max(keptEnd, re[r]);
                for (int g = 0; g < groups; ++g) keptHas[std::size_t(g)] |= has[r][std::size_t(g)];
                continue;
            }
            into[r] = kept = r == 0 ? 0 : kept + 1;
            keptEnd = re[r];
            keptHas = has[r];
        }
        for (std::uint32_t& r : roundOf) r = into[r];
        rounds = std::size_t(kept) + 1;
    }

    // 3. Clock alignment: per round and PP stage, each NIC's first sync send; NICs of one stage start
    // together, so a NIC's lag behind the stage median is its exporter's clock offset (pooled per leaf).
    std::vector<std::int64_t> nicOffset(nics, 0);
    if (params.alignClocks && rounds > 0) {
        std::vector<std::int64_t> first(rounds * nics, kNever);
        for (std::size_t i = 0; i < recs.size(); ++i) {
            std::int64_t& f = first[roundOf[burstOf[i]] * nics + std::size_t(recs[i].src)];
            f = std::min(f, recs[i].s);
        }
        int stages = 1;
        for (std::size_t l = 0; l < nics; ++l) stages = std::max(stages, ix.stage(int(l)) + 1);
        // Key of the clock a NIC's records are stamped with: its leaf, else the NIC itself.
        auto clockKey = [&](std::size_t l) { return ix.leaf(int(l)) >= 0 ? ix.leaf(int(l)) : -1 - int(l); };
        std::unordered_map<int, std::vector<double>> deviations;
        std::vector<double> vals;
        for (std::size_t r = 0; r < rounds; ++r) {
            for (int st = 0; st < stages; ++st) {
                // Relative to the earliest start: epoch nanoseconds do not fit a double's 53 bits.
                vals.clear();
                std::int64_t base = kNever;
                for (std::size_t l = 0; l < nics; ++l)
                    if (ix.stage(int(l)) == st) base = std::min(base, first[r * nics + l]);
                if (base == kNever) continue;
                for (std::size_t l = 0; l < nics; ++l)
                    if (ix.stage(int(l)) == st && first[r * nics + l] != kNever)
                        vals.push_back(double(first[r * nics + l] - base));
                if (vals.size() < 2) continue;
                const double ref = medianOf(vals);
                for (std::size_t l = 0; l < nics; ++l)
                    if (ix.stage(int(l)) == st && first[r * nics + l] != kNever)
                        deviations[clockKey(l)].push_back(double(first[r * nics + l] - base) - ref);
            }
        }
        std::unordered_map<int, std::int64_t> offsetOfKey;
        for (auto& [key, dev] : deviations) {
            if (dev.size() < 3) continue;
            const double m = medianOf(std::move(dev));
            if (std::fabs(m) <= double(params.maxClockOffsetNs)) offsetOfKey[key] = std::llround(m);
        }
        bool any = false;
        for (std::size_t l = 0; l < nics; ++l) {
            auto it = offsetOfKey.find(clockKey(l));
            if (it != offsetOfKey.end()) nicOffset[l] = it->second;
            any = any || nicOffset[l] != 0;
        }
        if (any) {
            out.clockOffsetNs.assign(flows.endpoints.size(), 0);
            for (std::size_t l = 0; l < nics; ++l) out.clockOffsetNs[ix.endpoint(int(l))] = nicOffset[l];
        }
    }

    // The ring's sync bursts of the groups whose expert exchanges left the series, aligned, for isExchange.
    if (!exchanges.empty()) {
        std::vector<Piece> window(allBursts.size(), {kNever, std::numeric_limits<std::int64_t>::min()});
        for (std::size_t i = 0; i < allRecs.size(); ++i) {
            const std::int64_t off = nicOffset[std::size_t(allRecs[i].src)];
            Piece& w = window[allBurstOf[i]];
            w.first = std::min(w.first, allRecs[i].s - off - params.minBoundaryGapNs);
            w.second = std::max(w.second, allRecs[i].e - off);
        }
        std::unordered_map<int, std::uint32_t> slot; // burst group -> syncWindowsNs index
        for (const SyncRec& r : exchanges) {
            const auto [it, added] = slot.try_emplace(r.group, std::uint32_t(slot.size()));
            const EndpointId a = ix.endpoint(r.src), b = ix.endpoint(r.dst);
            out.expertPairs.push_back({std::min(a, b), std::max(a, b), it->second});
        }
        std::sort(out.expertPairs.begin(), out.expertPairs.end());
        out.expertPairs.erase(std::unique(out.expertPairs.begin(), out.expertPairs.end()), out.expertPairs.end());
        out.syncWindowsNs.resize(slot.size());
        for (std::size_t id = 0; id < allBursts.size(); ++id) {
            auto it = slot.find(allBursts[id].group);
            if (it != slot.end() && window[id].first != kNever) out.syncWindowsNs[it->second].push_back(window[id]);
        }
        for (auto& w : out.syncWindowsNs) std::sort(w.begin(), w.end());
        out.notes.push_back("expert all-to-all between DP peers is told from the gradient sync (a ring's hops go one "
                            "way, to one peer at a time; exchanges go both ways, to several peers at once): steps "
                            "end with the ring's sync");
    }

    // 4. Step ends: the latest aligned sync end of each round (and its first sync start), by end.
    auto roundBounds = [&](const std::vector<std::uint32_t>& of, std::vector<std::int64_t>& end,
                           std::vector<std::int64_t>& start) {
        std::size_t count = 0;
        for (std::uint32_t r : of) count = std::max<std::size_t>(count, r + 1);
        std::vector<std::int64_t> roundEnd(count, std::numeric_limits<std::int64_t>::min());
        std::vector<std::int64_t> roundStart(count, kNever);
        for (std::size_t i = 0; i < recs.size(); ++i) {
            const std::size_t r = of[burstOf[i]];
            const std::int64_t off = nicOffset[std::size_t(recs[i].src)];
            roundEnd[r] = std::max(roundEnd[r], recs[i].e - off);
            roundStart[r] = std::min(roundStart[r], recs[i].s - off);
        }
        std::vector<std::size_t> ro(count);
        std::iota(ro.begin(), ro.end(), std::size_t(0));
        std::sort(ro.begin(), ro.end(), [&](std::size_t x, std::size_t y) { return roundEnd[x] < roundEnd[y]; });
        for (std::size_t r : ro) {
            if (!end.empty() && roundEnd[r] <= end.back()) continue; // a round inside the one before
            end.push_back(roundEnd[r]);
            start.push_back(roundStart[r]);
        }
    };
    std::vector<std::int64_t> ends, syncStarts;
    roundBounds(roundOf, ends, syncStarts);
    // Micro-batches still in flight after the last record: the capture ends inside that step.
    if (out.source == StepSource::Pipeline && !drains.share.empty() && drains.endShare < params.drainedShare &&
        ends.size() > 1) {
        ends.pop_back();
        syncStarts.pop_back();
    }

    // 4b. DP traffic all through the step (ZeRO-3 / FSDP parameter all-gathers and gradient reduce-scatters per
    // layer group; expert all-to-all between DP peers where it could not be told from the ring): the rounds
    // above follow that traffic's micro-batch or layer rhythm, and the step is a coarser rhythm over them. A
    // step ends with the job-wide quiet of the optimizer: after the last sync no record of the job is in
    // flight until the next step's first transfer. So each round is taken as a piece from the job's first
    // activity after the previous round end to its own end (the gap between pieces is the job-wide quiet that
    // follows a round), and chooseCoarseCuts keeps the rounds that end steps, or all of them.
    if (out.source == StepSource::DataParallel && ends.size() >= 4) {
        const std::vector<std::int64_t>& fineEnds = ends; // the rounds, until the coarse steps replace them
        const std::vector<std::int64_t>& fineStarts = syncStarts;
        std::vector<Piece> act;
        act.reserve(job.records.size());
        for (std::uint32_t r : job.records) {
            const int a = ix.local(flows.src[r]);
            if (a < 0 || ix.local(flows.dst[r]) < 0) continue; // storage, management: not the job's rhythm
            const std::int64_t off = nicOffset[std::size_t(a)];
            act.push_back({flows.startNs[r] - off, std::max(flows.endNs[r], flows.startNs[r]) - off});
        }
        std::sort(act.begin(), act.end());
        std::vector<Piece> jobPieces;
        for (const Piece& x : act) {
            if (jobPieces.empty() || x.first > jobPieces.back().second) jobPieces.push_back(x);
            else jobPieces.back().second = std::max(jobPieces.back().second, x.second);
        }
        auto piecesOf = [&](const std::vector<std::int64_t>& roundEnds) {
            std::vector<Piece> out;
            std::int64_t from = std::min(jobPieces.front().first, roundEnds.front());
            for (std::int64_t e : roundEnds) {
                out.push_back({std::max(from, out.empty() ? from : out.back().second), e});
                // The job's next activity: at once when a record is still in flight at e, else the next piece.
                auto next = std::upper_bound(jobPieces.begin(), jobPieces.end(), e,
                                             [](std::int64_t v, const Piece& x) { return v < x.first; });
                const bool busy = next != jobPieces.begin() && std::prev(next)->second > e;
                from = busy || next == jobPieces.end() ? e : next->first;
            }
            return out;
        };
        const std::vector<Piece> roundPieces = piecesOf(fineEnds);
        const std::vector<std::size_t> cuts = chooseCoarseCuts(roundPieces, params);
        if (!cuts.empty()) {
            std::vector<std::int64_t> coarseEnds, coarseSync;
            for (std::size_t c : cuts) {
                coarseEnds.push_back(fineEnds[c]);
                coarseSync.push_back(fineStarts[c]);
            }
            // The rounds after the last cut are the last step, or a step the capture (or a crash) cuts short:
            // kept when their activity lasts as long as the usual step's (within regularBand).
            std::vector<double> spans;
            for (std::size_t j = 1; j < cuts.size(); ++j)
                spans.push_back(double(fineEnds[cuts[j]] - roundPieces[cuts[j - 1] + 1].first));
            const double lastSpan = double(fineEnds.back() - roundPieces[cuts.back() + 1].first);
            if (spans.empty() || lastSpan * params.regularBand >= medianOf(spans)) {
                coarseEnds.push_back(fineEnds.back());
                coarseSync.push_back(fineStarts.back());
            }
            ends = std::move(coarseEnds);
            syncStarts = std::move(coarseSync);
            out.notes.push_back("data-parallel traffic runs all through each step (expert all-to-all, or ZeRO-3 "
                                "parameter gathers): steps end at the job-wide quiet of the optimizer");
        }
    }

    // 5. Step 0 starts at the job's first record; each step's first activity; traffic after the last end.
    const std::size_t K = ends.size();
    std::vector<std::int64_t> firstAct(K, kNever);
    std::int64_t jobFirst = kNever, trailingEnd = std::numeric_limits<std::int64_t>::min();
    std::size_t trailing = 0;
    for (std::uint32_t r : job.records) {
        const int a = ix.local(flows.src[r]);
        const std::int64_t off = a >= 0 ? nicOffset[std::size_t(a)] : 0;
        const std::int64_t s = flows.startNs[r] - off;
        jobFirst = std::min(jobFirst, s);
        const std::size_t k = std::size_t(std::lower_bound(ends.begin(), ends.end(), s) - ends.begin());
        if (k < K) {
            firstAct[k] = std::min(firstAct[k], s);
        } else {
            ++trailing;
            trailingEnd = std::max(trailingEnd, flows.endNs[r] - off);
        }
    }
    for (std::size_t k = 0; k < K; ++k) {
        StepInfo st;
        st.index = int(k);
        st.startNs = k == 0 ? std::min(jobFirst, ends[0]) : ends[k - 1];
        st.endNs = ends[k];
        out.steps.push_back(st);
        out.firstActivityNs.push_back(firstAct[k] == kNever ? st.startNs : firstAct[k]);
        out.syncStartNs.push_back(std::max(syncStarts[k], st.startNs));
        out.syncEndNs.push_back(ends[k]);
    }
    std::vector<double> durations;
    for (std::size_t k = 1; k < K; ++k) durations.push_back(double(out.steps[k].durationNs()));
    out.medianStepNs = K > 1 ? std::llround(medianOf(durations)) : (K ? out.steps[0].durationNs() : 0);

    // 6. BOCD on the intervals between sync rounds: where the rhythm changes.
    out.changeProbability.assign(K, 0.0);
    if (durations.size() >= 4) {
        BocdParams bp = params.bocd;
        bp.segmentation = false;
        const BocdResult br = runBocd(durations, bp);
        for (std::size_t i = 1; i < durations.size(); ++i) out.changeProbability[i + 1] = br.cpProbability[i];
        for (std::size_t cp : br.changePoints) out.changePoints.push_back(cp + 1);
    }

    // Edges of the capture.
    if (K > 0 && ((captureFirstNs != 0 && jobFirst - captureFirstNs < 1'000'000) || drains.startsMidStep)) {
        out.firstStepCut = true;
        out.notes.push_back("the job was already running when the capture started: step 0 starts at its first "
                            "record and is partial");
    }
    if (trailing > 0 && K > 0 && trailingEnd - ends.back() > out.medianStepNs / 10) {
        out.lastStepCut = true;
        out.notes.push_back(std::to_string(trailing) + " records after the last gradient synchronization belong to "
                            "a step the capture does not finish; it is not reported");
    }
    if (out.source == StepSource::Pipeline && K > 0)
        out.notes.push_back("no data-parallel traffic on the network: steps follow the pipeline traffic rhythm "
                            "and end with the last PP transfer of each step");
    return out;
}

} // namespace prism
