#include "analysis/compare.h"

#include "analysis/stats.h"
#include "model/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

namespace prism {

namespace {

// The quantities of the per-rank breakdown, in the order of the JSON and the tables.
enum Kind { kCompute, kPp, kDpSync, kWaiting, kKinds };
constexpr const char* kKindNames[kKinds] = {"compute", "pp", "dp_sync", "waiting"};
constexpr const char* kKindWords[kKinds] = {"compute", "PP send/receive", "DP sync", "waiting"};

// A quantity of one rank in one step, ms. `ops`: compute as the busy time before the rank's PP sends (its own
// forward and backward ops, waiting excluded) rather than the timeline's compute, whose part before a DP sync is
// set by the group's last member for every member (a slow GPU would seem to slow its DP peers).
double kindMs(const RankStepStats& s, int kind, bool ops = false) {
    switch (kind) {
    case kCompute:
        return double(ops ? s.forwardComputeNs + s.backwardComputeNs + s.warmupComputeNs : s.computeNs) / 1e6;
    case kPp: return double(s.ppSendNs + s.ppRecvNs) / 1e6;
    case kDpSync: return double(s.dpSyncNs) / 1e6;
    default: return double(s.waitNs) / 1e6;
    }
}

// Order of kinds among differences of equal size: causes before what they cause.
int kindRank(const std::string& what) {
    static const std::vector<std::string> order = {"shape", "link", "compute", "pp", "dp_sync", "waiting"};
    return int(std::find(order.begin(), order.end(), what) - order.begin());
}

std::string fixed(double v, int digits = 1) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}
std::string signedMs(double v) { return (v >= 0 ? "+" : "") + fixed(v, std::fabs(v) < 10 ? 2 : 1) + " ms"; }
std::string ms(double v) { return fixed(v, std::fabs(v) < 10 ? 2 : 1) + " ms"; }
double round3(double v) { return std::round(v * 1000) / 1000; }

// The per-step values of one quantity in one run: their mean (what the comparison reads: time per step, all
// steps counted) and their robust spread (what a change must stand out of).
struct Series {
    double mean = 0, median = 0, sigma = 0;
    std::size_t n = 0;
};

Series seriesOf(const std::vector<double>& v, double minSigmaShare) {
    Series s;
    s.n = v.size();
    if (v.empty()) return s;
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    const RobustStats r = robustStats(v);
    s.median = r.median;
    s.sigma = std::max(r.sigma, minSigmaShare * std::fabs(r.median));
    return s;
}

// A change in a few consecutive steps (positions among the side's steps): where it is and what it is per step.
struct Episode {
    std::size_t first = 0, last = 0;
    double perStep = 0; // mean change over the episode's steps
    double share = 0;   // of the change summed over all steps
    bool found = false;
};

// The consecutive steps whose change (`excess`, per step) exceeds `threshold` upwards — B slower: a step or two
// faster in B is no news, and a lost record shortens a sample (two clean runs of `zero1` differed by -9 ms of one
// rank's compute in one step) — at most half of the steps: the run of them with the largest sum. The last step
// is left out: nothing follows it, and what it waits for differs from run to run (two clean runs of `tiny`
// differed by 6 ms of waiting there, 20 times their spread).
Episode episodeOf(std::vector<double> excess, double threshold, std::size_t minSteps = 1) {
    Episode best;
    if (!excess.empty()) excess.pop_back();
    const double total = std::accumulate(excess.begin(), excess.end(), 0.0);
    if (excess.size() < 4 || !(threshold > 0) || total <= 0) return best;
    double bestSum = 0;
    for (std::size_t i = 0; i < excess.size();) {
        if (excess[i] <= threshold) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j + 1 < excess.size() && excess[j + 1] > threshold) ++j;
        const double sum =
            std::accumulate(excess.begin() + std::ptrdiff_t(i), excess.begin() + std::ptrdiff_t(j + 1), 0.0);
        if (sum > bestSum) best = {i, j, 0, 0, true}, bestSum = sum;
        i = j + 1;
    }
    const std::size_t n = best.last - best.first + 1;
    if (!best.found || 2 * n > excess.size() || n < minSteps) return {};
    best.perStep = bestSum / double(n);
    best.share = bestSum / total;
    return best;
}

struct Delta {
    double a = 0, b = 0, delta = 0, noise = 0;
    bool significant = false;
    Episode episode; // where the change is in a few steps: mostly there, or only there
};

// `va`, `vb`: the per-step values of A and B. A rise significant over all steps gets the steps it is in when
// four fifths of it is in a few of them; a rise in a few steps only, twice the noise a step (and the floor), is
// significant too: averaged over the run a 300 ms pause in one step of thirty was "waiting +10 ms per step".
Delta compareSeries(const std::vector<double>& va, const std::vector<double>& vb, double minSigmaShare,
                    double floorMs, double k, std::size_t minSteps) {
    const Series a = seriesOf(va, minSigmaShare), b = seriesOf(vb, minSigmaShare);
    Delta d;
    d.a = a.mean;
    d.b = b.mean;
    d.delta = b.mean - a.mean;
    d.noise = k * std::max(a.sigma, b.sigma);
    d.significant = a.n > 0 && b.n > 0 && std::fabs(d.delta) > std::max(d.noise, floorMs);
    if (a.n == 0 || b.n == 0) return d;
    std::vector<double> excess;
    for (double v : vb) excess.push_back(v - a.median);
    const Episode e = episodeOf(excess, std::max(2 * d.noise, floorMs), minSteps);
    // (Each step of an episode rose by the threshold: one that is not significant over the run counts as it is.)
    if (e.found && (!d.significant || (d.delta > 0 && e.share >= 0.8))) {
        d.episode = e;
        d.significant = true;
    }
    return d;
}

// One side of a job pair: the run, the job, its timeline and the steps the statistics read (step 0 starts at
// the job's first record, so it is partial: left out when there are at least three steps).
struct Side {
    const RunData* run = nullptr;
    int job = -1;
    const JobInfo* info = nullptr;
    const JobTimeline* tl = nullptr;
    std::vector<std::size_t> steps;
    bool ops = false; // compute differences read the busy time before PP sends (kindMs)

