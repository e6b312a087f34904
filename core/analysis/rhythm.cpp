#include "analysis/rhythm.h"

#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>

namespace prism {

std::vector<std::pair<std::int64_t, std::int64_t>>
joinUnions(const std::vector<std::pair<std::int64_t, std::int64_t>>& a,
           const std::vector<std::pair<std::int64_t, std::int64_t>>& b) {
    std::vector<std::pair<std::int64_t, std::int64_t>> all(a.size() + b.size()), out;
    std::merge(a.begin(), a.end(), b.begin(), b.end(), all.begin());
    out.reserve(all.size());
    for (const auto& x : all) {
        if (!out.empty() && out.back().second >= x.first) out.back().second = std::max(out.back().second, x.second);
        else out.push_back(x);
    }
    return out;
}

namespace {

using Piece = std::pair<std::int64_t, std::int64_t>;

} // namespace

void joinLulls(std::vector<Piece>& pieces) {
    std::size_t w = 0;
    for (std::size_t i = 1; i < pieces.size(); ++i) {
        Piece& last = pieces[w];
        const double gap = double(pieces[i].first - last.second);
        const double shorter = double(std::min(last.second - last.first, pieces[i].second - pieces[i].first));
        if (gap < kLullShare * shorter && gap < double(kLullNs)) last.second = std::max(last.second, pieces[i].second);
        else pieces[++w] = pieces[i];
    }
    if (!pieces.empty()) pieces.resize(w + 1);
}

// The cuts less those at a lull: where the gaps between bursts fall into three classes (a collective's buckets a
// lull apart, the optimizer's quiet, the step's compute), the smallest class is inside collectives. The two
// sharpest drops in the sorted gaps (4x or more) separate the classes.
static std::vector<std::size_t> withoutLullCuts(const std::vector<Piece>& pieces, const std::vector<std::size_t>& cuts) {
    std::vector<double> gaps;
    for (std::size_t c : cuts)
        if (c + 1 < pieces.size()) gaps.push_back(double(std::max<std::int64_t>(1, pieces[c + 1].first - pieces[c].second)));
    if (gaps.size() < 6) return cuts;
    std::vector<double> sorted = gaps;
    std::sort(sorted.begin(), sorted.end());
    std::size_t top = 0, second = sorted.size();
    double topRatio = 0, secondRatio = 0;
    for (std::size_t j = 0; j + 1 < sorted.size(); ++j)
        if (sorted[j + 1] / sorted[j] > topRatio) topRatio = sorted[j + 1] / sorted[j], top = j;
    for (std::size_t j = 0; j + 1 < sorted.size(); ++j)
        if (j != top && sorted[j + 1] / sorted[j] > secondRatio) secondRatio = sorted[j + 1] / sorted[j], second = j;
    if (topRatio < 4 || secondRatio < 4) return cuts;
    const double lull = sorted[std::min(top, second)];
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < cuts.size(); ++i)
        if (i >= gaps.size() || gaps[i] > lull) out.push_back(cuts[i]);
    return out;
}

