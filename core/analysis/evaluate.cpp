#include "analysis/evaluate.h"

#include "model/ip.h"
#include "model/units.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace prism {

namespace {

// hits / total; an empty total scores 1.0 only when the other side is empty too.
double ratio(std::size_t hits, std::size_t total, std::size_t otherTotal) {
    if (total) return double(hits) / double(total);
    return otherTotal == 0 ? 1.0 : 0.0;
}

std::string canonicalIp(const std::string& text) {
    if (auto a = IpAddr::parse(text)) return a->toString();
    return text;
}

// Interns addresses by canonical text, so "fd00:0::1" and "fd00::1" are the same NIC.
class AddressIds {
public:
    std::uint32_t id(const std::string& text) {
        auto [it, added] = m_ids.try_emplace(canonicalIp(text), std::uint32_t(m_ids.size()));
        return it->second;
    }
    std::vector<std::uint32_t> set(const std::vector<std::string>& list) {
        std::vector<std::uint32_t> s;
        s.reserve(list.size());
        for (const auto& a : list) s.push_back(id(a));
        std::sort(s.begin(), s.end());
        s.erase(std::unique(s.begin(), s.end()), s.end());
        return s;
    }

private:
    std::unordered_map<std::string, std::uint32_t> m_ids;
};

using Groups = std::vector<std::vector<std::uint32_t>>;

std::uint64_t pairKey(std::uint32_t a, std::uint32_t b) { return (std::uint64_t(a) << 32) | b; }
std::size_t choose2(std::size_t n) { return n < 2 ? 0 : n * (n - 1) / 2; }

Groups toSets(AddressIds& ids, const std::vector<std::vector<std::string>>& lists) {
    Groups g;
    for (const auto& l : lists) g.push_back(ids.set(l));
    return g;
}

// Chains keep their order; only chains with at least one (stage i, stage i+1) pair count.
Groups toChains(AddressIds& ids, const std::vector<std::vector<std::string>>& lists) {
    Groups g;
    for (const auto& l : lists) {
        if (l.size() < 2) continue;
        std::vector<std::uint32_t> c;
        for (const auto& a : l) c.push_back(ids.id(a));
        g.push_back(std::move(c));
    }
    return g;
}

bool disjoint(const Groups& groups) {
    std::unordered_set<std::uint32_t> seen;
    for (const auto& g : groups)
        for (auto a : g)
            if (!seen.insert(a).second) return false;
    return true;
}

template <typename Set> PrecisionRecall compareSets(const Set& report, const Set& truth) {
    PrecisionRecall pr;
    pr.reportItems = report.size();
    pr.truthItems = truth.size();
    std::size_t common = 0;
    for (const auto& x : report) common += truth.count(x);
    pr.reportMatched = pr.truthMatched = common;
    return pr;
}

// Unordered pairs of addresses that share a group. Disjoint groups (the normal case) are counted by
// formula, so a report that puts thousands of GPUs in one group does not enumerate millions of pairs.
PrecisionRecall groupPairs(const Groups& report, const Groups& truth) {
    if (disjoint(report) && disjoint(truth)) {
        PrecisionRecall pr;
        std::unordered_map<std::uint32_t, std::size_t> truthGroupOf;
        for (std::size_t i = 0; i < truth.size(); ++i) {
            pr.truthItems += choose2(truth[i].size());
            for (auto a : truth[i]) truthGroupOf.emplace(a, i);
        }
        std::size_t common = 0;
        for (const auto& g : report) {
            pr.reportItems += choose2(g.size());
            std::unordered_map<std::size_t, std::size_t> perTruthGroup;
            for (auto a : g)
                if (auto it = truthGroupOf.find(a); it != truthGroupOf.end()) ++perTruthGroup[it->second];
            for (const auto& [group, n] : perTruthGroup) common += choose2(n);
        }
        pr.reportMatched = pr.truthMatched = common;
        return pr;
    }
    // An address in two groups of one side: count the distinct pairs one by one.
    auto pairs = [](const Groups& groups) {
        std::unordered_set<std::uint64_t> s;
        for (const auto& g : groups)
            for (std::size_t i = 0; i < g.size(); ++i)
                for (std::size_t j = i + 1; j < g.size(); ++j) s.insert(pairKey(g[i], g[j])); // g is sorted
        return s;
    };
    return compareSets(pairs(report), pairs(truth));
}

std::unordered_set<std::uint64_t> chainPairs(const Groups& chains) {
    std::unordered_set<std::uint64_t> s;
    for (const auto& c : chains)
        for (std::size_t i = 0; i + 1 < c.size(); ++i) s.insert(pairKey(c[i], c[i + 1]));
    return s;
}

std::int64_t medianDuration(const std::vector<StepInfo>& steps) {
    if (steps.empty()) return 0;
    std::vector<std::int64_t> d;
    d.reserve(steps.size());
    for (const auto& s : steps) d.push_back(s.durationNs());
    std::sort(d.begin(), d.end());
    std::size_t n = d.size();
    return n % 2 ? d[n / 2] : d[n / 2 - 1] + (d[n / 2] - d[n / 2 - 1]) / 2;
}

std::int64_t absDiff(std::int64_t a, std::int64_t b) { return a > b ? a - b : b - a; }

// One-to-one pairs of report and truth steps by their end time.
struct StepMatch {
    std::vector<std::size_t> truthOrder;  // truth positions sorted by end
    std::vector<std::size_t> reportOrder; // report positions sorted by end
    std::vector<int> reportRankOfTruthRank;
    std::vector<int> truthPosOfReportPos; // -1 when the report step matched nothing
    std::size_t matched = 0;
};

std::vector<std::size_t> orderByEnd(const std::vector<StepInfo>& steps) {
    std::vector<std::size_t> order(steps.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return steps[a].endNs < steps[b].endNs; });
    return order;
}