    const Topology& topology() const { return run->capture->topology; }
    std::string hostOf(int rank) const {
        const int h = tl->ranks[std::size_t(rank)].host;
        return h >= 0 && std::size_t(h) < topology().hosts.size() ? topology().hosts[std::size_t(h)].name : "";
    }
    // Per step, the quantity averaged over `ranks` (`breakdown`: the timeline's compute, never the ops').
    std::vector<double> values(const std::vector<int>& ranks, int kind, bool breakdown = false) const {
        std::vector<double> out;
        if (ranks.empty()) return out;
        for (std::size_t k : steps) {
            double sum = 0;
            for (int r : ranks) sum += kindMs(tl->ranks[std::size_t(r)].stepStats[k], kind, ops && !breakdown);
            out.push_back(sum / double(ranks.size()));
        }
        return out;
    }
};

Side makeSide(const RunData& run, int job) {
    Side s;
    s.run = &run;
    s.job = job;
    s.info = &run.analysis->report.jobs.at(std::size_t(job));
    static const JobTimeline kEmpty;
    s.tl = std::size_t(job) < run.analysis->jobs.size() ? &run.analysis->jobs[std::size_t(job)].timeline : &kEmpty;
    const std::size_t K = s.tl->steps.size();
    for (std::size_t k = K >= 3 ? 1 : 0; k < K; ++k) s.steps.push_back(k);
    for (const RankTimeline& r : s.tl->ranks)
        if (r.stepStats.size() != K) s.steps.clear(); // a timeline without statistics: nothing to compare
    return s;
}

// Whether every rank of a side has compute samples before PP sends in most of its steps (a pipeline).
bool hasOpCompute(const Side& s) {
    if (s.tl->ranks.empty() || s.steps.empty()) return false;
    for (const RankTimeline& r : s.tl->ranks) {
        std::size_t with = 0;
        for (std::size_t k : s.steps)
            with += r.stepStats[k].forwardSamples + r.stepStats[k].backwardSamples + r.stepStats[k].warmupSamples > 0;
        if (2 * with < s.steps.size()) return false;
    }
    return true;
}

std::string shapeText(const JobInfo& j) {
    return "TP " + std::to_string(j.tp) + " × PP " + std::to_string(j.pp) + " × DP " + std::to_string(j.dp) + " (" +
           std::to_string(j.gpuTotal()) + " GPUs)";
}

bool sameShape(const JobInfo& a, const JobInfo& b) {
    return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.gpuTotal() == b.gpuTotal();
}

double jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    const std::set<std::string> sa(a.begin(), a.end()), sb(b.begin(), b.end());
    std::size_t common = 0;
    for (const auto& x : sa) common += sb.count(x);
    const std::size_t all = sa.size() + sb.size() - common;
    return all ? double(common) / double(all) : 0.0;
}

// Step durations (ms) of the steps a side reads.
std::vector<double> stepDurations(const JobInfo& j) {
    std::vector<double> v;
    for (std::size_t k = j.steps.size() >= 3 ? 1 : 0; k < j.steps.size(); ++k)
        v.push_back(double(j.steps[k].durationNs()) / 1e6);
    return v;
}

// A rank's role as the network sees it: its PP stage, its DP group among the stage's (ordered by their first
// address) and its place in that group (by address). Ranks of two runs of one shape correspond by role.
struct Role {
    int stage = 0, group = 0, member = 0;
    friend auto operator<=>(const Role&, const Role&) = default;
};

std::vector<Role> rolesOf(const JobTimeline& tl) {
    const std::size_t R = tl.ranks.size();
    auto addr = [&](std::size_t r) { return IpAddr::parse(tl.ranks[r].ip).value_or(IpAddr{}); };
    std::map<std::pair<int, int>, std::vector<std::size_t>> groups; // (stage, dp group) -> ranks
    for (std::size_t r = 0; r < R; ++r) groups[{tl.ranks[r].stage, tl.ranks[r].dpGroup}].push_back(r);
    std::map<int, std::vector<std::pair<IpAddr, int>>> byStage; // stage -> (first address, dp group)
    for (auto& [key, members] : groups) {
        std::sort(members.begin(), members.end(), [&](std::size_t x, std::size_t y) { return addr(x) < addr(y); });
        byStage[key.first].push_back({addr(members.front()), key.second});
    }
    std::vector<Role> out(R);
    for (auto& [stage, list] : byStage) {
        std::sort(list.begin(), list.end());
        for (std::size_t g = 0; g < list.size(); ++g) {
            const auto& members = groups[{stage, list[g].second}];
            for (std::size_t m = 0; m < members.size(); ++m) out[members[m]] = {stage, int(g), int(m)};
        }
    }
    return out;
}

// ---- links -------------------------------------------------------------------------------------------------

// Transfer time (the union of the records' intervals: parallel channels count once) and bytes of one link per
// step the side reads.
struct LinkSteps {
    std::vector<double> timeMs, bytes;
};

// The job's records between its NICs, by step, in the aligned time of the step division.
struct LinkData {
    struct Xfer {
        int a, b;         // sender, receiver: indices into ips
        std::size_t step; // position among the side's steps
        std::int64_t s, e;
        std::uint64_t bytes;
    };
    std::vector<std::string> ips;
    std::unordered_map<std::string, int> index;
    std::vector<Xfer> xfers;
    std::vector<std::vector<std::uint32_t>> sent, received; // per NIC, indices into xfers
    std::map<std::pair<int, int>, std::vector<std::uint32_t>> pairs;
    std::size_t steps = 0;

    int nic(const std::string& ip) const {
        const auto it = index.find(ip);
        return it == index.end() ? -1 : it->second;
    }
    // Per step, the union of the intervals and the bytes of `list`, leaving out transfers with the NICs in
    // `skip` (either end).
    LinkSteps series(const std::vector<std::uint32_t>& list, const std::set<int>& skip = {}) const {
        LinkSteps out;
        out.timeMs.assign(steps, 0);
        out.bytes.assign(steps, 0);
        std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> spans(steps);
        for (std::uint32_t i : list) {
            const Xfer& x = xfers[i];
            if (skip.count(x.a) || skip.count(x.b)) continue;
            spans[x.step].push_back({x.s, x.e});
            out.bytes[x.step] += double(x.bytes);
        }
        for (std::size_t k = 0; k < steps; ++k) {
            auto& v = spans[k];
            std::sort(v.begin(), v.end());
            std::int64_t busy = 0, cs = 0, ce = std::numeric_limits<std::int64_t>::min();
            for (const auto& [s, e] : v) {
                if (s > ce) {
                    if (ce != std::numeric_limits<std::int64_t>::min()) busy += ce - cs;
                    cs = s;
                    ce = e;
                } else {
                    ce = std::max(ce, e);
                }
            }
            if (ce != std::numeric_limits<std::int64_t>::min()) busy += ce - cs;
            out.timeMs[k] = double(busy) / 1e6;
        }
        return out;
    }
};

