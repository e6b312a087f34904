#include "analysis/diagnosis.h"

#include "analysis/diagnosis_internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

namespace prism {

namespace diag {

std::vector<Episode> episodesOf(const std::vector<int>& steps, int maxGap) {
    std::vector<Episode> out;
    for (int s : steps) {
        if (!out.empty() && s - out.back().last <= maxGap + 1) out.back().last = s;
        else out.push_back({s, s});
    }
    return out;
}

std::string num(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// A duration as a reader takes it in: ms below 10 s, seconds below 10 minutes, then minutes and seconds (a
// long run's findings read "45630.6 ms" and "88858.5 ms lost each time").
std::string ms(double ns) {
    if (std::fabs(ns) < 1e10) return num(ns / 1e6, std::fabs(ns) < 1e7 ? 2 : 1) + " ms";
    if (std::fabs(ns) < 6e11) return num(ns / 1e9, 1) + " s";
    const double s = std::round(ns / 1e9);
    return num(std::floor(s / 60), 0) + " min " + num(std::fmod(s, 60.0), 0) + " s";
}

std::vector<std::size_t> periodicChain(const std::vector<int>& starts, int minRepeats, int& period) {
    period = 0;
    std::vector<std::size_t> best;
    if (int(starts.size()) < minRepeats) return {};
    int bestPeriod = 0;
    for (std::size_t i = 0; i < starts.size(); ++i)
        for (std::size_t j = i + 1; j < starts.size(); ++j) {
            const int spacing = starts[j] - starts[i];
            if (spacing < 2) continue;
            std::vector<std::size_t> chain = {i};
            for (std::size_t k = i + 1; k < starts.size(); ++k)
                if (std::abs(starts[k] - starts[chain.back()] - spacing) <= 1) chain.push_back(k);
            if (chain.size() > best.size() || (chain.size() == best.size() && spacing < bestPeriod)) {
                best = std::move(chain);
                bestPeriod = spacing;
            }
        }
    if (int(best.size()) < minRepeats) return {};
    std::vector<double> gaps;
    for (std::size_t i = 1; i < best.size(); ++i) gaps.push_back(double(starts[best[i]] - starts[best[i - 1]]));
    period = int(std::lround(medianOf(gaps)));
    return best;
}

void makePeriodicStall(Finding& f, int period, std::vector<int> occurrences, double extraEachNs, bool usual,
                       double baseNs) {
    f.kind = "periodic_stall";
    f.periodSteps = period;
    f.occurrences = std::move(occurrences);
    f.evidence.push_back({"period_steps", double(period)});
    f.evidence.push_back({"occurrences", double(f.occurrences.size())});
    f.evidence.push_back({"stall_ms_each", extraEachNs / 1e6});
    std::string list;
    for (std::size_t i = 0; i < f.occurrences.size() && i < 6; ++i)
        list += (i ? ", " : "") + std::to_string(f.occurrences[i]);
    if (f.occurrences.size() > 6) list += ", …";
    f.message = "periodic stall: every " + std::to_string(period) + " steps (" + std::to_string(f.occurrences.size()) +
                " times: steps " + list + "), up to " + num(f.score, 2) +
                (usual ? "× the usual step of " : "× the median step of ") + ms(baseNs) + ", " + ms(extraEachNs) +
                " lost each time — a recurring job-wide pause such as checkpointing or evaluation";
}

std::string periodicStallNote(int period) {
    return "slow steps recur every " + std::to_string(period) + " steps: reported once as a periodic_stall pattern";
}

std::string stepRange(int a, int b) {
    return a == b ? "step " + std::to_string(a) : "steps " + std::to_string(a) + "–" + std::to_string(b);
}

double zOf(const RobustStats& st, double v, double floorShare) {
    const double sigma = std::max(st.sigma, floorShare * std::fabs(st.median));
    return sigma > 0 ? (v - st.median) / sigma : 0.0;
}

// The usual step: the job's median, unless the sorted durations fall apart into clusters (a jump of
// minStepExcess / 2 between neighbours) and the fastest holds at least a fifth of the steps (three or more)
// — a step is never faster than usual, and when over half of them are slowed the median is a slow one (two
// 5-step anomalies in 19 steps hid five steps 1.55x long: robust z 3.4 against the median; three anomalies
// of 3 to 5 steps each left 7 usual steps of 19, and the MAD of the durations hid five 3x steps).
RobustStats usualStep(const std::vector<double>& d, const DiagnosisParams& p) {
    const RobustStats st = robustStats(d);
    std::vector<double> sorted = d;
    std::sort(sorted.begin(), sorted.end());
    std::size_t fast = 1;
    while (fast < sorted.size() && sorted[fast] <= sorted[fast - 1] * (1.0 + p.minStepExcess / 2)) ++fast;
    if (fast < sorted.size() && fast >= 3 && 5 * fast >= sorted.size()) {
        sorted.resize(fast);
        const RobustStats c = robustStats(sorted);
        if (c.median * (1.0 + p.minStepExcess / 2) < st.median) return c;
    }
    return st;
}

namespace {

int kindOrder(const std::string& k) {
    if (k == "slow_stage") return -1;
    if (k == "slow_step" || k == "periodic_stall") return 0;
    if (k == "slow_rank") return 1;
    if (k == "slow_link") return 2;
    return 3;
}

// ---- slow stages -------------------------------------------------------------------------------------------

// A stage slower by construction (the last one carrying the loss and a large vocabulary): its micro-batch
// takes longer than the other stages' in every pipeline, all through the job, and 1F1B runs at the pace of
// its slowest stage. Per stage, the time of one micro-batch as the network sees it: a middle stage's busy
// time before its forward send plus before its backward send; the last stage sends no activations, so the
// busy time before its backward send holds its forward too. Stage 0 sends no gradients: its busy time before
// a forward send mixes warm-up forwards and backward + forward pairs, so it is not judged (nor used as a
// reference). Medians over the job's steps (step 0 aside), per pipeline (DP replica, one host group): a stage
// is slow when in every pipeline it takes at least minStageExcess longer than the median of the other judged
// stages there. It costs the step what its extra time per micro-batch adds over the step's micro-batches.
std::vector<Finding> slowStages(const JobTimeline& tl, std::int64_t medianStepNs, bool experts,
                                const DiagnosisParams& p) {
    std::vector<Finding> out;
    const std::size_t K = tl.steps.size();
    const int stages = tl.stageCount();
    if (stages < 2 || K < 3) return out;
    // (host, stage) -> per-micro-batch times and counts: the ranks of a stage on one host are one pipeline's
    // copy of it (its TP group), or a few.
    std::map<std::pair<int, int>, std::vector<double>> perMb, counts;
    // The last stage of a ring (interleaved chunks) is sampled on its warm-up forwards only (timeline.cpp):
    // its forward time per chunk, scaled below by the other stages' whole (forward + backward) per forward. An
    // estimate, judged at kRingEndExcess (clean interleaved draws read up to 1.45x). Only where the last stage
    // sends about as often as a middle stage (interleaved: (2c - 1) m against 2 c m transfers a step, c >= 2
    // chunks): a tied-embedding ring's last stage sends its m gradients and one all-reduce, and its "warm-up"
    // samples are the all-reduce's channels (read 3.7-6.4x on clean draws).
    constexpr double kRingEndExcess = 0.5;
    std::vector<double> lastSends, middleSends;
    for (const RankTimeline& r : tl.ranks)
        for (std::size_t k = 1; k < K && k < r.stepStats.size(); ++k)
            if (r.stage == stages - 1) lastSends.push_back(double(r.stepStats[k].ppSends));
            else if (r.stage > 0) middleSends.push_back(double(r.stepStats[k].ppSends));
    const bool interleavedEnd =
        !lastSends.empty() && !middleSends.empty() && medianOf(lastSends) >= 0.7 * medianOf(middleSends);
    std::map<std::pair<int, int>, std::vector<double>> ringEndForward, ringStartForward;
    std::vector<double> wholePerForward, wholePerEarlyForward;
    for (const RankTimeline& r : tl.ranks) {
        const bool last = r.stage == stages - 1;
        for (std::size_t k = 1; k < K && k < r.stepStats.size(); ++k) {
            const RankStepStats& s = r.stepStats[k];
            if (last && s.backwardSamples == 0) {
                if (interleavedEnd && s.forwardSamples >= 2)
                    ringEndForward[{r.host, r.stage}].push_back(double(s.forwardComputeNs) / s.forwardSamples);
                continue;
            }
            if (r.stage > 0 && !last && s.forwardSamples > 0 && s.backwardSamples > 0 && s.forwardComputeNs > 0) {
                const double whole =
                    double(s.backwardComputeNs) / s.backwardSamples + double(s.forwardComputeNs) / s.forwardSamples;
                wholePerForward.push_back(whole / (double(s.forwardComputeNs) / s.forwardSamples));
                if (s.earlyForwardNs > 0)
                    wholePerEarlyForward.push_back(whole / (double(s.earlyForwardNs) / s.earlyForwardSamples));
            }
            double t = 0, n = 0;
            if (r.stage == 0) {
                // Stage 0 sends no gradients, but after the first gradient each of its forwards follows a backward
                // (1F1B), and the busy time before its send is the two, a micro-batch's time (its warm-up forwards
                // are no samples: the timeline leaves them out). A slow stage 0 was never named: every other stage
                // waited for it and the job read "nothing slow". (Expert exchanges cut a forward into pieces, and a
                // ring's stage 0 samples its warm-up only: no such time there, dropped below.)
                if (experts || s.forwardSamples < 2) continue;
                t = double(s.forwardComputeNs) / s.forwardSamples;
                n = s.forwardSamples + 1;
            } else {
                if (s.backwardSamples == 0 || (!last && s.forwardSamples == 0)) continue;
                t = double(s.backwardComputeNs) / s.backwardSamples;
                if (!last) t += double(s.forwardComputeNs) / s.forwardSamples;
                n = s.backwardSamples;
            }
            perMb[{r.host, r.stage}].push_back(t);
            counts[{r.host, r.stage}].push_back(n);
        }
    }
    // Stage 0 with fewer samples than half the other stages' micro-batches samples a ring's warm-up, not pairs:
    // its forwards only. Where the ring is interleaved and no DP sync runs on the network they are estimated
    // below as the last stage's are, measured against the middle stages' first forwards (a stage 0 slowed 2.4x
    // all run in TP 8 x PP 3 with 3 chunks was never named). With DP on the network, stage 0's warm-up of
    // clean 3-chunk draws read 2.1x the middle stages' first forwards.
    {
        const bool dpOnNetwork = std::any_of(tl.ranks.begin(), tl.ranks.end(), [](const RankTimeline& r) {
            return std::any_of(r.stepStats.begin(), r.stepStats.end(),
                               [](const RankStepStats& s) { return s.dpStartNs != RankStepStats::kNoTime; });
        });
        double others = 0, first = 0;
        for (const auto& [key, v] : counts)
            (key.second == 0 ? first : others) = std::max(key.second == 0 ? first : others, medianOf(v));
        if (first < 0.5 * others)
            for (auto it = perMb.begin(); it != perMb.end();) {
                if (it->first.second == 0) {
                    if (interleavedEnd && !dpOnNetwork) ringStartForward[it->first] = it->second;
                    counts.erase(it->first);
                    it = perMb.erase(it);
                } else ++it;
            }
    }
    {
        std::vector<double> middleCounts;
        for (const auto& [key, v] : counts)
            if (key.second > 0 && key.second < stages - 1) middleCounts.push_back(medianOf(v));
        auto estimate = [&](const std::map<std::pair<int, int>, std::vector<double>>& forwards, double scale) {
            for (const auto& [key, v] : forwards) {
                std::vector<double>& t = perMb[key];
                for (double x : v) t.push_back(x * scale);
                counts[key].assign(t.size(), middleCounts.empty() ? 0.0 : medianOf(middleCounts));
            }
        };
        if (!wholePerForward.empty()) estimate(ringEndForward, medianOf(wholePerForward));
        // Stage 0's warm-up forwards against the middle stages' first forwards, which wait alike for what the
        // network does not show at a step's start (a distributed optimizer's all-gather inside a host).
        if (!wholePerEarlyForward.empty()) estimate(ringStartForward, medianOf(wholePerEarlyForward));
    }
    std::map<int, std::vector<double>> stageTime;                 // stage -> median per pipeline
    std::map<int, double> microBatches;
    for (auto& [key, v] : perMb) {
        stageTime[key.second].push_back(medianOf(v));
        microBatches[key.second] = std::max(microBatches[key.second], medianOf(counts[key]));
    }
    std::map<int, double> medianOfStage;
    for (auto& [s, v] : stageTime) medianOfStage[s] = medianOf(v);
    if (medianOfStage.size() < 2) return out;
    // Two stages slow at once: a slow GPU's stage in a single pipeline and the last stage heavy by construction
    // (the loss and vocabulary). The slowest first; then the last stage against the rest, when it was not the
    // first (the stages next to a slow one read slower too, waiting for it: no more than these two).
    while (medianOfStage.size() >= 2) {
        int worst = -1;
        for (const auto& [s, t] : medianOfStage)
            if (worst < 0 || t > medianOfStage[worst]) worst = s;
        if (!out.empty()) {
            if (out.size() > 1 || out.front().stage == stages - 1 || !medianOfStage.count(stages - 1)) break;
            worst = stages - 1;
        }
        std::vector<double> others;
        for (const auto& [s, t] : medianOfStage)
            if (s != worst) others.push_back(t);
        const double ref = medianOf(others);
        // Slow in (nearly) every pipeline, not in the median only (a slow rank of one pipeline is a slow_rank): its
        // fastest tenth of pipelines is slower than the slowest tenth of every other stage's (with many replicas of
        // uneven work, as in a real job's 32, the very fastest and slowest are the tails of that work), and its median
        // minStageExcess over theirs.
        std::vector<double> refs;
        for (const auto& [s, v] : stageTime)
            if (s != worst) refs.insert(refs.end(), v.begin(), v.end());
        auto quantile = [](std::vector<double> v, double q) {
            std::sort(v.begin(), v.end());
            return v[std::min(v.size() - 1, std::size_t(q * double(v.size())))];
        };
        const double slowestOther = refs.empty() ? ref : quantile(refs, 0.9);
        const std::vector<double>& own = stageTime[worst];
        const double ownFastest = quantile(own, 0.1);
        const bool estimated = worst == 0 ? !ringStartForward.empty()
                                          : std::any_of(ringEndForward.begin(), ringEndForward.end(),
                                                        [&](const auto& kv) { return kv.first.second == worst; });
        const double excess = estimated ? kRingEndExcess : p.minStageExcess;
        if (!(ref > 0) || medianOfStage[worst] < (1.0 + excess) * ref ||
            ownFastest < (1.0 + p.minStageExcess / 2) * slowestOther)
            break;
        const double t = medianOfStage[worst];
        const double m = microBatches[worst];
        const double cost = (t - ref) * m;
        Finding f;
        f.kind = "slow_stage";
        f.stage = worst;
        f.firstStep = tl.steps.front().index;
        f.lastStep = tl.steps.back().index;
        f.score = t / ref;
        f.evidence = {{"stage", double(worst)},
                      {"micro_batch_ms", t / 1e6},
                      {"other_stages_micro_batch_ms", ref / 1e6},
                      {"micro_batches", m},
                      {"cost_ms_per_step", cost / 1e6}};
        const double stepNs = double(medianStepNs);
        if (stepNs > 0) f.evidence.push_back({"cost_share", cost / stepNs});
        f.message = "slow stage: PP stage " + std::to_string(worst) + (worst == stages - 1 ? " (the last)" : "") +
                    " takes " + ms(t) + " per micro-batch against " + ms(ref) + " for the other stages (" +
                    num(f.score, 2) + "×) in every pipeline, all through the job; over " + num(m, 0) +
                    " micro-batches that is about " + ms(cost) + " per step" +
                    (stepNs > 0 ? " (" + num(100.0 * cost / stepNs, 0) + "% of the " + ms(stepNs) + " step)" : "") +
                    (stageTime[worst].size() == 1
                         ? " — with a single pipeline the network cannot tell a heavier stage (e.g. the loss and "
                           "vocabulary on the last stage: rebalance the layers) from a slow GPU of its TP group: check its "
                           "GPUs too"
                         : " — a structural imbalance (e.g. the loss and vocabulary on the last stage): rebalance the "
                           "layers");
    out.push_back(std::move(f));
        medianOfStage.erase(worst);
        stageTime.erase(worst);
    }
    return out;
}

// ---- slow steps --------------------------------------------------------------------------------------------

std::vector<Finding> slowSteps(const StepDivision& sd, const std::vector<Finding>& causes, const DiagnosisParams& p,
                               std::vector<std::uint8_t>& slow, std::vector<std::string>& notes) {
    std::vector<Finding> out;
    const std::size_t K = sd.steps.size();
    if (K < 4) return out;
    std::vector<double> d, lead;
    for (std::size_t k = 1; k < K; ++k) {
        d.push_back(double(sd.steps[k].durationNs()));
        lead.push_back(double(sd.firstActivityNs[k] - sd.steps[k].startNs));
    }
    const RobustStats st = robustStats(d);
    const RobustStats base = usualStep(d, p);
    const bool usual = base.median < st.median;
    const double leadBase = medianOf(lead);
    // One step stands out at half the margin when it is also kSigma beyond the job's own spread: a steady job's
    // 7.5% step (a 1.3 s pause in a 17.7 s step, 7 sigmas) is an event; a jittery job's spread sets the bar.
    const double slowAt = base.median * (1.0 + p.minStepExcess);
    for (std::size_t k = 1; k < K; ++k)
        if (d[k - 1] >= base.median * (1.0 + p.minStepExcess / 2) && zOf(base, d[k - 1], p.minSigmaShare) >= p.kSigma)
            slow[k] = 1;
    // A BOCD regime (between change points) whose median is slow: a sustained slowdown, which the k-sigma
    // rule alone misses once it lasts long enough to move the job's median.
    std::vector<std::size_t> bounds = {1};
    for (std::size_t cp : sd.changePoints)
        if (cp > 1 && cp < K) bounds.push_back(cp);
    bounds.push_back(K);
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
        if (bounds[i + 1] - bounds[i] < 2) continue;
        const double m = medianOf(std::vector<double>(d.begin() + std::ptrdiff_t(bounds[i] - 1),
                                                      d.begin() + std::ptrdiff_t(bounds[i + 1] - 1)));
        if (m < slowAt) continue;
        for (std::size_t k = bounds[i]; k < bounds[i + 1]; ++k)
            if (d[k - 1] >= base.median * (1.0 + p.minStepExcess / 2)) slow[k] = 1;
    }

    // Without DP traffic a step ends with its last PP transfer, the gradient into stage 0: stage 0's last
    // backwards (and any backlog of them) fall into the next step, and so does its first forward, as silence
    // before the step's first record. So a slow stage 0 also explains the step after its episode, and in its
    // steps and that one as much silence as it causes between its own slow steps (or its extra compute per
    // step, for a one-step episode) is its work, not a pause.
    auto spillInto = [&](int idx) {
        double spill = 0;
        if (sd.source != StepSource::Pipeline) return spill;
        for (const Finding& f : causes) {
            if (f.kind != "slow_rank" || idx < f.firstStep || idx - 1 > f.lastStep) continue;
            double stage = -1, own = 0, peer = 0;
            for (const auto& [key, v] : f.evidence) {
                if (key == "pp_stage") stage = v;
                if (key == "compute_ms") own = v;
                if (key == "peer_compute_ms") peer = v;
            }
            if (stage != 0) continue;
            std::vector<double> inside; // silence before the episode's steps after its first
            for (std::size_t k = 1; k < K; ++k)
                if (sd.steps[k].index > f.firstStep && sd.steps[k].index <= f.lastStep)
                    inside.push_back(lead[k - 1] - leadBase);
            spill = std::max({spill, std::max(0.0, own - peer) * 1e6, medianOf(inside)});
        }
        return spill;
    };
    // Which slow steps are slow_step findings: a job-wide silence before the step (a pause), or nothing else
    // (no slow rank or link in that step) to explain it.
    std::vector<int> flagged;
    for (std::size_t k = 1; k < K; ++k) {
        if (!slow[k]) continue;
        const double extra = d[k - 1] - base.median;
        const int idx = sd.steps[k].index;
        const double spill = spillInto(idx);
        const double silence = lead[k - 1] - leadBase - spill;
        const bool explained = spill > 0 || std::any_of(causes.begin(), causes.end(), [&](const Finding& f) {
                                   return f.firstStep <= idx && idx <= f.lastStep;
                               });
        if (silence >= p.pauseShare * extra || !explained) flagged.push_back(int(k));
    }
    std::vector<Episode> eps = episodesOf(flagged, 0);
    auto describe = [&](const Episode& e, Finding& f) {
        double worst = 0, silence = 0;
        for (int k = e.first; k <= e.last; ++k) {
            worst = std::max(worst, d[std::size_t(k) - 1]);
            silence = std::max(silence, lead[std::size_t(k) - 1] - leadBase);
        }
        f.kind = "slow_step";
        f.firstStep = sd.steps[std::size_t(e.first)].index;
        f.lastStep = sd.steps[std::size_t(e.last)].index;
        f.score = worst / base.median;
        f.evidence = {{"step_ms", worst / 1e6},
                      {"median_step_ms", st.median / 1e6},
                      {"usual_step_ms", base.median / 1e6},
                      {"ratio", f.score},
                      {"silence_ms", std::max(0.0, silence) / 1e6},
                      {"steps", double(e.last - e.first + 1)}};
        return std::pair(worst, silence);
    };
    // Periodic episodes (checkpoints, evaluation every N steps) are one pattern finding: the longest chain of
    // episodes each one period (+-1 step) after the previous, over the periods the episodes' spacings offer.
    // Episodes off the chain (another anomaly) stay findings of their own.
    std::vector<int> starts;
    for (const Episode& e : eps) starts.push_back(e.first);
    int period = 0;
    const std::vector<std::size_t> best = periodicChain(starts, p.minPatternRepeats, period);
    if (!best.empty()) {
        Finding f;
        auto [worst, silence] = describe({eps[best.front()].first, eps[best.back()].last}, f);
        (void)worst;
        (void)silence;
        double extra = 0; // time the stalls add, over the usual step
        std::vector<int> occurrences;
        for (std::size_t i : best) {
            occurrences.push_back(sd.steps[std::size_t(eps[i].first)].index);
            for (int k = eps[i].first; k <= eps[i].last; ++k) extra += d[std::size_t(k) - 1] - base.median;
        }
        makePeriodicStall(f, period, std::move(occurrences), extra / double(best.size()), usual, base.median);
        out.push_back(std::move(f));
        notes.push_back(periodicStallNote(period));
        std::vector<Episode> rest;
        for (std::size_t i = 0; i < eps.size(); ++i)
            if (std::find(best.begin(), best.end(), i) == best.end()) rest.push_back(eps[i]);
        eps = std::move(rest);
    }
    for (const Episode& e : eps) {
        Finding f;
        auto [worst, silence] = describe(e, f);
        const std::string what = e.first == e.last ? stepRange(f.firstStep, f.lastStep) + " took " + ms(worst)
                                                   : stepRange(f.firstStep, f.lastStep) + " took up to " + ms(worst);
        f.message = "slow step: " + what + ", " + num(f.score, 2) +
                    (usual ? "× the job's usual step of " : "× the job's median of ") + ms(base.median) + "; " +
                    (silence >= p.pauseShare * (worst - base.median)
                         ? "for " + ms(silence) + " before it the whole job was silent (a pause or stall)"
                         : "no slow rank or link explains it");
        out.push_back(std::move(f));
    }
    return out;
}

} // namespace

// What fixing each finding would save (Finding::savesMsPerStep, savesShare), a what-if at its peers' pace: a slow
// step's excess over the usual step; a periodic stall's extra time each occurrence; a slow stage's extra time
// per micro-batch over the step's micro-batches; a slow rank's extra compute, or a slow link's extra transfer
// time, as their finders measured it (no more than their DP peers waited for them), and no more than the step's
// excess over the usual step where the finding covers less than half of the job's steps (the usual steps are
// then its peers' pace); a slow switch what its slowest link costs. Shares are of the job's time in steps 1..
// (step 0 starts at the job's first record). The costliest finding comes first, then the order they had.
void assignCosts(std::vector<Finding>& findings, const StepDivision& sd, const DiagnosisParams& p) {
    const std::size_t K = sd.steps.size();
    if (K < 2) return;
    std::vector<double> d;
    double total = 0;
    for (std::size_t k = 1; k < K; ++k) {
        d.push_back(double(sd.steps[k].durationNs()));
        total += d.back();
    }
    const double usual = usualStep(d, p).median;
    auto position = [&](int index) { // report step index -> position in sd.steps
        for (std::size_t k = 0; k < K; ++k)
            if (sd.steps[k].index == index) return int(k);
        return -1;
    };
    auto excessOf = [&](const Finding& f, int& counted) {
        double sum = 0;
        counted = 0;
        for (int k = std::max(1, position(f.firstStep)); k >= 1 && k <= position(f.lastStep); ++k, ++counted)
            sum += std::max(0.0, d[std::size_t(k) - 1] - usual);
        return counted ? sum / counted : 0.0;
    };
    auto evidence = [](const Finding& f, const char* key) {
        for (const auto& [name, v] : f.evidence)
            if (name == key) return v;
        return -1.0;
    };
    for (Finding& f : findings) {
        int steps = 0;
        const double excess = excessOf(f, steps) / 1e6;
        if (f.kind == "slow_step") f.savesMsPerStep = excess;
        else if (f.kind == "periodic_stall") {
            f.savesMsPerStep = std::max(0.0, evidence(f, "stall_ms_each"));
            steps = int(f.occurrences.size());
        } else if (f.kind == "slow_stage") f.savesMsPerStep = std::max(0.0, evidence(f, "cost_ms_per_step"));
        else if (f.savesMsPerStep < 0 && f.kind == "slow_rank") f.savesMsPerStep = excess; // named by timing alone
        else if (f.savesMsPerStep >= 0 && 2 * steps < int(K - 1)) f.savesMsPerStep = std::min(f.savesMsPerStep, excess);
        if (f.savesMsPerStep >= 0 && total > 0) f.savesShare = std::min(1.0, f.savesMsPerStep * 1e6 * steps / total);
    }
    for (Finding& f : findings) // a slow switch: what its costliest slow NIC costs
        if (f.kind == "slow_switch")
            for (const Finding& l : findings)
                if (l.kind == "slow_link" && l.switchName == f.switchName && l.firstStep <= f.lastStep &&
                    f.firstStep <= l.lastStep && l.savesShare > f.savesShare) {
                    f.savesMsPerStep = l.savesMsPerStep;
                    f.savesShare = l.savesShare;
                }
    for (Finding& f : findings)
        if (f.savesShare >= 0)
            f.message += "; fixing it would save about " + ms(f.savesMsPerStep * 1e6) +
                         (f.kind == "periodic_stall" ? " each time" : " per step") + " (" +
                         num(100.0 * f.savesShare, f.savesShare < 0.1 ? 1 : 0) + "% of the job's time)";
    std::stable_sort(findings.begin(), findings.end(),
                     [](const Finding& a, const Finding& b) { return a.savesShare > b.savesShare; });
}

// A GPU slow in one pipeline makes the rest of that pipeline wait in the same steps: stage 0, whose forwards
// have no input transfer to time them from, and the last stage read busy for part of the wait (a GPU 2.79x slow
// all run at stage 5 made stage 0 of its pipeline read 1.14x; 2.89x made 1.70x). A slow rank in the same
// pipeline replica (its chain over the same hosts) as a slower one of three steps or more, at another stage and
// with two thirds of its steps inside that one's (a step boundary may fall between the two), is that one's
// echo: dropped. (Within one or two steps two GPUs of one pipeline are as often
// both slow: the real SE trace has stage 0 at 2.02x and stage 1 at 1.71x in step 30 of one pipeline.)
void dropPipelineEchoes(std::vector<Finding>& ranks, const ParallelismResult& par, const FlowTable& flows,
                        const Topology& topology) {
    if (ranks.size() < 2 || par.ppChains.empty()) return;
    std::map<std::string, std::pair<std::size_t, std::size_t>> where; // NIC address -> (replica, stage)
    std::map<std::vector<int>, std::size_t> replicaOf;                 // a chain's hosts -> replica
    for (const auto& chain : par.ppChains) {
        std::vector<int> hosts;
        for (EndpointId e : chain) {
            const auto nic = topology.nicByIp(flows.endpoints.at(e));
            hosts.push_back(nic ? topology.nics[std::size_t(*nic)].host : -1 - int(e));
        }
        const std::size_t replica = replicaOf.emplace(hosts, replicaOf.size()).first->second;
        for (std::size_t st = 0; st < chain.size(); ++st)
            where[flows.endpoints.at(chain[st]).toString()] = {replica, st};
    }
    std::vector<char> echo(ranks.size(), 0);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        auto a = where.find(ranks[i].ip);
        if (a == where.end()) continue;
        for (std::size_t j = 0; j < ranks.size() && !echo[i]; ++j) {
            auto b = where.find(ranks[j].ip);
            const int shared = std::min(ranks[i].lastStep, ranks[j].lastStep) -
                               std::max(ranks[i].firstStep, ranks[j].firstStep) + 1;
            echo[i] = j != i && b != where.end() && b->second.first == a->second.first &&
                      b->second.second != a->second.second && ranks[j].score > ranks[i].score &&
                      ranks[j].lastStep - ranks[j].firstStep >= 2 &&
                      3 * shared >= 2 * (ranks[i].lastStep - ranks[i].firstStep + 1);
        }
    }
    std::size_t k = 0;
    std::erase_if(ranks, [&](const Finding&) { return echo[k++] != 0; });
}

} // namespace diag