// Greedy on ascending distance: each report end takes its nearest free truth end within the tolerance.
StepMatch matchSteps(const std::vector<StepInfo>& report, const std::vector<StepInfo>& truth, std::int64_t tol) {
    StepMatch m;
    m.truthOrder = orderByEnd(truth);
    m.reportOrder = orderByEnd(report);
    m.reportRankOfTruthRank.assign(truth.size(), -1);
    m.truthPosOfReportPos.assign(report.size(), -1);
    std::vector<std::int64_t> truthEnds;
    for (auto p : m.truthOrder) truthEnds.push_back(truth[p].endNs);

    struct Candidate {
        std::int64_t distance;
        std::size_t truthRank;
        std::size_t reportRank;
    };
    std::vector<Candidate> candidates;
    for (std::size_t r = 0; r < m.reportOrder.size(); ++r) {
        std::int64_t e = report[m.reportOrder[r]].endNs;
        auto k = std::size_t(std::lower_bound(truthEnds.begin(), truthEnds.end(), e - tol) - truthEnds.begin());
        for (; k < truthEnds.size() && truthEnds[k] <= e + tol; ++k)
            candidates.push_back({absDiff(truthEnds[k], e), k, r});
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return std::tie(a.distance, a.truthRank, a.reportRank) < std::tie(b.distance, b.truthRank, b.reportRank);
    });
    std::vector<bool> reportTaken(report.size(), false);
    for (const Candidate& c : candidates) {
        if (m.reportRankOfTruthRank[c.truthRank] >= 0 || reportTaken[c.reportRank]) continue;
        m.reportRankOfTruthRank[c.truthRank] = int(c.reportRank);
        reportTaken[c.reportRank] = true;
        m.truthPosOfReportPos[m.reportOrder[c.reportRank]] = int(m.truthOrder[c.truthRank]);
        ++m.matched;
    }
    return m;
}

StepScore scoreSteps(const std::vector<StepInfo>& report, const std::vector<StepInfo>& truth,
                     const EvaluationOptions& options, StepMatch& match) {
    StepScore s;
    s.truthSteps = truth.size();
    s.reportSteps = report.size();
    s.toleranceNs = std::int64_t(double(medianDuration(truth)) * options.stepTolerance);
    match = matchSteps(report, truth, s.toleranceNs);
    s.matched = match.matched;
    for (std::size_t k = 0; k < match.truthOrder.size(); ++k) {
        int r = match.reportRankOfTruthRank[k];
        if (r < 0) continue;
        const StepInfo& ts = truth[match.truthOrder[k]];
        const StepInfo& rs = report[match.reportOrder[std::size_t(r)]];
        s.maxBoundaryOffsetNs = std::max(s.maxBoundaryOffsetNs, absDiff(rs.endNs, ts.endNs));
        // A duration compares like with like only when the step's start boundary matched too: the previous
        // truth end matched the previous report end, or (first step) both start at the job's first flow.
        bool bothBoundaries = k == 0 ? r == 0 && absDiff(rs.startNs, ts.startNs) <= s.toleranceNs
                                     : r > 0 && match.reportRankOfTruthRank[k - 1] == r - 1;
        if (!bothBoundaries || ts.durationNs() <= 0) continue;
        double err = double(absDiff(rs.durationNs(), ts.durationNs())) / double(ts.durationNs());
        ++s.durationSamples;
        s.sumDurationError += err;
        s.maxDurationError = std::max(s.maxDurationError, err);
    }
    return s;
}