LinkData linkData(const Side& side) {
    LinkData out;
    const RunData& run = *side.run;
    if (!run.capture || side.steps.empty() || std::size_t(side.job) >= run.analysis->recognition.jobs.size())
        return out;
    const FlowTable& flows = run.capture->flows;
    const RecognizedJob& rj = run.analysis->recognition.jobs[std::size_t(side.job)];
    const std::optional<StepDivision>& division = run.analysis->jobs[std::size_t(side.job)].division;
    const std::vector<StepInfo>& steps = side.tl->steps;
    std::vector<int> posOfStep(steps.size(), -1);
    for (std::size_t p = 0; p < side.steps.size(); ++p) posOfStep[side.steps[p]] = int(p);
    std::vector<std::int64_t> ends;
    for (const StepInfo& s : steps) ends.push_back(s.endNs);
    out.steps = side.steps.size();

    std::unordered_map<EndpointId, int> local; // endpoint -> index into ips
    for (const std::string& ip : side.info->gpus) {
        const auto addr = IpAddr::parse(ip);
        if (!addr) continue;
        const EndpointId e = flows.endpoints.find(*addr);
        if (e >= flows.endpoints.size()) continue;
        local.emplace(e, int(out.ips.size()));
        out.index.emplace(ip, int(out.ips.size()));
        out.ips.push_back(ip);
    }
    out.sent.resize(out.ips.size());
    out.received.resize(out.ips.size());
    rj.forEachRecord([&](std::uint32_t r) { // (listed or packed)
        if (r >= flows.size()) return; // a capture without its records (a view that let them go)
        const auto ia = local.find(flows.src[r]), ib = local.find(flows.dst[r]);
        if (ia == local.end() || ib == local.end() || steps.empty()) return;
        const std::int64_t off = division ? division->offsetOf(flows.src[r]) : 0;
        const std::int64_t s = flows.startNs[r] - off, e = std::max(flows.end(r) - off, s + 1);
        if (s < steps.front().startNs) return;
        const std::size_t k = std::size_t(std::upper_bound(ends.begin(), ends.end(), s) - ends.begin());
        if (k >= steps.size() || posOfStep[k] < 0) return;
        const auto i = std::uint32_t(out.xfers.size());
        out.xfers.push_back({ia->second, ib->second, std::size_t(posOfStep[k]), s, e, flows.bytes[r]});
        out.sent[std::size_t(ia->second)].push_back(i);
        out.received[std::size_t(ib->second)].push_back(i);
        out.pairs[{ia->second, ib->second}].push_back(i);
    });
    return out;
}

// One link of both runs compared: its time per byte per step (steps that moved bytes) and what its transfers
// cost per step in B beyond what they would have taken at A's speed.
struct LinkDelta {
    bool significant = false;
    double slowdown = 1, costMs = 0, aMs = 0, bMs = 0, noiseMs = 0, aGbps = 0, bGbps = 0;
    Episode episode; // a slowdown in a few steps (slowdown and bGbps then are the episode's)
};

// A link slow in a few steps only (its median over the run unchanged): the steps whose transfers cost twice the
// noise more than at A's speed, and the floor, when they moved their data minLinkSlowdown times slower.
void linkEpisode(const LinkSteps& b, double perByteA, double floorMs, const CompareParams& p, LinkDelta& d) {
    std::vector<double> excess(b.bytes.size(), 0.0);
    for (std::size_t k = 0; k < b.bytes.size(); ++k) excess[k] = b.timeMs[k] - b.bytes[k] * perByteA;
    const Episode e = episodeOf(excess, std::max(2 * d.noiseMs, floorMs));
    if (!e.found) return;
    double time = 0, bytes = 0;
    for (std::size_t k = e.first; k <= e.last; ++k) time += b.timeMs[k], bytes += b.bytes[k];
    const double slowdown = bytes > 0 ? time / bytes / perByteA : 0;
    if (slowdown < p.minLinkSlowdown) return; // (an episode is a rise: slower, never faster)
    d.episode = e;
    d.significant = true;
    d.slowdown = slowdown;
    d.bGbps = bytes * 8 / (time * 1e6);
}

LinkDelta compareLink(const LinkSteps& a, const LinkSteps& b, double floorMs, const CompareParams& p) {
    LinkDelta d;
    auto perByte = [&](const LinkSteps& l) {
        std::vector<double> v;
        for (std::size_t k = 0; k < l.bytes.size(); ++k)
            if (l.bytes[k] > 0) v.push_back(l.timeMs[k] / l.bytes[k]);
        return v;
    };
    const std::vector<double> ua = perByte(a), ub = perByte(b);
    if (ua.size() < 2 || ub.size() < 2) return d;
    const Series sa = seriesOf(ua, p.minSigmaShare), sb = seriesOf(ub, p.minSigmaShare);
    if (!(sa.median > 0)) return d;
    d.slowdown = sb.median / sa.median;
    auto mean = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); };
    d.aMs = mean(a.timeMs);
    d.bMs = mean(b.timeMs);
    d.costMs = d.bMs - mean(b.bytes) * sa.median;
    d.noiseMs = p.kSigma * std::max(sa.sigma, sb.sigma) * mean(b.bytes);
    auto gbps = [&](const LinkSteps& l) {
        const double t = std::accumulate(l.timeMs.begin(), l.timeMs.end(), 0.0);
        return t > 0 ? std::accumulate(l.bytes.begin(), l.bytes.end(), 0.0) * 8 / (t * 1e6) : 0.0;
    };
    d.aGbps = gbps(a);
    d.bGbps = gbps(b);
    const bool changed = d.slowdown >= p.minLinkSlowdown || d.slowdown <= 1 / p.minLinkSlowdown;
    d.significant = changed && std::fabs(sb.median - sa.median) > p.kSigma * std::max(sa.sigma, sb.sigma) &&
                    std::fabs(d.costMs) > floorMs;
    if (!d.significant) linkEpisode(b, sa.median, floorMs, p, d);
    return d;
}

// ---- one job pair --------------------------------------------------------------------------------------------