void splitDistributedOptimizer(const std::vector<Piece>& pieces, std::vector<std::size_t>& cutsIn,
                               std::vector<char>& opener, const StepParams& params) {
    opener.clear();
    if (pieces.size() < 2) return;
    std::vector<std::size_t> cuts = withoutLullCuts(pieces, cutsIn);
    std::vector<std::pair<std::size_t, std::size_t>> bursts; // pieces [lo, hi]
    std::size_t lo = 0;
    for (std::size_t c : cuts) {
        bursts.push_back({lo, c});
        lo = c + 1;
    }
    if (lo < pieces.size()) bursts.push_back({lo, pieces.size() - 1});
    std::vector<std::size_t> split(bursts.size(), 0); // first piece of the part after the dominant gap, 0: none
    std::vector<double> dominantGap(bursts.size(), 0.0);
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
            dominantGap[j] = double(g1);
            ++dominant;
        }
    }
    // The optimizer's quiet is about as long in every step: a burst whose dominant gap is far shorter than the
    // others' (a quarter of their median) is one collective with a lull between its buckets, not two. (The last
    // reduce-scatter of a 46 s-step job, split at a 50 µs lull against 50 ms optimizer gaps, was taken for an
    // all-gather and its step lost.)
    {
        std::vector<double> gaps;
        for (double g : dominantGap)
            if (g > 0) gaps.push_back(g);
        const double usual = medianOf(gaps);
        for (std::size_t j = 0; j < bursts.size(); ++j)
            if (split[j] && dominantGap[j] < 0.25 * usual) {
                split[j] = 0;
                --dominant;
            }
    }
    // (Half of all the bursts, not only of those with inner gaps: where the cut already parted the reduce-scatter
    // from the all-gather, the few bursts that still have inner gaps hold a lull between two buckets.)
    const bool splitting = dominant >= 3 && 2 * dominant >= multi && 2 * dominant >= bursts.size();
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
    auto vote = [&](double apart) {
        votes[0] = votes[1] = 0;
        voters = 0;
        for (std::size_t k = 1; k + 1 < P; ++k) {
            const double before = std::max(1.0, gapAfter(k - 1)), after = std::max(1.0, gapAfter(k));
            if (std::max(before, after) < apart * std::min(before, after)) continue;
            ++voters;
            const bool isOpener = before < after;
            ++votes[(k % 2 == 0) == isOpener ? 0 : 1];
        }
        return std::max(votes[0], votes[1]);
    };
    // Votes where the quiets differ by 1.5x; or, where an optimizer as long as half the compute leaves jittered
    // gaps closer than that (650-890 ms against 1,040-1,240 ms), by 1.15x from 16 voters on with nine in ten
    // agreeing (evenly spaced jittered steps zigzag by chance: at most 0.5% of draws so, 20-30 steps at 20-50%).
    const int agree = vote(1.5);
    const bool alternate = voters >= 3 && 3 * voters >= 2 * (P - 2) && 4 * agree >= 3 * int(voters);
    if (!alternate) {
        const int close = vote(1.15);
        if (voters < 16 || 3 * voters < 2 * (P - 2) || 10 * close < 9 * int(voters)) return;
    }
    const std::size_t parity = votes[0] >= votes[1] ? 0 : 1;
    cutsIn.clear();
    for (std::size_t k = 0; k + 1 < P; ++k) cutsIn.push_back(parts[k].second);
    opener.assign(P, 0);
    for (std::size_t k = 0; k < P; ++k) opener[k] = k % 2 == parity;
    // A part just before an opener, nearer to it than a fifth of the usual quiet between a reduce-scatter and
    // its all-gather (the optimizer's), is that all-gather cut in two (a lost record between its buckets): an
    // opener too. Else it ends a step (a 2.6 ms step 0, where the first all-gather of the capture was cut).
    std::vector<double> quiet;
    for (std::size_t k = 0; k + 1 < P; ++k)
        if (!opener[k] && opener[k + 1]) quiet.push_back(gapAfter(k));
    const double usualQuiet = medianOf(quiet);
    for (std::size_t k = 0; k + 1 < P; ++k)
        if (!opener[k] && opener[k + 1] && gapAfter(k) < 0.2 * usualQuiet) opener[k] = 1;
}