// Maps a finding's report step range onto truth step indices through the step matching.
std::pair<int, int> mapStepRange(int first, int last, const std::vector<StepInfo>& report,
                                 const std::vector<StepInfo>& truth, const StepMatch& m) {
    if (first > last) std::swap(first, last);
    if (m.matched == 0) return {first, last}; // nothing to map through: indices as they are
    int lo = INT_MAX, hi = INT_MIN;
    bool inRange = false;
    std::int64_t spanStart = 0, spanEnd = 0;
    for (std::size_t p = 0; p < report.size(); ++p) {
        const StepInfo& s = report[p];
        if (s.index < first || s.index > last) continue;
        spanStart = inRange ? std::min(spanStart, s.startNs) : s.startNs;
        spanEnd = inRange ? std::max(spanEnd, s.endNs) : s.endNs;
        inRange = true;
        if (int t = m.truthPosOfReportPos[p]; t >= 0) {
            lo = std::min(lo, truth[std::size_t(t)].index);
            hi = std::max(hi, truth[std::size_t(t)].index);
        }
    }
    if (lo <= hi) return {lo, hi};
    if (!inRange) return {first, last};
    // Only unmatched (spurious) report steps in range: take the truth steps they overlap in time.
    for (const StepInfo& t : truth) {
        if (t.startNs < spanEnd && t.endNs > spanStart) {
            lo = std::min(lo, t.index);
            hi = std::max(hi, t.index);
        }
    }
    return lo <= hi ? std::pair{lo, hi} : std::pair{first, last};
}

Finding canonicalFinding(const Finding& f) {
    Finding c = f;
    c.ip = canonicalIp(f.ip);
    c.srcIp = canonicalIp(f.srcIp);
    c.dstIp = canonicalIp(f.dstIp);
    for (auto& g : c.group) g = canonicalIp(g);
    if (c.firstStep > c.lastStep) std::swap(c.firstStep, c.lastStep);
    return c;
}

// Kind and place; the step range is checked apart. Both findings are canonical.
bool samePlace(const Finding& f, const Finding& a) {
    // A switch finding localizes a slow link to the switch it crosses.
    if (f.kind == "slow_switch" && a.kind == "slow_link")
        return !f.switchName.empty() && f.switchName == a.switchName;
    // A pattern finding covers truth given step by step (a pause injected before each of its occurrences).
    if (f.kind == "periodic_stall" && a.kind == "slow_step")
        return std::any_of(f.occurrences.begin(), f.occurrences.end(),
                           [&](int s) { return a.firstStep <= s && s <= a.lastStep; });
    // With one pipeline a stage is one TP group: a slow GPU there and a slow stage are the same place (a
    // slow_rank anomaly carries its stage only in such a job, scoreFindings).
    if (f.kind == "slow_stage" && a.kind == "slow_rank") return a.stage >= 0 && f.stage == a.stage;
    if (f.kind != a.kind) return false;
    if (f.kind == "periodic_stall") return f.periodSteps == a.periodSteps;
    if (f.kind == "slow_stage") return f.stage >= 0 && f.stage == a.stage;
    if (f.kind == "slow_rank")
        return !f.ip.empty() && (f.ip == a.ip || std::find(a.group.begin(), a.group.end(), f.ip) != a.group.end());
    if (f.kind == "slow_link") {
        for (const std::string* x : {&f.ip, &f.srcIp, &f.dstIp})
            if (!x->empty() && (*x == a.ip || *x == a.srcIp || *x == a.dstIp)) return true;
        return false;
    }
    if (f.kind == "slow_step") return true;
    if (f.kind == "slow_switch") return !f.switchName.empty() && f.switchName == a.switchName;
    // A kind this version does not know: every place field must agree.
    return f.ip == a.ip && f.srcIp == a.srcIp && f.dstIp == a.dstIp && f.switchName == a.switchName;
}