class JobCompare {
public:
    JobCompare(const Side& a, const Side& b, const CompareParams& p, JobComparison& out)
        : A(a), B(b), P(p), out(out) {
        A.ops = B.ops = sameShape(*a.info, *b.info) && hasOpCompute(a) && hasOpCompute(b);
    }

    void run() {
        out.jobA = A.job;
        out.jobB = B.job;
        out.a = A.info->id;
        out.b = B.info->id;
        out.gpuJaccard = jaccard(A.info->gpus, B.info->gpus);
        out.sameShape = sameShape(*A.info, *B.info);
        out.shapeA = shapeText(*A.info);
        out.shapeB = shapeText(*B.info);
        out.stepsA = int(A.info->steps.size());
        out.stepsB = int(B.info->steps.size());
        const RobustStats sa = robustStats(stepDurations(*A.info)), sb = robustStats(stepDurations(*B.info));
        out.medianStepMsA = sa.median;
        out.medianStepMsB = sb.median;
        auto mean = [](const std::vector<double>& v) {
            return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
        };
        out.meanStepMsA = mean(stepDurations(*A.info));
        out.meanStepMsB = mean(stepDurations(*B.info));
        m_floor = std::max(P.minDeltaMs, P.minShare * out.medianStepMsA);
        out.breakdownA = breakdown(A);
        out.breakdownB = breakdown(B);
        if (A.steps.empty() || B.steps.empty() || A.tl->ranks.empty() || B.tl->ranks.empty()) {
            out.notes.push_back("no per-rank timeline on one side (a session saved without it, or a job without "
                                "steps): only the step times are compared");
        } else if (!out.sameShape) {
            Difference d;
            d.what = "shape";
            d.deltaMsPerStep = out.medianStepMsB - out.medianStepMsA;
            d.aMs = out.medianStepMsA;
            d.bMs = out.medianStepMsB;
            d.message = "the job's shape changed: " + out.shapeA + " in A, " + out.shapeB +
                        " in B; ranks do not correspond, so only the job as a whole is compared (median step " +
                        ms(out.medianStepMsA) + " → " + ms(out.medianStepMsB) + ")";
            out.differences.push_back(d);
            jobWide();
        } else {
            matchRanks();
            perRank();
            links();
        }
        order();
    }

private:
    // Largest change first. Waiting is what a rank loses to others, and a slower link stretches the PP and DP
    // transfers over it: such a change, when another change that can cause it (any change for waiting, a link
    // going the same direction for PP and DP sync) is at least a quarter its size, follows the causes and names
    // the first of them (effectOf), so that the first difference is the main reason.
    void order() {
        auto& diffs = out.differences;
        std::stable_sort(diffs.begin(), diffs.end(), [](const Difference& x, const Difference& y) {
            const double ax = std::fabs(x.deltaMsPerStep), ay = std::fabs(y.deltaMsPerStep);
            if (x.what == "shape" || y.what == "shape") return x.what == "shape" && y.what != "shape";
            if (std::fabs(ax - ay) > 1e-9 * std::max(ax, ay)) return ax > ay;
            return kindRank(x.what) < kindRank(y.what);
        });
        // What can explain what: any change explains waiting, a link's explains the PP and DP transfer times.
        auto causes = [](const Difference& c, const Difference& e) {
            if (e.what == "waiting") return c.what != "waiting" && c.what != "shape";
            return c.what == "link" && (e.what == "pp" || e.what == "dp_sync");
        };
        // Waiting goes either way with its cause: the others wait more for a slower rank or link, the slower
        // rank itself less (it is busy when it used to wait). Transfer times go the way of their link.
        auto explains = [&](const Difference& c, const Difference& e) {
            return causes(c, e) && (e.what == "waiting" || (c.deltaMsPerStep > 0) == (e.deltaMsPerStep > 0)) &&
                   std::fabs(c.deltaMsPerStep) >= 0.25 * std::fabs(e.deltaMsPerStep);
        };
        std::vector<char> explained(diffs.size(), 0);
        for (std::size_t i = 0; i < diffs.size(); ++i)
            explained[i] = std::any_of(diffs.begin(), diffs.end(), [&](const Difference& c) { return explains(c, diffs[i]); });
        std::vector<Difference> first, effects;
        for (std::size_t i = 0; i < diffs.size(); ++i) (explained[i] ? effects : first).push_back(std::move(diffs[i]));
        const std::size_t causesEnd = first.size();
        diffs = std::move(first);
        diffs.insert(diffs.end(), std::make_move_iterator(effects.begin()), std::make_move_iterator(effects.end()));
        for (std::size_t i = causesEnd; i < diffs.size(); ++i) {
            Difference& e = diffs[i];
            for (std::size_t j = 0; j < i && e.effectOf < 0; ++j)
                if (explains(diffs[j], e)) e.effectOf = int(j);
            if (e.effectOf >= 0)
                e.message += "; follows from difference " + std::to_string(e.effectOf + 1) + " (" +
                             diffs[std::size_t(e.effectOf)].what + ")";
        }
    }

    Breakdown breakdown(const Side& s) const {
        Breakdown b;
        std::vector<int> all(s.tl->ranks.size());
        std::iota(all.begin(), all.end(), 0);
        double* fields[kKinds] = {&b.compute, &b.pp, &b.dpSync, &b.waiting};
        for (int k = 0; k < kKinds; ++k) {
            const std::vector<double> v = s.values(all, k, true);
            *fields[k] = v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
        }
        return b;
    }

    // `minSteps`: the fewest steps a change in a few steps may have (one rank's single step can be a lost record).
    Delta deltaOf(const std::vector<int>& ranksA, const std::vector<int>& ranksB, int kind, std::size_t minSteps = 1) {
        const Delta d = compareSeries(A.values(ranksA, kind), B.values(ranksB, kind), P.minSigmaShare, m_floor,
                                      P.kSigma, minSteps);
        if (!d.significant) out.residual = std::max(out.residual, std::fabs(d.delta) / std::max(d.noise, m_floor));
        return d;
    }

    static std::vector<int> allRanks(const Side& s) {
        std::vector<int> v(s.tl->ranks.size());
        std::iota(v.begin(), v.end(), 0);
        return v;
    }

    // Every rank of each run, averaged: what the job as a whole spends per step (different shapes).
    void jobWide() {
        for (int k = 0; k < kKinds; ++k) {
            const Delta d = deltaOf(allRanks(A), allRanks(B), k);
            if (!d.significant) continue;
            DiffPlace where;
            where.ranks = int(B.tl->ranks.size());
            add(k, d, where, "per rank, over the whole job");
        }
    }