std::vector<Finding> findSlowLinks(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                                   const ParallelismResult& par, const StepDivision& sd, const DiagnosisParams& p,
                                   const JobIndex* index) {
    if (sd.steps.empty()) return {};
    std::optional<JobIndex> own;
    const JobIndex& ix = index ? *index : own.emplace(flows, topology, job, par);
    return diag::slowLinks(flows, topology, job, ix, sd, p);
}

Diagnosis diagnose(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                   const ParallelismResult& par, const StepDivision& sd, const JobTimeline& tl,
                   const DiagnosisParams& p, const JobIndex* index, const std::vector<Finding>* foundLinks) {
    using namespace diag;
    Diagnosis out;
    out.slow.assign(sd.steps.size(), 0);
    if (sd.steps.empty()) return out;
    std::optional<JobIndex> own;
    const JobIndex& ix = index ? *index : own.emplace(flows, topology, job, par);
    std::vector<Finding> ranks;
    if (tl.steps.size() == sd.steps.size()) ranks = slowRanks(tl, sd, expertLateness(flows, ix, job, sd, tl, p), p);
    std::vector<Finding> links = foundLinks ? *foundLinks : slowLinks(flows, topology, job, ix, sd, p);
    // A slow link stretches the transfers of the ranks it serves and of their pipeline neighbours, and the busy time
    // before their sends with them: a rank found a little slow (under 1.3x) only in steps of a slow link is that
    // link (a NIC 8x slow made its own host's and a ring end's next stage read 1.10-1.11x).
    // On the link's own host (its TP group shares the NIC's transfers: a NIC 2.3x slow made its host's stage read
    // 1.80x in exactly the link's steps), a rank inside the link's steps is the link, however slow it reads.
    auto hostOf = [&](const std::string& ip) {
        const auto addr = IpAddr::parse(ip);
        const auto nic = addr ? topology.nicByIp(*addr) : std::nullopt;
        return nic ? topology.nics[std::size_t(*nic)].host : -1;
    };
    std::erase_if(ranks, [&](const Finding& r) {
        const int host = hostOf(r.ip);
        return std::any_of(links.begin(), links.end(), [&](const Finding& l) {
            if (l.firstStep > r.firstStep || r.lastStep > l.lastStep) return false;
            if (r.score < 1.3) return true;
            const std::string ends[] = {l.ip, l.srcIp, l.dstIp};
            return host >= 0 && std::any_of(std::begin(ends), std::end(ends), [&](const std::string& ip) {
                       return !ip.empty() && hostOf(ip) == host;
                   });
        });
    });
    dropPipelineEchoes(ranks, par, flows, topology);
    std::vector<Finding> switches = slowSwitches(links);
    std::vector<Finding> causes = ranks;
    causes.insert(causes.end(), links.begin(), links.end());
    std::vector<Finding> steps = slowSteps(sd, causes, p, out.slow, out.notes);
    std::vector<Finding> stages;
    const bool experts = std::any_of(sd.expertGroups.begin(), sd.expertGroups.end(), [](int g) { return g >= 0; });
    if (tl.steps.size() == sd.steps.size()) stages = slowStages(tl, sd.medianStepNs, experts, p);
    std::vector<Finding> explained = stages;
    for (const auto* list : {&steps, &ranks, &links}) explained.insert(explained.end(), list->begin(), list->end());
    std::vector<Finding> imbalance = dpImbalance(tl, sd, explained, p);
    for (auto* list : {&stages, &steps, &ranks, &links, &switches, &imbalance})
        for (Finding& f : *list) out.findings.push_back(std::move(f));
    std::stable_sort(out.findings.begin(), out.findings.end(), [](const Finding& a, const Finding& b) {
        return std::pair(a.firstStep, kindOrder(a.kind)) < std::pair(b.firstStep, kindOrder(b.kind));
    });
    assignCosts(out.findings, sd, p);
    // A rank whose fix would save less than minSavedShare of a step did not make the job wait: its step was no
    // longer than usual, or its peers were as late (one-step outliers of a job whose replicas' work varies). So
    // did a stage (2.5x over one micro-batch a step, 0.3% of the step: a clean draw's expert exchanges).
    std::erase_if(out.findings, [&](const Finding& f) {
        return (f.kind == "slow_rank" || f.kind == "slow_stage") && f.savesMsPerStep >= 0 &&
               f.savesMsPerStep * 1e6 < p.minSavedShare * double(sd.medianStepNs);
    });
    return out;
}

} // namespace prism