void scoreFindings(JobScore& js, const JobInfo& report, const JobInfo& truth, const StepMatch& m) {
    std::vector<Finding> anomalies;
    for (const auto& a : truth.anomalies) {
        anomalies.push_back(canonicalFinding(a));
        Finding& c = anomalies.back();
        if (c.kind != "slow_rank" || truth.dp != 1) continue;
        for (const auto& chain : truth.ppChains)
            for (std::size_t s = 0; s < chain.size(); ++s)
                if (canonicalIp(chain[s]) == c.ip) c.stage = int(s);
    }
    std::vector<bool> found(anomalies.size(), false);
    for (const auto& raw : report.findings) {
        Finding f = canonicalFinding(raw);
        auto [lo, hi] = mapStepRange(f.firstStep, f.lastStep, report.steps, truth.steps, m);
        bool right = false;
        for (std::size_t i = 0; i < anomalies.size(); ++i) {
            const Finding& a = anomalies[i];
            const bool overlaps = lo <= a.lastStep && a.firstStep <= hi;
            if (samePlace(f, a) && overlaps) {
                right = true;
                found[i] = true;
            }
            // A slow step where an anomaly slowed the job is a true slow step (the anomaly's place aside).
            if (f.kind == "slow_step" && overlaps) right = true;
        }
        PrecisionRecall& kind = js.findingsByKind[f.kind];
        ++kind.reportItems;
        ++js.findings.reportItems;
        if (right) {
            ++kind.reportMatched;
            ++js.findings.reportMatched;
        }
    }
    for (std::size_t i = 0; i < anomalies.size(); ++i) {
        if (anomalies[i].optional) continue; // not expected: no miss (found, its findings were right above)
        PrecisionRecall& kind = js.findingsByKind[anomalies[i].kind];
        ++kind.truthItems;
        ++js.findings.truthItems;
        if (found[i]) {
            ++kind.truthMatched;
            ++js.findings.truthMatched;
        }
    }
}

// Scores one truth job against one report job; either may be absent (then it is an empty job).
JobScore scoreJob(AddressIds& ids, int ti, int ri, const Report& report, const Report& truth,
                  const EvaluationOptions& options) {
    static const JobInfo kNone;
    const JobInfo& t = ti >= 0 ? truth.jobs[std::size_t(ti)] : kNone;
    const JobInfo& r = ri >= 0 ? report.jobs[std::size_t(ri)] : kNone;
    JobScore js;
    js.truthIndex = ti;
    js.reportIndex = ri;
    if (ti >= 0) js.truthId = t.id;
    if (ri >= 0) js.reportId = r.id;
    bool matched = js.matched();

    auto tg = ids.set(t.gpus), rg = ids.set(r.gpus);
    std::vector<std::uint32_t> shared;
    std::set_intersection(tg.begin(), tg.end(), rg.begin(), rg.end(), std::back_inserter(shared));
    js.truthGpus = tg.size();
    js.reportGpus = rg.size();
    js.sharedGpus = shared.size();
    js.missingGpus = tg.size() - shared.size();
    js.extraGpus = rg.size() - shared.size();
    std::size_t unionSize = tg.size() + rg.size() - shared.size();
    js.jaccard = matched && unionSize ? double(shared.size()) / double(unionSize) : 0.0;
    js.recognized = matched && js.missingGpus == 0 && js.extraGpus == 0;

    js.tp = {t.tp, r.tp, matched && t.tp == r.tp};
    js.pp = {t.pp, r.pp, matched && t.pp == r.pp};
    js.dp = {t.dp, r.dp, matched && t.dp == r.dp};

    js.dpPairs = groupPairs(toSets(ids, r.dpGroups), toSets(ids, t.dpGroups));
    Groups rc = toChains(ids, r.ppChains), tc = toChains(ids, t.ppChains);
    js.ppPairs = compareSets(chainPairs(rc), chainPairs(tc));
    js.ppChains = compareSets(std::set<std::vector<std::uint32_t>>(rc.begin(), rc.end()),
                              std::set<std::vector<std::uint32_t>>(tc.begin(), tc.end()));

    StepMatch m;
    js.steps = scoreSteps(r.steps, t.steps, options, m);
    scoreFindings(js, r, t, m);
    return js;
}