    void matchRanks() {
        const std::vector<Role> ra = rolesOf(*A.tl), rb = rolesOf(*B.tl);
        std::map<Role, int> byRole;
        for (std::size_t r = 0; r < ra.size(); ++r) byRole[ra[r]] = int(r);
        m_aOf.assign(rb.size(), -1);
        for (std::size_t r = 0; r < rb.size(); ++r) {
            const auto it = byRole.find(rb[r]);
            if (it != byRole.end()) m_aOf[r] = it->second;
        }
        // The same NICs in the same roles: links are the same cables, compared address by address.
        m_sameNics = true;
        for (std::size_t r = 0; r < rb.size(); ++r)
            m_sameNics = m_sameNics && m_aOf[r] >= 0 && A.tl->ranks[std::size_t(m_aOf[r])].ip == B.tl->ranks[r].ip;
        m_sameNics = m_sameNics && ra.size() == rb.size();
    }

    // Differences of the breakdown: per rank, then said once for a whole stage or the whole job when (nearly)
    // all its ranks changed alike, else once per host and stage (a TP group changes together).
    void perRank() {
        const std::size_t R = B.tl->ranks.size();
        std::vector<int> matched;
        for (std::size_t r = 0; r < R; ++r)
            if (m_aOf[r] >= 0) matched.push_back(int(r));
        std::vector<std::array<Delta, kKinds>> deltas(R);
        for (int r : matched) {
            RankDelta rd;
            rd.rankB = r;
            rd.rankA = m_aOf[std::size_t(r)];
            double* fields[kKinds] = {&rd.compute, &rd.pp, &rd.dpSync, &rd.waiting};
            for (int k = 0; k < kKinds; ++k) {
                deltas[std::size_t(r)][std::size_t(k)] = deltaOf({rd.rankA}, {r}, k);
                *fields[k] = deltas[std::size_t(r)][std::size_t(k)].delta;
            }
            out.ranks.push_back(rd);
        }
        for (int k = 0; k < kKinds; ++k) {
            std::vector<char> done(R, 0);
            auto sign = [&](int r) {
                const Delta& d = deltas[std::size_t(r)][std::size_t(k)];
                return d.significant ? (d.delta > 0 ? 1 : -1) : 0;
            };
            // A set of ranks changed alike: (nearly) all of them significant in one direction.
            auto alike = [&](const std::vector<int>& ranks) {
                int up = 0, down = 0;
                for (int r : ranks) {
                    up += sign(r) > 0;
                    down += sign(r) < 0;
                }
                const double need = P.uniformShare * double(ranks.size());
                return ranks.size() >= 2 && (double(up) >= need || double(down) >= need);
            };
            // One place said once needs the ranks of several hosts (a stage of one TP group is that group).
            auto hosts = [&](const std::vector<int>& ranks) {
                std::set<int> h;
                for (int r : ranks) h.insert(B.tl->ranks[std::size_t(r)].host);
                return h.size();
            };
            // A change in one step is said of several hosts' ranks (a pause), of one host's in two steps or more:
            // a lost record changes one rank's step (two clean runs of `zero1`: +8.7 ms of waiting, 20x the spread).
            auto emit = [&](const std::vector<int>& ranks, DiffPlace where, const std::string& whereText) {
                std::vector<int> ranksA;
                for (int r : ranks) ranksA.push_back(m_aOf[std::size_t(r)]);
                const Delta d = deltaOf(ranksA, ranks, k, hosts(ranks) > 1 ? 1 : 2);
                for (int r : ranks) done[std::size_t(r)] = 1;
                if (!d.significant) return;
                where.ranks = int(ranks.size());
                add(k, d, where, whereText);
            };
            if (alike(matched) && hosts(matched) > 1) {
                emit(matched, {}, "on every rank (" + std::to_string(matched.size()) + ")");
                continue;
            }
            std::map<int, std::vector<int>> stages;
            for (int r : matched) stages[B.tl->ranks[std::size_t(r)].stage].push_back(r);
            if (stages.size() > 1)
                for (auto& [stage, ranks] : stages) {
                    if (!alike(ranks) || hosts(ranks) < 2) continue;
                    DiffPlace where;
                    where.stage = stage;
                    emit(ranks, where,
                         "on every rank of stage " + std::to_string(stage) + " (" + std::to_string(ranks.size()) + ")");
                }
            // The rest: the significant ranks, by host, stage and direction.
            std::map<std::tuple<int, int, int>, std::vector<int>> places;
            for (int r : matched)
                if (!done[std::size_t(r)] && sign(r) != 0)
                    places[{B.tl->ranks[std::size_t(r)].host, B.tl->ranks[std::size_t(r)].stage, sign(r)}].push_back(r);
            for (auto& [key, ranks] : places) {
                const RankTimeline& first = B.tl->ranks[std::size_t(ranks.front())];
                DiffPlace where;
                where.ip = first.ip;
                where.host = B.hostOf(ranks.front());
                where.stage = first.stage;
                where.dpGroup = first.dpGroup;
                for (int r : ranks) {
                    where.ips.push_back(B.tl->ranks[std::size_t(r)].ip);
                    if (B.tl->ranks[std::size_t(r)].dpGroup != first.dpGroup) where.dpGroup = -1;
                }
                const std::string& ipA = A.tl->ranks[std::size_t(m_aOf[std::size_t(ranks.front())])].ip;
                if (ipA != first.ip) where.ipA = ipA;
                std::string text = ranks.size() == 1 ? "on " + first.label + " (" + first.ip
                                                     : "on " + (where.host.empty() ? first.label : where.host) + " (" +
                                                           std::to_string(ranks.size()) + " NICs from " + first.ip;
                text += ", stage " + std::to_string(first.stage);
                if (where.dpGroup >= 0) text += ", DP group " + std::to_string(where.dpGroup);
                text += ")";
                if (!where.ipA.empty()) text += "; its role in A was " + where.ipA + "'s";
                emit(ranks, where, text);
            }
        }
    }