void splitAtOtherOpeners(const std::vector<Piece>& pieces, std::vector<std::size_t>& cuts, std::vector<char>& opener,
                         const std::vector<std::int64_t>& openerStarts, std::int64_t windowNs,
                         const StepParams& params) {
    if (!opener.empty() || openerStarts.empty() || pieces.empty()) return;
    std::vector<char> opens(pieces.size(), 0); // pieces that start an all-gather
    std::size_t found = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (i > 0 && pieces[i].first - pieces[i - 1].second < params.minBoundaryGapNs) continue;
        auto it = std::lower_bound(openerStarts.begin(), openerStarts.end(), pieces[i].first - windowNs);
        if (it != openerStarts.end() && *it <= pieces[i].first + windowNs) found += opens[i] = 1;
    }
    if (found < 2) return;
    std::vector<std::size_t> newCuts;
    std::vector<char> newOpener;
    bool current = opens[0] != 0; // whether the burst being built is an all-gather
    std::size_t c = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (i > 0 && opens[i] && !current) { // an all-gather starts inside a burst: cut before it
            if (newCuts.empty() || newCuts.back() != i - 1) {
                newCuts.push_back(i - 1);
                newOpener.push_back(0);
            }
            current = true;
        }
        const bool cutAfter = c < cuts.size() && cuts[c] == i;
        if (cutAfter) {
            ++c;
            newCuts.push_back(i);
            newOpener.push_back(current ? 1 : 0);
            current = i + 1 < pieces.size() && opens[i + 1];
        }
    }
    newOpener.push_back(current ? 1 : 0);
    cuts = std::move(newCuts);
    opener = std::move(newOpener);
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