void addKinds(std::map<std::string, PrecisionRecall>& into, const std::map<std::string, PrecisionRecall>& from) {
    for (const auto& [kind, pr] : from) into[kind] += pr;
}

// ---- text --------------------------------------------------------------------------------------------

std::string num(std::size_t n) { return std::to_string(n); }
// Two decimals: step-duration errors worth reading are well under 1% (the paper reports 0.3%).
std::string percent2(double fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%%", fraction * 100.0);
    return buf;
}
std::string fixed3(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
}

void row(std::string& out, const std::string& label, const std::string& truth, const std::string& report,
         const std::string& matched, const std::string& precision, const std::string& recall,
         const std::string& note) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-22s %8s %8s %8s %10s %8s", label.c_str(), truth.c_str(), report.c_str(),
                  matched.c_str(), precision.c_str(), recall.c_str());
    std::string line = buf;
    if (!note.empty()) line += "  " + note;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
}

void prRow(std::string& out, const std::string& label, const PrecisionRecall& pr, std::string note = {}) {
    if (pr.reportMatched != pr.truthMatched) {
        std::string right = num(pr.reportMatched) + " right in the report";
        note = note.empty() ? right : note + ", " + right;
    }
    row(out, label, num(pr.truthItems), num(pr.reportItems), num(pr.truthMatched), fixed3(pr.precision()),
        fixed3(pr.recall()), note);
}

void header(std::string& out) { row(out, "figure", "truth", "report", "matched", "precision", "recall", ""); }

void stepRows(std::string& out, const StepScore& s, bool perJob) {
    std::string note = num(s.missed()) + " missed, " + num(s.spurious()) + " spurious";
    row(out, "steps", num(s.truthSteps), num(s.reportSteps), num(s.matched), fixed3(s.precision()),
        fixed3(s.found()), note);
    row(out, "step duration error", "", "", "", "", "",
        s.durationSamples ? "mean " + percent2(s.meanDurationError()) + ", max " + percent2(s.maxDurationError) +
                                " over " + num(s.durationSamples) + " steps"
                          : "no step with both boundaries matched");
    if (s.matched) {
        std::string offset = "max " + formatDuration(s.maxBoundaryOffsetNs);
        if (perJob) offset += " (tolerance " + formatDuration(s.toleranceNs) + ")";
        row(out, "step end offset", "", "", "", "", "", offset);
    }
}

void findingRows(std::string& out, const PrecisionRecall& all, const std::map<std::string, PrecisionRecall>& kinds) {
    prRow(out, "findings", all);
    for (const auto& [kind, pr] : kinds) prRow(out, "  " + kind, pr);
}

const char* verdict(bool exact) { return exact ? "exact" : "WRONG"; }

std::string jobHeading(const JobScore& j) {
    if (!j.matched()) {
        if (j.truthIndex >= 0) return "truth " + j.truthId + "  <->  (no report job matches)";
        return "(no truth job)  <->  report " + j.reportId;
    }
    std::string s = "truth " + j.truthId + "  <->  report " + j.reportId + "  (Jaccard " + fixed3(j.jaccard);
    s += j.recognized ? ", same GPUs)" : ", " + num(j.missingGpus) + " missing, " + num(j.extraGpus) + " extra)";
    return s;
}

void dimensionRow(std::string& out, const char* label, const DimensionScore& d, bool matched) {
    row(out, label, std::to_string(d.truth), std::to_string(d.report), "", "", "", matched ? verdict(d.exact) : "");
}

// ---- json --------------------------------------------------------------------------------------------

nlohmann::json prJson(const PrecisionRecall& pr) {
    return nlohmann::json{{"truth", pr.truthItems},
                          {"report", pr.reportItems},
                          {"truth_matched", pr.truthMatched},
                          {"report_matched", pr.reportMatched},
                          {"precision", pr.precision()},
                          {"recall", pr.recall()},
                          {"exact", pr.exact()}};
}

nlohmann::json kindsJson(const std::map<std::string, PrecisionRecall>& kinds) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [kind, pr] : kinds) o[kind] = prJson(pr);
    return o;
}