    void add(int kind, const Delta& d, const DiffPlace& where, const std::string& whereText) {
        Difference diff;
        diff.what = kKindNames[kind];
        diff.where = where;
        diff.deltaMsPerStep = d.delta;
        diff.aMs = d.a;
        diff.bMs = d.b;
        diff.noiseMs = d.noise;
        const double rel = d.a > 0 ? d.delta / d.a : 0;
        const std::string what = kind == kCompute && A.ops ? "compute (busy before its PP sends)" : kKindWords[kind];
        if (d.episode.found) {
            setRange(diff, d.episode);
            diff.message = what + " " + signedMs(d.episode.perStep) + " " + stepsText(diff) + " " + whereText +
                           " (" + signedMs(d.delta) + " per step over the run: " + ms(d.a) + " → " + ms(d.b) +
                           "), step-to-step spread ±" + ms(d.noise / P.kSigma);
        } else {
            diff.message = what + " " + signedMs(d.delta) + " per step " + whereText + ": " + ms(d.a) + " → " +
                           ms(d.b) +
                           (d.a > 0 ? " (" + (rel >= 0 ? std::string("+") : "") + formatPercent(rel) + ")"
                                    : std::string()) +
                           ", step-to-step spread ±" + ms(d.noise / P.kSigma);
        }
        out.differences.push_back(std::move(diff));
    }

    // Links, NIC by NIC (each direction: links are full duplex) and pair by pair: the same NIC address in both
    // runs (the same cable), else the rank in the same role. A NIC whose transfers got slower (or faster) both
    // ways is blamed, strongest change first; a NIC whose change is gone once the transfers with a NIC already
    // blamed are left out was only its peer. A pair that changed between NICs not blamed is reported as the pair.
    void links() {
        const LinkData la = linkData(A), lb = linkData(B);
        if (la.xfers.empty() || lb.xfers.empty()) return;
        std::unordered_map<std::string, std::string> ipA; // B address -> A address of the same role
        for (std::size_t r = 0; r < m_aOf.size(); ++r)
            if (m_aOf[r] >= 0) ipA[B.tl->ranks[r].ip] = A.tl->ranks[std::size_t(m_aOf[r])].ip;
        auto nicA = [&](const std::string& ip) {
            if (la.nic(ip) >= 0) return la.nic(ip);
            const auto it = ipA.find(ip);
            return it == ipA.end() || out.sameShape == false ? -1 : la.nic(it->second);
        };
        struct Change {
            int nic;
            LinkDelta d;
            std::string way;
            double strength;
        };
        // A NIC's change with the transfers to `skip` left out (in B): both directions that carry traffic must
        // have changed the same way; the one that changed most speaks for it.
        auto nicChange = [&](int nb, int na, const std::set<int>& skip) {
            Change c{nb, {}, "", 0};
            int ways = 0, changed = 0, sign = 0;
            double weakest = std::numeric_limits<double>::max();
            for (auto [listA, listB, word] : {std::tuple{&la.sent, &lb.sent, "sending"},
                                              std::tuple{&la.received, &lb.received, "receiving"}}) {
                const LinkSteps sb = lb.series((*listB)[std::size_t(nb)], skip);
                if (std::accumulate(sb.bytes.begin(), sb.bytes.end(), 0.0) == 0) continue;
                ++ways;
                const LinkDelta d = compareLink(la.series((*listA)[std::size_t(na)]), sb, m_floor, P);
                if (!d.significant) {
                    if (d.slowdown > 0) out.linkResidual = std::max(out.linkResidual, std::max(d.slowdown, 1 / d.slowdown));
                    continue;
                }
                const int sg = d.costMs > 0 ? 1 : -1;
                if (sign != 0 && sg != sign) continue;
                sign = sg;
                ++changed;
                c.way = c.way.empty() ? word : "both ways";
                weakest = std::min(weakest, std::fabs(std::log(d.slowdown)));
                if (!c.d.significant || std::fabs(d.costMs) > std::fabs(c.d.costMs)) c.d = d;
            }
            c.strength = ways > 0 && changed == ways ? weakest : 0;
            if (c.strength == 0) c.d.significant = false;
            return c;
        };
        std::vector<Change> candidates;
        for (std::size_t nb = 0; nb < lb.ips.size(); ++nb) {
            const int na = nicA(lb.ips[nb]);
            if (na < 0) continue;
            Change c = nicChange(int(nb), na, {});
            if (c.d.significant) candidates.push_back(std::move(c));
        }
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const Change& x, const Change& y) { return x.strength > y.strength; });
        std::set<int> blamed;
        for (const Change& first : candidates) {
            const Change c = blamed.empty() ? first : nicChange(first.nic, nicA(lb.ips[std::size_t(first.nic)]), blamed);
            if (!c.d.significant) continue; // its peer's link explains it
            blamed.insert(c.nic);
            const std::string& ip = lb.ips[std::size_t(c.nic)];
            Difference diff;
            diff.what = "link";
            const int rank = B.tl->rankOf(ip);
            diff.where.ip = ip;
            if (rank >= 0) {
                diff.where.host = B.hostOf(rank);
                diff.where.stage = B.tl->ranks[std::size_t(rank)].stage;
                diff.where.dpGroup = B.tl->ranks[std::size_t(rank)].dpGroup;
            }
            const int na = nicA(ip);
            if (la.ips[std::size_t(na)] != ip) diff.where.ipA = la.ips[std::size_t(na)];
            const auto addr = IpAddr::parse(ip);
            const auto nic = addr ? B.topology().nicByIp(*addr) : std::nullopt;
            if (nic) diff.where.switchName = B.topology().nics[std::size_t(*nic)].switchName;
            diff.where.ranks = 1;
            const std::string label = addr ? B.topology().rankLabel(*addr) : ip;
            fill(diff, c.d,
                 "NIC " + label + " (" + ip + ")" +
                     (diff.where.switchName.empty() ? "" : " on " + diff.where.switchName) + ", " + c.way);
            out.differences.push_back(std::move(diff));
        }
        // Pairs between NICs not blamed, both directions said once.
        std::map<std::pair<int, int>, LinkDelta> pairDeltas;
        for (const auto& [key, list] : lb.pairs) {
            if (blamed.count(key.first) || blamed.count(key.second)) continue;
            const int xa = nicA(lb.ips[std::size_t(key.first)]), ya = nicA(lb.ips[std::size_t(key.second)]);
            const auto it = la.pairs.find({xa, ya});
            if (xa < 0 || ya < 0 || it == la.pairs.end()) continue;
            const LinkDelta d = compareLink(la.series(it->second), lb.series(list), m_floor, P);
            if (d.significant) pairDeltas[key] = d;
        }
        for (const auto& [key, d] : pairDeltas) {
            const auto back = pairDeltas.find({key.second, key.first});
            const bool both = back != pairDeltas.end();
            if (both && std::fabs(back->second.costMs) > std::fabs(d.costMs)) continue; // said from the other side
            if (both && std::fabs(back->second.costMs) == std::fabs(d.costMs) && key.first > key.second) continue;
            Difference diff;
            diff.what = "link";
            const std::string &src = lb.ips[std::size_t(key.first)], &dst = lb.ips[std::size_t(key.second)];
            diff.where.srcIp = src;
            diff.where.dstIp = dst;
            const int rs = B.tl->rankOf(src), rd = B.tl->rankOf(dst);
            if (rs >= 0) diff.where.srcHost = B.hostOf(rs);
            if (rd >= 0) diff.where.dstHost = B.hostOf(rd);
            diff.where.ranks = 2;
            fill(diff, d, "between " + src + " and " + dst + (both ? " (both directions)" : " (" + src + " sending)"));
            out.differences.push_back(std::move(diff));
        }
    }

    // The report's step indices of an episode (positions among B's steps read).
    void setRange(Difference& diff, const Episode& e) const {
        diff.firstStep = int(B.steps[e.first]);
        diff.lastStep = int(B.steps[e.last]);
        diff.rangeDeltaMs = e.perStep;
    }
    static std::string stepsText(const Difference& diff) {
        return diff.firstStep == diff.lastStep
                   ? "in step " + std::to_string(diff.firstStep)
                   : "in steps " + std::to_string(diff.firstStep) + "–" + std::to_string(diff.lastStep);
    }

    void fill(Difference& diff, const LinkDelta& d, const std::string& where) const {
        diff.deltaMsPerStep = d.costMs;
        diff.aMs = d.aMs;
        diff.bMs = d.bMs;
        diff.noiseMs = d.noiseMs;
        diff.slowdown = d.slowdown;
        diff.aGbps = d.aGbps;
        diff.bGbps = d.bGbps;
        const bool slower = d.slowdown >= 1;
        const std::string speed = fixed(slower ? d.slowdown : 1 / d.slowdown, 1) + "× " +
                                  (slower ? "slower" : "faster") + " in B (" + fixed(d.aGbps, 1) + " → " +
                                  fixed(d.bGbps, 1) + " Gb/s)";
        if (d.episode.found) {
            setRange(diff, d.episode);
            diff.message = "link " + where + " " + stepsText(diff) + ": its transfers move data " + speed + ", " +
                           signedMs(d.episode.perStep) + " of transfer time per step of them (" +
                           signedMs(d.costMs) + " per step over the run)";
            return;
        }
        diff.message = "link " + where + ": its transfers move data " + speed + ", " + signedMs(d.costMs) +
                       " of transfer time per step (" + ms(d.aMs) + " → " + ms(d.bMs) + ")";
    }

    Side A, B;
    const CompareParams& P;
    JobComparison& out;
    double m_floor = 0;
    std::vector<int> m_aOf; // per rank of B, the rank of A in the same role (-1: none)
    bool m_sameNics = false;
};