namespace {

// The log gaps between pieces, each less the mean of the `period` gaps around it (a window of one period: a
// slowed stretch of steps moves all its gaps alike, and the window takes that off).
std::vector<double> levelledLogGaps(const std::vector<double>& logGap, std::size_t period) {
    const std::size_t m = logGap.size();
    std::vector<double> prefix(m + 1, 0.0);
    for (std::size_t i = 0; i < m; ++i) prefix[i + 1] = prefix[i] + logGap[i];
    std::vector<double> out(m);
    for (std::size_t i = 0; i < m; ++i) {
        const std::size_t from = std::min(i >= period / 2 ? i - period / 2 : 0, m - period);
        out[i] = logGap[i] - (prefix[from + period] - prefix[from]) / double(period);
    }
    return out;
}

// The phases of a period: the median levelled log gap at each, the phase of each gap, and how well they
// explain the gaps (the mean distance to a gap's phase median over the mean distance to the overall median).
struct PhaseFit {
    std::vector<double> median;
    std::vector<std::size_t> phaseOf; // per gap
    double residualShare = 1.0;
};

void explain(PhaseFit& fit, const std::vector<double>& level) {
    const double overall = medianOf(level);
    double explained = 0, spread = 0;
    for (std::size_t i = 0; i < level.size(); ++i) {
        explained += std::fabs(level[i] - fit.median[fit.phaseOf[i]]);
        spread += std::fabs(level[i] - overall);
    }
    fit.residualShare = spread > 0 ? explained / spread : 1.0;
}

// Each gap's phase as given, the medians per phase from them.
PhaseFit fitGivenPhases(const std::vector<double>& level, std::vector<std::size_t> phaseOf, std::size_t period) {
    PhaseFit fit;
    std::vector<std::vector<double>> at(period);
    for (std::size_t i = 0; i < level.size(); ++i) at[phaseOf[i]].push_back(level[i]);
    for (auto& values : at) fit.median.push_back(values.empty() ? 0.0 : medianOf(std::move(values)));
    fit.phaseOf = std::move(phaseOf);
    explain(fit, level);
    return fit;
}

PhaseFit fitPhases(const std::vector<double>& level, std::size_t period) {
    std::vector<std::size_t> phaseOf(level.size());
    for (std::size_t i = 0; i < level.size(); ++i) phaseOf[i] = i % period;
    return fitGivenPhases(level, std::move(phaseOf), period);
}

// The phase path through the gaps that fits `gaps` and `spans` best (Viterbi): one phase on per gap, or two or
// none at `slipCost`; gap 0 at phase 0. Fills phaseOf, returns the number of slips.
std::size_t slippingPath(const std::vector<double>& level, const std::vector<double>& span, const PhaseFit& gaps,
                         const PhaseFit& spans, double slipCost, std::vector<std::size_t>& phaseOf) {
    const std::size_t m = level.size(), period = gaps.median.size();
    constexpr double kNever = std::numeric_limits<double>::max();
    enum Move : std::uint8_t { kOn, kTwo, kNone };
    std::vector<double> cost(period, kNever), next(period);
    std::vector<std::uint8_t> from(m * period, kOn);
    auto fits = [&](std::size_t i, std::size_t ph) {
        return std::fabs(level[i] - gaps.median[ph]) + std::fabs(span[i] - spans.median[ph]);
    };
    cost[0] = fits(0, 0);
    for (std::size_t i = 1; i < m; ++i) {
        for (std::size_t ph = 0; ph < period; ++ph) {
            const double two = cost[(ph + period - 2) % period], none = cost[ph];
            double best = cost[(ph + period - 1) % period];
            std::uint8_t how = kOn;
            if (two != kNever && two + slipCost < best) best = two + slipCost, how = kTwo;
            if (none != kNever && none + slipCost < best) best = none + slipCost, how = kNone;
            next[ph] = best == kNever ? kNever : best + fits(i, ph);
            from[i * period + ph] = how;
        }
        cost.swap(next);
    }
    std::size_t ph = std::size_t(std::min_element(cost.begin(), cost.end()) - cost.begin()), slips = 0;
    phaseOf.assign(m, 0);
    for (std::size_t i = m; i-- > 0;) {
        phaseOf[i] = ph;
        if (i == 0) break;
        const std::uint8_t how = from[i * period + ph];
        slips += how != kOn;
        ph = (ph + period - (how == kOn ? 1 : how == kTwo ? 2 : 0)) % period;
    }
    return slips;
}

// The phases where the series slips: a step whose optimizer quiet a record spans (an exporter's active timeout
// longer than the quiet) has one piece fewer, and every later gap is a phase off; a split piece adds one. Each
// gap's phase is a path (slippingPath) with slips at twice the series' mean spread a gap, against the phases'
// medians (gaps and pieces together), starting from the first four periods' own and refitted three times. Gap
// 0 keeps phase 0, so a phase names the same place in the step as in an unslipped series. At most one slip in
// two periods, else no fit.
std::optional<std::pair<PhaseFit, PhaseFit>> fitSlippingPhases(const std::vector<double>& level,
                                                               const std::vector<double>& span, std::size_t period) {
    const std::size_t m = level.size(), first = std::min(m, 4 * period);
    PhaseFit gaps = fitPhases(std::vector<double>(level.begin(), level.begin() + std::ptrdiff_t(first)), period);
    PhaseFit spans = fitPhases(std::vector<double>(span.begin(), span.begin() + std::ptrdiff_t(first)), period);
    const double levelMid = medianOf(level), spanMid = medianOf(span);
    double spread = 0;
    for (std::size_t i = 0; i < m; ++i) spread += std::fabs(level[i] - levelMid) + std::fabs(span[i] - spanMid);
    std::vector<std::size_t> phaseOf;
    std::size_t slips = 0;
    for (int round = 0; round < 3; ++round) {
        slips = slippingPath(level, span, gaps, spans, 2 * spread / double(m), phaseOf);
        gaps = fitGivenPhases(level, phaseOf, period);
        spans = fitGivenPhases(span, phaseOf, period);
    }
    if (2 * slips * period > m) return std::nullopt;
    return std::pair(std::move(gaps), std::move(spans));
}

// Whether slipping phases fit the first 16 periods: the path costs O(gaps x period) a period tried, so a
// series with no period (most of them) is turned away on a prefix, and analysis stays linear in the gaps.
bool slipsFit(const std::vector<double>& level, const std::vector<double>& span, std::size_t period) {
    const std::size_t probe = std::min(level.size(), 16 * period);
    if (probe == level.size()) return true;
    const auto fit = fitSlippingPhases({level.begin(), level.begin() + std::ptrdiff_t(probe)},
                                       {span.begin(), span.begin() + std::ptrdiff_t(probe)}, period);
    return fit && fit->first.residualShare + fit->second.residualShare <= 1.0;
}

// The threshold between long and short phases: where the phases form one run of each, both of two or more
// phases (circularly), the two classes apart by more than the gaps stray from their phases; else NaN. First
// halfway between the shortest and the longest phase; failing that, at the other steps between phases, the
// widest first (a step's optimizer quiet may be far shorter than its forward gaps: then halfway puts the
// forward gaps among the long ones, and only the step between forward and backward gaps splits the runs).
double longShortThreshold(const PhaseFit& fit, const std::vector<double>& level, std::size_t period) {
    double stray = 0;
    for (std::size_t i = 0; i < level.size(); ++i) stray += std::fabs(level[i] - fit.median[fit.phaseOf[i]]);
    stray /= double(level.size());
    const double minStep = std::max(std::log(1.3), 2 * stray); // backward compute is 1.5-2.5 times the forward's
    auto twoRuns = [&](double threshold) {
        std::size_t turns = 0, longPhases = 0;
        for (std::size_t ph = 0; ph < period; ++ph) {
            const bool isLong = fit.median[ph] > threshold;
            longPhases += isLong;
            turns += isLong != (fit.median[(ph + 1) % period] > threshold);
        }
        return turns == 2 && longPhases >= 2 && period - longPhases >= 2;
    };
    std::vector<double> sorted = fit.median;
    std::sort(sorted.begin(), sorted.end());
    if (sorted.back() - sorted.front() < minStep) return std::nan("");
    if (const double halfway = (sorted.front() + sorted.back()) / 2; twoRuns(halfway)) return halfway;
    std::vector<std::pair<double, double>> steps; // (width, threshold) between neighbouring phases
    for (std::size_t i = 1; i < sorted.size(); ++i)
        if (sorted[i] - sorted[i - 1] >= minStep)
            steps.push_back({sorted[i] - sorted[i - 1], (sorted[i] + sorted[i - 1]) / 2});
    std::sort(steps.rbegin(), steps.rend());
    for (const auto& [width, threshold] : steps)
        if (twoRuns(threshold)) return threshold;
    return std::nan("");
}

// What choosePeriodicCuts found of a period: the phases of the gaps and of the pieces, the threshold between
// long and short gaps, the boundary phase (the piece after the last long gap) and the level above which the
// gap before a boundary is a pause.
struct Periodic {
    const std::vector<double>& level;
    const std::vector<double>& spanLevel;
    PhaseFit gaps, spans;
    std::size_t period;
    double threshold;
    std::size_t phase = 0;
    double pauseLevel = 0;
    bool slipped = false; // phases per gap from fitSlippingPhases
};

// Steps walked from one boundary to the next, P pieces on, or up to a quarter of P before or after where the P
// gaps and pieces from there match the phases better (a lost round or a split one shifts no later step).
std::vector<PeriodicCut> walkSteps(const Periodic& f) {
    const std::size_t n = f.level.size() + 1, period = f.period;
    auto mismatch = [&](std::size_t j) { // gaps j - 1 .. and pieces j .. against the phases from the boundary
        double cost = 0;
        for (std::size_t k = 0; k < period && j + k < n - 1; ++k) {
            const std::size_t ph = (f.phase + k) % period;
            cost += std::fabs(f.level[j + k - 1] - f.gaps.median[(ph + period - 1) % period]) +
                    std::fabs(f.spanLevel[j + k] - f.spans.median[ph]);
        }
        return cost;
    };
    const std::size_t slack = std::max<std::size_t>(1, period / 4);
    std::vector<PeriodicCut> cuts;
    for (std::size_t at = f.phase == 0 ? period : f.phase; at + 1 < n;) {
        std::size_t best = at;
        double bestCost = mismatch(at);
        for (std::size_t j = at > slack ? at - slack : 1; j <= at + slack && j + 1 < n; ++j)
            if (const double cost = mismatch(j); cost < bestCost) {
                best = j;
                bestCost = cost;
            }
        if (!cuts.empty() && best <= cuts.back().piece) break;
        cuts.push_back({best, f.level[best - 1] > f.pauseLevel});
        at = best + period;
    }
    return cuts;
}

// Steps where the slipping phases (fitSlippingPhases) reach the boundary phase: at each piece of that phase
// (the later of two in a row: a split piece), or at the piece after a skip over it (a record spanned the
// optimizer's quiet: the step ends inside that piece).
std::vector<PeriodicCut> cutsAtPhase(const Periodic& f) {
    const std::vector<std::size_t>& phaseOf = f.gaps.phaseOf;
    const std::size_t period = f.period, before = (f.phase + period - 1) % period;
    std::vector<PeriodicCut> cuts;
    for (std::size_t j = 1; j < phaseOf.size(); ++j) {
        const bool at = phaseOf[j] == f.phase;
        const bool skipped = phaseOf[j - 1] == before && phaseOf[j] == (f.phase + 1) % period;
        if (!at && !skipped) continue;
        if (!cuts.empty() && cuts.back().piece + 1 == j && phaseOf[j - 1] == f.phase) cuts.pop_back();
        cuts.push_back({j, f.level[j - 1] > f.pauseLevel});
    }
    return cuts;
}

} // namespace