nlohmann::json stepsJson(const StepScore& s, bool perJob) {
    nlohmann::json o{{"truth", s.truthSteps},
                     {"report", s.reportSteps},
                     {"matched", s.matched},
                     {"missed", s.missed()},
                     {"spurious", s.spurious()},
                     {"found", s.found()},
                     {"precision", s.precision()},
                     {"exact", s.exact()},
                     {"duration_samples", s.durationSamples},
                     {"mean_duration_error", nullptr},
                     {"max_duration_error", nullptr},
                     {"max_boundary_offset_ns", nullptr}};
    if (perJob) o["tolerance_ns"] = s.toleranceNs;
    if (s.durationSamples) {
        o["mean_duration_error"] = s.meanDurationError();
        o["max_duration_error"] = s.maxDurationError;
    }
    if (s.matched) o["max_boundary_offset_ns"] = s.maxBoundaryOffsetNs;
    return o;
}

nlohmann::json nameOrNull(int index, const std::string& id) {
    return index >= 0 ? nlohmann::json(id) : nlohmann::json(nullptr);
}

} // namespace

double PrecisionRecall::precision() const { return ratio(reportMatched, reportItems, truthItems); }
double PrecisionRecall::recall() const { return ratio(truthMatched, truthItems, reportItems); }

PrecisionRecall& PrecisionRecall::operator+=(const PrecisionRecall& o) {
    reportItems += o.reportItems;
    truthItems += o.truthItems;
    reportMatched += o.reportMatched;
    truthMatched += o.truthMatched;
    return *this;
}

double StepScore::found() const { return ratio(matched, truthSteps, reportSteps); }
double StepScore::precision() const { return ratio(matched, reportSteps, truthSteps); }

StepScore& StepScore::operator+=(const StepScore& o) {
    truthSteps += o.truthSteps;
    reportSteps += o.reportSteps;
    matched += o.matched;
    durationSamples += o.durationSamples;
    sumDurationError += o.sumDurationError;
    maxDurationError = std::max(maxDurationError, o.maxDurationError);
    maxBoundaryOffsetNs = std::max(maxBoundaryOffsetNs, o.maxBoundaryOffsetNs);
    return *this; // toleranceNs is per job and stays 0 in sums
}

bool JobScore::perfect() const {
    return recognized && tp.exact && pp.exact && dp.exact && dpPairs.exact() && ppPairs.exact() && ppChains.exact() &&
           steps.exact();
}

bool EvaluationResult::perfect() const {
    return totals.jobs.exact() && totals.restarts.exact() &&
           std::all_of(jobs.begin(), jobs.end(), [](const JobScore& j) { return j.perfect(); });
}