void checkRun(const RunData& r) {
    if (!r.analysis || !r.capture) throw std::invalid_argument("compare: a run without its capture or analysis");
}

} // namespace

int jobIndexById(const Report& report, const std::string& id) {
    for (std::size_t j = 0; j < report.jobs.size(); ++j)
        if (report.jobs[j].id == id) return int(j);
    return -1;
}

JobComparison compareJobs(const RunData& a, int jobA, const RunData& b, int jobB, const CompareParams& params) {
    checkRun(a);
    checkRun(b);
    JobComparison out;
    const Side sa = makeSide(a, jobA), sb = makeSide(b, jobB);
    JobCompare(sa, sb, params, out).run();
    out.matchedBy = "chosen";
    return out;
}

Comparison compareRuns(const RunData& a, const RunData& b, const CompareParams& params) {
    checkRun(a);
    checkRun(b);
    Comparison out;
    out.sourceA = a.source;
    out.sourceB = b.source;
    const auto& ja = a.analysis->report.jobs;
    const auto& jb = b.analysis->report.jobs;
    std::vector<int> partner(jb.size(), -1);
    std::vector<std::string> how(jb.size());
    std::vector<char> takenA(ja.size(), 0);
    // Candidate pairs by preference: the same GPUs in the same shape (largest overlap first), then the same shape
    // on other GPUs (the scheduler moved the job), then the same GPUs in another shape (the job was changed).
    std::vector<std::tuple<int, double, int, int>> candidates; // (tier, -overlap, job of B, job of A)
    for (std::size_t y = 0; y < jb.size(); ++y)
        for (std::size_t x = 0; x < ja.size(); ++x) {
            const double j = jaccard(ja[x].gpus, jb[y].gpus);
            const bool shape = sameShape(ja[x], jb[y]), gpus = j >= params.minJaccard;
            if (shape || gpus) candidates.push_back({shape && gpus ? 0 : shape ? 1 : 2, -j, int(y), int(x)});
        }
    std::sort(candidates.begin(), candidates.end());
    for (const auto& [tier, negJ, y, x] : candidates)
        if (partner[std::size_t(y)] < 0 && !takenA[std::size_t(x)]) {
            partner[std::size_t(y)] = x;
            takenA[std::size_t(x)] = 1;
            how[std::size_t(y)] = tier == 1 ? "shape" : "gpus";
        }
    // 3. One job left on each side: yesterday's job and today's, whatever changed.
    const auto leftB = std::count(partner.begin(), partner.end(), -1);
    const auto leftA = std::count(takenA.begin(), takenA.end(), 0);
    if (leftA == 1 && leftB == 1) {
        const auto y = std::size_t(std::find(partner.begin(), partner.end(), -1) - partner.begin());
        const auto x = std::size_t(std::find(takenA.begin(), takenA.end(), 0) - takenA.begin());
        partner[y] = int(x);
        takenA[x] = 1;
        how[y] = "only";
    }
    for (std::size_t y = 0; y < jb.size(); ++y) {
        if (partner[y] < 0) {
            out.unmatchedB.push_back(jb[y].id);
            continue;
        }
        JobComparison jc = compareJobs(a, partner[y], b, int(y), params);
        jc.matchedBy = how[y];
        out.jobs.push_back(std::move(jc));
    }
    for (std::size_t x = 0; x < ja.size(); ++x)
        if (!takenA[x]) out.unmatchedA.push_back(ja[x].id);
    return out;
}