std::vector<PeriodicCut> choosePeriodicCuts(const std::vector<Piece>& pieces, const StepParams&) {
    const std::size_t n = pieces.size();
    if (n < 25) return {};
    std::vector<double> logGap(n - 1), logSpan(n - 1);
    for (std::size_t i = 0; i + 1 < n; ++i) {
        logGap[i] = std::log(double(std::max<std::int64_t>(pieces[i + 1].first - pieces[i].second, 1000)));
        logSpan[i] = std::log(double(std::max<std::int64_t>(pieces[i].second - pieces[i].first, 1000)));
    }
    const std::size_t maxPeriod = std::min<std::size_t>(64, logGap.size() / 6);
    for (std::size_t period = 4; period <= maxPeriod; ++period) {
        // The pieces' own lengths (a gather, a gather and a scatter, a scatter and the next step's gathers)
        // repeat with the step too, and jitter them less than compute jitters the gaps.
        const std::vector<double> level = levelledLogGaps(logGap, period);
        const std::vector<double> spanLevel = levelledLogGaps(logSpan, period);
        Periodic f{level, spanLevel, fitPhases(level, period), fitPhases(spanLevel, period), period, 0};
        if (f.gaps.residualShare + f.spans.residualShare > 1.0 && slipsFit(level, spanLevel, period))
            if (auto slipping = fitSlippingPhases(level, spanLevel, period)) {
                std::tie(f.gaps, f.spans) = *slipping;
                f.slipped = true;
            }
        if (f.gaps.residualShare + f.spans.residualShare > 1.0) continue;
        f.threshold = longShortThreshold(f.gaps, level, period);
        if (std::isnan(f.threshold)) continue;
        const std::vector<double>& median = f.gaps.median;
        while (!(median[(f.phase + period - 1) % period] > f.threshold && median[f.phase] <= f.threshold)) ++f.phase;
        std::vector<double> longLevels;
        for (double m : median)
            if (m > f.threshold) longLevels.push_back(m);
        f.pauseLevel = medianOf(longLevels) + std::log(2.0);
        const std::vector<PeriodicCut> cuts = f.slipped ? cutsAtPhase(f) : walkSteps(f);
        std::size_t sharp = 0; // boundaries at a gap that turns from long to short
        for (const PeriodicCut& c : cuts) sharp += level[c.piece - 1] > f.threshold && level[c.piece] <= f.threshold;
        if (cuts.size() >= 5 && 2 * sharp >= cuts.size()) return cuts;
    }
    return {};
}

} // namespace prism