EvaluationResult evaluate(const Report& report, const Report& truth, const EvaluationOptions& options) {
    EvaluationResult res;
    res.options = options;
    AddressIds ids;
    std::vector<std::vector<std::uint32_t>> truthSets, reportSets;
    for (const auto& j : truth.jobs) truthSets.push_back(ids.set(j.gpus));
    for (const auto& j : report.jobs) reportSets.push_back(ids.set(j.gpus));

    // Candidate pairs by GPU-set Jaccard, through an index from address to the truth jobs holding it.
    std::unordered_map<std::uint32_t, std::vector<std::size_t>> truthJobsOf;
    for (std::size_t t = 0; t < truthSets.size(); ++t)
        for (auto a : truthSets[t]) truthJobsOf[a].push_back(t);
    struct Candidate {
        double jaccard;
        std::size_t t, r;
    };
    std::vector<Candidate> candidates;
    for (std::size_t r = 0; r < reportSets.size(); ++r) {
        std::map<std::size_t, std::size_t> shared;
        for (auto a : reportSets[r])
            if (auto it = truthJobsOf.find(a); it != truthJobsOf.end())
                for (auto t : it->second) ++shared[t];
        for (const auto& [t, n] : shared) {
            double j = double(n) / double(truthSets[t].size() + reportSets[r].size() - n);
            if (j >= options.minJaccard) candidates.push_back({j, t, r});
        }
    }
    // Greedy on descending Jaccard; ties go to the earlier truth job, then the earlier report job.
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        if (a.jaccard != b.jaccard) return a.jaccard > b.jaccard;
        return std::tie(a.t, a.r) < std::tie(b.t, b.r);
    });
    std::vector<int> reportOfTruth(truth.jobs.size(), -1), truthOfReport(report.jobs.size(), -1);
    for (const Candidate& c : candidates) {
        if (reportOfTruth[c.t] >= 0 || truthOfReport[c.r] >= 0) continue;
        reportOfTruth[c.t] = int(c.r);
        truthOfReport[c.r] = int(c.t);
    }

    for (std::size_t t = 0; t < truth.jobs.size(); ++t)
        res.jobs.push_back(scoreJob(ids, int(t), reportOfTruth[t], report, truth, options));
    for (std::size_t r = 0; r < report.jobs.size(); ++r)
        if (truthOfReport[r] < 0) res.jobs.push_back(scoreJob(ids, -1, int(r), report, truth, options));

    EvaluationTotals& tot = res.totals;
    tot.jobs.truthItems = truth.jobs.size();
    tot.jobs.reportItems = report.jobs.size();
    for (const JobScore& j : res.jobs) {
        if (j.matched()) ++tot.matchedJobs;
        if (j.recognized) {
            ++tot.jobs.truthMatched;
            ++tot.jobs.reportMatched;
        }
        tot.tpExact += j.tp.exact;
        tot.ppExact += j.pp.exact;
        tot.dpExact += j.dp.exact;
        tot.dpPairs += j.dpPairs;
        tot.ppPairs += j.ppPairs;
        tot.ppChains += j.ppChains;
        tot.steps += j.steps;
        tot.findings += j.findings;
        addKinds(tot.findingsByKind, j.findingsByKind);
    }
    // Restart links, through the job matching: truth "b restarted a" is found when the report job matched to
    // b names the report job matched to a.
    auto truthIndexOf = [&](const std::string& id) {
        for (std::size_t t = 0; t < truth.jobs.size(); ++t)
            if (truth.jobs[t].id == id) return int(t);
        return -1;
    };
    auto reportIndexOf = [&](const std::string& id) {
        for (std::size_t r = 0; r < report.jobs.size(); ++r)
            if (report.jobs[r].id == id) return int(r);
        return -1;
    };
    auto linkRight = [&](int t, int r) {
        if (t < 0 || r < 0 || truth.jobs[std::size_t(t)].restartOf.empty()) return false;
        const int before = truthIndexOf(truth.jobs[std::size_t(t)].restartOf);
        const int named = reportIndexOf(report.jobs[std::size_t(r)].restartOf);
        return before >= 0 && named >= 0 && reportOfTruth[std::size_t(before)] == named;
    };
    for (std::size_t t = 0; t < truth.jobs.size(); ++t)
        if (!truth.jobs[t].restartOf.empty()) {
            ++tot.restarts.truthItems;
            tot.restarts.truthMatched += linkRight(int(t), reportOfTruth[t]);
        }
    for (std::size_t r = 0; r < report.jobs.size(); ++r)
        if (!report.jobs[r].restartOf.empty()) {
            ++tot.restarts.reportItems;
            tot.restarts.reportMatched += linkRight(truthOfReport[r], int(r));
        }
    return res;
}