namespace {

nlohmann::json placeJson(const DiffPlace& w) {
    nlohmann::json o = nlohmann::json::object();
    if (!w.ip.empty()) o["ip"] = w.ip;
    if (!w.host.empty()) o["host"] = w.host;
    if (w.stage >= 0) o["stage"] = w.stage;
    if (w.dpGroup >= 0) o["dp_group"] = w.dpGroup;
    if (!w.switchName.empty()) o["switch"] = w.switchName;
    if (!w.srcIp.empty()) o["src_ip"] = w.srcIp;
    if (!w.dstIp.empty()) o["dst_ip"] = w.dstIp;
    if (!w.srcHost.empty()) o["src_host"] = w.srcHost;
    if (!w.dstHost.empty()) o["dst_host"] = w.dstHost;
    if (!w.ipA.empty()) o["ip_a"] = w.ipA;
    if (w.ips.size() > 1) o["ips"] = w.ips;
    if (w.ranks > 0) o["ranks"] = w.ranks;
    return o;
}

nlohmann::json breakdownJson(const Breakdown& b) {
    return {{"compute", round3(b.compute)}, {"pp", round3(b.pp)}, {"dp_sync", round3(b.dpSync)},
            {"waiting", round3(b.waiting)}};
}

} // namespace

nlohmann::json comparisonToJson(const Comparison& c) {
    nlohmann::json o;
    o["format"] = "llmprism-compare";
    o["version"] = 1;
    o["a"] = {{"source", c.sourceA}};
    o["b"] = {{"source", c.sourceB}};
    o["jobs"] = nlohmann::json::array();
    for (const JobComparison& j : c.jobs) {
        nlohmann::json jo;
        jo["a"] = j.a;
        jo["b"] = j.b;
        jo["median_step_ms"] = {{"a", round3(j.medianStepMsA)}, {"b", round3(j.medianStepMsB)}};
        jo["breakdown_ms"] = {{"a", breakdownJson(j.breakdownA)}, {"b", breakdownJson(j.breakdownB)}};
        jo["differences"] = nlohmann::json::array();
        for (const Difference& d : j.differences) {
            nlohmann::json dj;
            dj["what"] = d.what;
            dj["where"] = placeJson(d.where);
            dj["delta_ms_per_step"] = round3(d.deltaMsPerStep);
            dj["a_ms"] = round3(d.aMs);
            dj["b_ms"] = round3(d.bMs);
            if (d.what != "shape") dj["noise_ms"] = round3(d.noiseMs);
            if (d.what == "link") {
                dj["slowdown"] = round3(d.slowdown);
                dj["a_gbps"] = round3(d.aGbps);
                dj["b_gbps"] = round3(d.bGbps);
            }
            if (d.firstStep >= 0) {
                dj["first_step"] = d.firstStep;
                dj["last_step"] = d.lastStep;
                dj["range_delta_ms_per_step"] = round3(d.rangeDeltaMs);
            }
            if (d.effectOf >= 0) dj["effect_of"] = d.effectOf;
            dj["message"] = d.message;
            jo["differences"].push_back(std::move(dj));
        }
        jo["matched_by"] = j.matchedBy;
        jo["gpu_overlap"] = round3(j.gpuJaccard);
        jo["shape"] = {{"a", j.shapeA}, {"b", j.shapeB}};
        jo["steps"] = {{"a", j.stepsA}, {"b", j.stepsB}};
        jo["mean_step_ms"] = {{"a", round3(j.meanStepMsA)}, {"b", round3(j.meanStepMsB)}};
        if (!j.notes.empty()) jo["notes"] = j.notes;
        o["jobs"].push_back(std::move(jo));
    }
    o["unmatched"] = {{"a", c.unmatchedA}, {"b", c.unmatchedB}};
    return o;
}

std::string comparisonToText(const Comparison& c) {
    std::ostringstream out;
    out << "A          " << c.sourceA << '\n' << "B          " << c.sourceB << '\n';
    if (c.jobs.empty()) out << "No job of A matches a job of B (neither the same GPUs nor the same shape)\n";
    static const std::map<std::string, std::string> matched = {
        {"gpus", "the same GPUs"}, {"shape", "the same shape"}, {"only", "the only jobs"}, {"chosen", "as chosen"}};
    for (const JobComparison& j : c.jobs) {
        out << "Job        " << j.a << " (A) ↔ " << j.b << " (B), " << matched.at(j.matchedBy) << " ("
            << fixed(j.gpuJaccard * 100, 0) << "% of the NICs in common); "
            << (j.sameShape ? j.shapeB : j.shapeA + " → " + j.shapeB) << '\n';
        const double d = j.medianStepMsB - j.medianStepMsA;
        out << "  median step  " << ms(j.medianStepMsA) << " → " << ms(j.medianStepMsB) << "  (" << signedMs(d);
        if (j.medianStepMsA > 0) out << ", " << (d >= 0 ? "+" : "") << formatPercent(d / j.medianStepMsA);
        out << "; " << j.stepsA << " and " << j.stepsB << " steps)\n";
        out << "  per rank and step (A → B):";
        const double av[kKinds] = {j.breakdownA.compute, j.breakdownA.pp, j.breakdownA.dpSync, j.breakdownA.waiting};
        const double bv[kKinds] = {j.breakdownB.compute, j.breakdownB.pp, j.breakdownB.dpSync, j.breakdownB.waiting};
        for (int k = 0; k < kKinds; ++k)
            out << (k ? ", " : " ") << kKindWords[k] << ' ' << fixed(av[k], 2) << " → " << fixed(bv[k], 2);
        out << " ms\n";
        if (j.differences.empty())
            out << "  no difference above noise (the largest change left out is " << fixed(j.residual * 100, 0)
                << "% of its threshold; NIC links within " << fixed(j.linkResidual, 2) << "×)\n";
        for (std::size_t i = 0; i < j.differences.size(); ++i)
            out << "  " << (i + 1) << ". [" << j.differences[i].what << "] " << j.differences[i].message << '\n';
        for (const std::string& n : j.notes) out << "  note: " << n << '\n';
    }
    auto list = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
        return s;
    };
    if (!c.unmatchedA.empty()) out << "Only in A  " << list(c.unmatchedA) << '\n';
    if (!c.unmatchedB.empty()) out << "Only in B  " << list(c.unmatchedB) << '\n';
    return out.str();
}

} // namespace prism