std::string EvaluationResult::toText() const {
    std::string out;
    for (const JobScore& j : jobs) {
        out += jobHeading(j) + '\n';
        header(out);
        std::string gpuNote = j.matched() ? num(j.missingGpus) + " missing, " + num(j.extraGpus) + " extra" : "";
        row(out, "GPUs", num(j.truthGpus), num(j.reportGpus), num(j.sharedGpus), "", "",
            j.matched() ? "Jaccard " + fixed3(j.jaccard) + ", " + gpuNote : "");
        dimensionRow(out, "TP", j.tp, j.matched());
        dimensionRow(out, "PP", j.pp, j.matched());
        dimensionRow(out, "DP", j.dp, j.matched());
        prRow(out, "DP-group pairs", j.dpPairs);
        prRow(out, "PP pairs", j.ppPairs);
        prRow(out, "PP chains", j.ppChains, std::string("order ") + verdict(j.ppChains.exact()));
        stepRows(out, j.steps, true);
        findingRows(out, j.findings, j.findingsByKind);
        out += '\n';
    }

    const EvaluationTotals& t = totals;
    const std::size_t truthJobs = t.jobs.truthItems;
    out += "Totals over all jobs (micro-averaged)\n";
    header(out);
    prRow(out, "jobs recognized", t.jobs, num(t.matchedJobs) + " matched by overlap");
    const std::pair<const char*, std::size_t> shapes[] = {
        {"TP exact", t.tpExact}, {"PP exact", t.ppExact}, {"DP exact", t.dpExact}};
    for (const auto& [label, n] : shapes)
        row(out, label, num(truthJobs), "", num(n), "", fixed3(ratio(n, truthJobs, t.jobs.reportItems)), "");
    prRow(out, "DP-group pairs", t.dpPairs);
    prRow(out, "PP pairs", t.ppPairs);
    prRow(out, "PP chains", t.ppChains);
    stepRows(out, t.steps, false);
    findingRows(out, t.findings, t.findingsByKind);
    if (t.restarts.truthItems || t.restarts.reportItems) prRow(out, "restart links", t.restarts);

    std::vector<std::string> wrong;
    if (!t.jobs.exact()) wrong.push_back("job recognition");
    if (t.tpExact != truthJobs || t.ppExact != truthJobs || t.dpExact != truthJobs) wrong.push_back("TP/PP/DP");
    if (!t.dpPairs.exact()) wrong.push_back("DP groups");
    if (!t.ppPairs.exact() || !t.ppChains.exact()) wrong.push_back("PP chains");
    if (!t.restarts.exact()) wrong.push_back("restart links");
    if (!t.steps.exact()) wrong.push_back("steps");
    std::string list;
    for (const auto& w : wrong) list += (list.empty() ? "" : ", ") + w;
    out += perfect() ? "Perfect: yes (jobs, shapes, groups, chains and steps exact)\n" : "Perfect: no (" + list + ")\n";
    return out;
}

nlohmann::json EvaluationResult::toJson() const {
    using nlohmann::json;
    json jobList = json::array();
    for (const JobScore& j : jobs) {
        auto dim = [](const DimensionScore& d) {
            return json{{"truth", d.truth}, {"report", d.report}, {"exact", d.exact}};
        };
        json chains = prJson(j.ppChains);
        jobList.push_back(json{{"truth_job", nameOrNull(j.truthIndex, j.truthId)},
                               {"report_job", nameOrNull(j.reportIndex, j.reportId)},
                               {"matched", j.matched()},
                               {"perfect", j.perfect()},
                               {"gpus",
                                {{"truth", j.truthGpus},
                                 {"report", j.reportGpus},
                                 {"shared", j.sharedGpus},
                                 {"missing", j.missingGpus},
                                 {"extra", j.extraGpus},
                                 {"jaccard", j.jaccard},
                                 {"exact", j.recognized}}},
                               {"tp", dim(j.tp)},
                               {"pp", dim(j.pp)},
                               {"dp", dim(j.dp)},
                               {"dp_pairs", prJson(j.dpPairs)},
                               {"pp_pairs", prJson(j.ppPairs)},
                               {"pp_chains", std::move(chains)},
                               {"steps", stepsJson(j.steps, true)},
                               {"findings", prJson(j.findings)},
                               {"findings_by_kind", kindsJson(j.findingsByKind)}});
    }
    const EvaluationTotals& t = totals;
    auto count = [&](std::size_t n) {
        return json{
            {"exact", n}, {"of", t.jobs.truthItems}, {"fraction", ratio(n, t.jobs.truthItems, t.jobs.reportItems)}};
    };
    json jobsTotal = prJson(t.jobs);
    jobsTotal["matched_by_overlap"] = t.matchedJobs;
    return json{{"format", "llmprism-evaluation"},
                {"version", 1},
                {"perfect", perfect()},
                {"options", {{"min_jaccard", options.minJaccard}, {"step_tolerance", options.stepTolerance}}},
                {"jobs", std::move(jobList)},
                {"totals",
                 {{"jobs", std::move(jobsTotal)},
                  {"tp", count(t.tpExact)},
                  {"pp", count(t.ppExact)},
                  {"dp", count(t.dpExact)},
                  {"dp_pairs", prJson(t.dpPairs)},
                  {"pp_pairs", prJson(t.ppPairs)},
                  {"pp_chains", prJson(t.ppChains)},
                  {"steps", stepsJson(t.steps, false)},
                  {"findings", prJson(t.findings)},
                  {"findings_by_kind", kindsJson(t.findingsByKind)},
                  {"restarts", prJson(t.restarts)}}}};
}

} // namespace prism
