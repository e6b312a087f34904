// Scoring a report against ground truth: each deliberate mistake in a report moves the figure it should.
#include "analysis/evaluate.h"
#include "io/report_json.h"
#include "model/diagnostics.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

using namespace prism;

namespace {

const std::string kData = std::string(LLMPRISM_TEST_DATA) + "/evaluate/";

// The truth turned into the report a flawless analysis would write: other ids, findings = anomalies.
Report perfectReportFor(const Report& truth) {
    Report r;
    for (std::size_t i = 0; i < truth.jobs.size(); ++i) {
        JobInfo j = truth.jobs[i];
        j.id = "job-" + std::to_string(i);
        j.name.clear();
        for (Finding f : j.anomalies) {
            f.group.clear();
            f.factor = 0.0;
            f.score = 4.0;
            j.findings.push_back(f);
        }
        j.anomalies.clear();
        r.jobs.push_back(std::move(j));
    }
    return r;
}

// By value: callers pass the result of evaluate() straight in, a temporary.
JobScore scoreOf(const EvaluationResult& res, const std::string& truthId) {
    auto it = std::find_if(res.jobs.begin(), res.jobs.end(), [&](const JobScore& j) { return j.truthId == truthId; });
    if (it == res.jobs.end()) throw std::runtime_error("no score for " + truthId);
    return *it;
}

std::size_t pairsInGroups(const std::vector<std::vector<std::string>>& groups) {
    std::size_t n = 0;
    for (const auto& g : groups) n += g.size() * (g.size() - 1) / 2;
    return n;
}

// Renumbers steps 0..n-1 in time order and makes each start at the previous end, as an analysis would.
void renumber(std::vector<StepInfo>& steps) {
    std::sort(steps.begin(), steps.end(), [](const StepInfo& a, const StepInfo& b) { return a.endNs < b.endNs; });
    for (std::size_t i = 0; i < steps.size(); ++i) {
        steps[i].index = int(i);
        if (i > 0) steps[i].startNs = steps[i - 1].endNs;
    }
}

bool near(double a, double b) { return std::abs(a - b) < 1e-9; }

} // namespace

class TestEvaluate : public QObject {
    Q_OBJECT

private:
    Report m_truth;
    // Fixture layout (tests/data/evaluate/truth.json): job-a TP1 PP2 DP4 on 8 IPv4 NICs, 10 steps, a slow rank and
    // a slow link; job-b TP1 PP3 DP1, 6 steps, a slow step; job-c TP4 PP1 DP2 on 4 IPv6 NICs, 8 steps, no anomaly.
    static constexpr int kA = 0, kB = 1, kC = 2;

private slots:
    void initTestCase() {
        m_truth = readReportFile(kData + "truth.json");
        QCOMPARE(m_truth.jobs.size(), std::size_t(3));
        QCOMPARE(m_truth.jobs[kA].id, std::string("job-a"));
        QCOMPARE(m_truth.jobs[kA].anomalies.size(), std::size_t(2));
    }

    void aPerfectReportScoresOneEverywhere() {
        EvaluationResult res = evaluate(perfectReportFor(m_truth), m_truth);
        QVERIFY(res.perfect());
        QCOMPARE(res.jobs.size(), m_truth.jobs.size());
        for (std::size_t i = 0; i < m_truth.jobs.size(); ++i) {
            const JobInfo& t = m_truth.jobs[i];
            const JobScore& j = res.jobs[i];
            QCOMPARE(j.truthId, t.id);
            QCOMPARE(j.reportId, "job-" + std::to_string(i));
            QVERIFY(j.matched() && j.recognized && j.perfect());
            QCOMPARE(j.jaccard, 1.0);
            QCOMPARE(j.missingGpus + j.extraGpus, std::size_t(0));
            QVERIFY(j.tp.exact && j.pp.exact && j.dp.exact);
            QCOMPARE(j.tp.report, t.tp);
            QCOMPARE(j.dpPairs.truthItems, pairsInGroups(t.dpGroups));
            QCOMPARE(j.dpPairs.precision(), 1.0);
            QCOMPARE(j.dpPairs.recall(), 1.0);
            QCOMPARE(j.ppPairs.precision(), 1.0);
            QCOMPARE(j.ppPairs.recall(), 1.0);
            QVERIFY(j.ppChains.exact());
            QCOMPARE(j.steps.truthSteps, t.steps.size());
            QCOMPARE(j.steps.found(), 1.0);
            QCOMPARE(j.steps.spurious(), std::size_t(0));
            QCOMPARE(j.steps.durationSamples, t.steps.size()); // every step, the first one included
            QCOMPARE(j.steps.maxDurationError, 0.0);
            QCOMPARE(j.steps.maxBoundaryOffsetNs, std::int64_t(0));
            QCOMPARE(j.findings.truthItems, t.anomalies.size());
            QCOMPARE(j.findings.precision(), 1.0);
            QCOMPARE(j.findings.recall(), 1.0);
        }
        const EvaluationTotals& tot = res.totals;
        QCOMPARE(tot.jobs.precision(), 1.0);
        QCOMPARE(tot.jobs.recall(), 1.0);
        QCOMPARE(tot.tpExact + tot.ppExact + tot.dpExact, 3 * m_truth.jobs.size());
        QCOMPARE(tot.dpPairs.truthItems,
                 pairsInGroups(m_truth.jobs[kA].dpGroups) + pairsInGroups(m_truth.jobs[kC].dpGroups));
        QCOMPARE(tot.steps.found(), 1.0);
        QCOMPARE(tot.findings.truthItems, std::size_t(3));
        QCOMPARE(tot.findings.recall(), 1.0);
        QCOMPARE(tot.findingsByKind.at("slow_step").recall(), 1.0);
    }

    // restart_of links are scored through the job matching: the report names its own ids.
    void restartLinksAreScoredThroughTheJobMatching() {
        Report truth = m_truth;
        truth.jobs[kC].restartOf = "job-a";
        Report r = perfectReportFor(truth);
        r.jobs[kC].restartOf = "job-0"; // the report job matched to job-a
        EvaluationResult right = evaluate(r, truth);
        QVERIFY(right.totals.restarts.exact());
        QCOMPARE(right.totals.restarts.truthItems, std::size_t(1));
        QVERIFY(right.perfect());
        QVERIFY(right.toJson()["totals"]["restarts"].is_object());

        r.jobs[kC].restartOf = "job-1"; // matched to job-b: wrong
        EvaluationResult wrong = evaluate(r, truth);
        QCOMPARE(wrong.totals.restarts.precision(), 0.0);
        QCOMPARE(wrong.totals.restarts.recall(), 0.0);
        QVERIFY(!wrong.perfect());
        QVERIFY(QString::fromStdString(wrong.toText()).contains("restart links"));

        r.jobs[kC].restartOf.clear(); // not found
        EvaluationResult missed = evaluate(r, truth);
        QCOMPARE(missed.totals.restarts.recall(), 0.0);
        QVERIFY(!missed.perfect());
    }

    void theOrderOfReportJobsDoesNotMatter() {
        Report r = perfectReportFor(m_truth);
        std::reverse(r.jobs.begin(), r.jobs.end());
        EvaluationResult res = evaluate(r, m_truth);
        QVERIFY(res.perfect());
        QCOMPARE(scoreOf(res, "job-a").reportId, std::string("job-0"));
        QCOMPARE(scoreOf(res, "job-a").reportIndex, 2);
    }

    void aMissingJobLowersRecallOnly() {
        Report r = perfectReportFor(m_truth);
        r.jobs.erase(r.jobs.begin() + kB);
        EvaluationResult res = evaluate(r, m_truth);
        QVERIFY(!res.perfect());
        QCOMPARE(res.totals.jobs.precision(), 1.0);
        QCOMPARE(res.totals.jobs.recall(), 2.0 / 3.0);
        const JobScore& b = scoreOf(res, "job-b");
        QVERIFY(!b.matched());
        QCOMPARE(b.reportIndex, -1);
        QCOMPARE(b.missingGpus, m_truth.jobs[kB].gpus.size());
        QVERIFY(!b.tp.exact);
        QVERIFY(scoreOf(res, "job-a").perfect());
        QVERIFY(scoreOf(res, "job-c").perfect());
        // The missed job's items count as missed, never as wrong.
        QCOMPARE(res.totals.ppPairs.precision(), 1.0);
        QVERIFY(res.totals.ppPairs.recall() < 1.0);
        QCOMPARE(res.totals.steps.spurious(), std::size_t(0));
        QCOMPARE(res.totals.steps.missed(), m_truth.jobs[kB].steps.size());
        QCOMPARE(res.totals.findings.precision(), 1.0);
        QCOMPARE(res.totals.findings.recall(), 2.0 / 3.0);
        QCOMPARE(res.totals.tpExact, std::size_t(2));
    }

    void twoJobsMergedIntoOneLowerPrecisionAndRecall() {
        Report r = perfectReportFor(m_truth);
        JobInfo& a = r.jobs[kA];
        const JobInfo& b = m_truth.jobs[kB];
        a.gpus.insert(a.gpus.end(), b.gpus.begin(), b.gpus.end());
        r.jobs.erase(r.jobs.begin() + kB);
        EvaluationResult res = evaluate(r, m_truth);
        const JobScore& ja = scoreOf(res, "job-a");
        QVERIFY(ja.matched());
        QVERIFY(!ja.recognized);
        QCOMPARE(ja.extraGpus, b.gpus.size());
        QCOMPARE(ja.missingGpus, std::size_t(0));
        QCOMPARE(ja.jaccard, double(m_truth.jobs[kA].gpus.size()) / double(a.gpus.size()));
        QVERIFY(!scoreOf(res, "job-b").matched()); // 3 of 11 GPUs: under the 0.5 bar, and taken anyway
        QCOMPARE(res.totals.jobs.precision(), 1.0 / 2.0); // only job-c of the two report jobs is exact
        QCOMPARE(res.totals.jobs.recall(), 1.0 / 3.0);
        QCOMPARE(res.totals.matchedJobs, std::size_t(2));
        QVERIFY(!res.perfect());
        // The merged job's parallelism is still job-a's.
        QVERIFY(ja.tp.exact && ja.pp.exact && ja.dp.exact);
        QVERIFY(ja.dpPairs.exact());
    }

    void aJobUnderHalfOverlapIsNotMatched() {
        Report r = perfectReportFor(m_truth);
        r.jobs[kA].gpus.resize(3); // Jaccard 3/8
        EvaluationResult res = evaluate(r, m_truth);
        QVERIFY(!scoreOf(res, "job-a").matched());
        QCOMPARE(res.jobs.size(), std::size_t(4)); // the three truth jobs, then the unmatched report job
        QCOMPARE(res.jobs.back().truthIndex, -1);
        QCOMPARE(res.jobs.back().reportId, std::string("job-0"));
        QCOMPARE(res.totals.jobs.precision(), 2.0 / 3.0);
        QCOMPARE(res.totals.jobs.recall(), 2.0 / 3.0);
    }

    void anExtraReportJobLowersPrecisionAndItsFindingsAreWrong() {
        Report r = perfectReportFor(m_truth);
        JobInfo extra;
        extra.id = "job-9";
        extra.gpus = {"10.9.0.1", "10.9.0.2"};
        extra.dpGroups = {extra.gpus};
        Finding f;
        f.kind = "slow_step";
        extra.findings.push_back(f);
        r.jobs.push_back(extra);
        EvaluationResult res = evaluate(r, m_truth);
        QCOMPARE(res.totals.jobs.precision(), 3.0 / 4.0);
        QCOMPARE(res.totals.jobs.recall(), 1.0);
        QCOMPARE(res.jobs.back().reportId, std::string("job-9"));
        QVERIFY(!res.jobs.back().matched());
        QCOMPARE(res.totals.findings.precision(), 3.0 / 4.0);
        QCOMPARE(res.totals.findings.recall(), 1.0);
        QVERIFY(res.totals.dpPairs.precision() < 1.0);
        QVERIFY(!res.perfect());
    }

    void aWrongShapeIsReportedPerDimension() {
        Report r = perfectReportFor(m_truth);
        r.jobs[kA].tp = 2;
        r.jobs[kA].dp = 2;
        EvaluationResult res = evaluate(r, m_truth);
        const JobScore& a = scoreOf(res, "job-a");
        QVERIFY(!a.tp.exact);
        QVERIFY(a.pp.exact);
        QVERIFY(!a.dp.exact);
        QCOMPARE(a.tp.report, 2);
        QCOMPARE(a.tp.truth, m_truth.jobs[kA].tp);
        QVERIFY(a.recognized);
        QVERIFY(a.dpPairs.exact() && a.ppPairs.exact() && a.steps.exact());
        QCOMPARE(res.totals.tpExact, std::size_t(2));
        QCOMPARE(res.totals.ppExact, std::size_t(3));
        QVERIFY(!res.perfect());
    }

    void aSplitDpGroupKeepsPrecisionAndLosesRecall() {
        Report r = perfectReportFor(m_truth);
        auto& groups = r.jobs[kA].dpGroups;
        std::vector<std::string> first = groups[0];
        groups[0] = {first[0], first[1]};
        groups.push_back({first[2], first[3]});
        EvaluationResult res = evaluate(r, m_truth);
        const JobScore& a = scoreOf(res, "job-a");
        std::size_t truthPairs = pairsInGroups(m_truth.jobs[kA].dpGroups);
        std::size_t reportPairs = pairsInGroups(groups);
        QCOMPARE(a.dpPairs.truthItems, truthPairs);
        QCOMPARE(a.dpPairs.reportItems, reportPairs);
        QCOMPARE(a.dpPairs.precision(), 1.0); // every reported pair is right
        QCOMPARE(a.dpPairs.recall(), double(reportPairs) / double(truthPairs));
        QVERIFY(a.ppPairs.exact() && a.ppChains.exact() && a.steps.exact());
        QVERIFY(!a.perfect());
        QVERIFY(!res.perfect());
    }

    void groupPairsAreCountedOnceWhenGroupsOverlap() {
        Report r = perfectReportFor(m_truth);
        auto& groups = r.jobs[kA].dpGroups;
        groups.push_back({groups[0][0], groups[0][1]}); // a duplicate pair, and an address in two groups
        groups.push_back({groups[0][0], groups[1][0]}); // one wrong pair
        const JobScore& a = scoreOf(evaluate(r, m_truth), "job-a");
        std::size_t truthPairs = pairsInGroups(m_truth.jobs[kA].dpGroups);
        QCOMPARE(a.dpPairs.reportItems, truthPairs + 1);
        QCOMPARE(a.dpPairs.reportMatched, truthPairs);
        QCOMPARE(a.dpPairs.recall(), 1.0);
    }

    void aReversedPpChainHasNoRightPair() {
        Report r = perfectReportFor(m_truth);
        for (auto& chain : r.jobs[kB].ppChains) std::reverse(chain.begin(), chain.end());
        EvaluationResult res = evaluate(r, m_truth);
        const JobScore& b = scoreOf(res, "job-b");
        QCOMPARE(b.ppPairs.reportItems, m_truth.jobs[kB].gpus.size() - 1);
        QCOMPARE(b.ppPairs.precision(), 0.0);
        QCOMPARE(b.ppPairs.recall(), 0.0);
        QVERIFY(!b.ppChains.exact());
        QVERIFY(b.pp.exact && b.dpPairs.exact() && b.steps.exact());
        QVERIFY(!res.perfect());
        QVERIFY(scoreOf(res, "job-a").perfect());
    }

    void aChainWithOneWrongStageLosesItsPairsAndOrder() {
        Report r = perfectReportFor(m_truth);
        std::swap(r.jobs[kA].ppChains[0][1], r.jobs[kA].ppChains[1][1]); // .1->.6 and .2->.5
        const JobScore& a = scoreOf(evaluate(r, m_truth), "job-a");
        std::size_t chains = m_truth.jobs[kA].ppChains.size();
        QCOMPARE(a.ppPairs.precision(), double(chains - 2) / double(chains));
        QCOMPARE(a.ppChains.truthMatched, chains - 2);
        QVERIFY(!a.ppChains.exact());
    }

    void jobsWithoutChainsOrDpScoreOneWhenTheReportAgrees() {
        // job-c has PP 1 (no chains), job-b has DP 1 (singleton groups): nothing to find, nothing found.
        EvaluationResult res = evaluate(perfectReportFor(m_truth), m_truth);
        const JobScore& c = scoreOf(res, "job-c");
        QCOMPARE(c.ppPairs.truthItems + c.ppPairs.reportItems, std::size_t(0));
        QCOMPARE(c.ppPairs.precision(), 1.0);
        QCOMPARE(c.ppChains.recall(), 1.0);
        const JobScore& b = scoreOf(res, "job-b");
        QCOMPARE(b.dpPairs.truthItems, std::size_t(0));
        QCOMPARE(b.dpPairs.recall(), 1.0);

        // A chain where there is none is wrong, and scores 0 rather than a vacuous 1.
        Report r = perfectReportFor(m_truth);
        r.jobs[kC].ppChains = {{m_truth.jobs[kC].gpus[0], m_truth.jobs[kC].gpus[1]}};
        r.jobs[kB].dpGroups = {m_truth.jobs[kB].gpus};
        res = evaluate(r, m_truth);
        QCOMPARE(scoreOf(res, "job-c").ppPairs.precision(), 0.0);
        QCOMPARE(scoreOf(res, "job-c").ppPairs.recall(), 0.0);
        QVERIFY(!scoreOf(res, "job-c").ppChains.exact());
        QCOMPARE(scoreOf(res, "job-b").dpPairs.precision(), 0.0);
        QVERIFY(!res.perfect());
    }

    void aShiftedBoundaryGivesItsErrorOnTheTwoStepsItSeparates() {
        Report r = perfectReportFor(m_truth);
        auto& steps = r.jobs[kA].steps;
        const std::int64_t shift = steps[2].durationNs() / 100; // 1% of a step
        steps[2].endNs += shift;
        steps[3].startNs += shift;
        EvaluationResult res = evaluate(r, m_truth);
        const StepScore& s = scoreOf(res, "job-a").steps;
        QCOMPARE(s.found(), 1.0);
        QCOMPARE(s.spurious(), std::size_t(0));
        QCOMPARE(s.maxBoundaryOffsetNs, shift);
        QCOMPARE(s.durationSamples, steps.size());
        QVERIFY(near(s.maxDurationError, 0.01));
        QVERIFY(near(s.sumDurationError, 0.02)); // step 2 is 1% long, step 3 1% short, the rest exact
        QVERIFY(near(s.meanDurationError(), 0.02 / double(steps.size())));
        QVERIFY(res.perfect()); // within the tolerance: the steps are all found
    }

    void aBoundaryBeyondTheToleranceIsAMissAndASpuriousStep() {
        Report r = perfectReportFor(m_truth);
        auto& steps = r.jobs[kA].steps;
        const std::int64_t shift = steps[2].durationNs() / 5; // 20%, twice the 10% tolerance
        steps[2].endNs += shift;
        steps[3].startNs += shift;
        EvaluationResult res = evaluate(r, m_truth);
        const StepScore& s = scoreOf(res, "job-a").steps;
        QCOMPARE(s.toleranceNs, m_truth.jobs[kA].steps[0].durationNs() / 10); // the median step is 1 ms
        QCOMPARE(s.missed(), std::size_t(1));
        QCOMPARE(s.spurious(), std::size_t(1));
        QCOMPARE(s.maxDurationError, 0.0);         // steps 2 and 3 lost a boundary: no duration measured
        QCOMPARE(s.durationSamples, steps.size() - 2);
        QVERIFY(!res.perfect());
    }

    void aMissedStepLowersFoundAndKeepsFindingsMapped() {
        Report r = perfectReportFor(m_truth);
        JobInfo& a = r.jobs[kA];
        a.steps[2].endNs = a.steps[3].endNs; // the boundary between steps 2 and 3 was not seen
        a.steps.erase(a.steps.begin() + 3);
        renumber(a.steps);
        for (Finding& f : a.findings) { // the analysis numbers its own steps
            if (f.firstStep > 3) --f.firstStep;
            if (f.lastStep > 3) --f.lastStep;
        }
        EvaluationResult res = evaluate(r, m_truth);
        const JobScore& ja = scoreOf(res, "job-a");
        QCOMPARE(ja.steps.matched, m_truth.jobs[kA].steps.size() - 1);
        QCOMPARE(ja.steps.found(), 9.0 / 10.0);
        QCOMPARE(ja.steps.precision(), 1.0);
        QCOMPARE(ja.steps.spurious(), std::size_t(0));
        QCOMPARE(ja.steps.maxDurationError, 0.0);
        QCOMPARE(ja.findings.precision(), 1.0);
        QCOMPARE(ja.findings.recall(), 1.0);
        QVERIFY(!res.perfect());
        QCOMPARE(res.totals.steps.missed(), std::size_t(1));
    }

    void aSpuriousStepIsCountedAndFindingIndicesMapThroughTheMatching() {
        Report r = perfectReportFor(m_truth);
        JobInfo& b = r.jobs[kB];
        StepInfo half = b.steps[1];
        half.endNs = half.startNs + half.durationNs() / 2;
        b.steps.push_back(half); // step 1 split in two
        renumber(b.steps);
        b.findings[0].firstStep = b.findings[0].lastStep = 4; // the slow step is the report's step 4
        EvaluationResult res = evaluate(r, m_truth);
        const JobScore& jb = scoreOf(res, "job-b");
        QCOMPARE(jb.steps.reportSteps, m_truth.jobs[kB].steps.size() + 1);
        QCOMPARE(jb.steps.found(), 1.0);
        QCOMPARE(jb.steps.spurious(), std::size_t(1));
        QCOMPARE(jb.steps.precision(), 6.0 / 7.0);
        QVERIFY(!jb.steps.exact());
        QVERIFY(!res.perfect());
        QCOMPARE(jb.findings.recall(), 1.0); // report step 4 is truth step 3

        // Read as a truth index, report step 3 would hit the anomaly; mapped, it is truth step 2 and misses.
        b.findings[0].firstStep = b.findings[0].lastStep = 3;
        QCOMPARE(scoreOf(evaluate(r, m_truth), "job-b").findings.recall(), 0.0);
    }

    void withoutStepsFindingIndicesAreUsedAsTheyAre() {
        Report r = perfectReportFor(m_truth);
        r.jobs[kB].steps.clear();
        EvaluationResult res = evaluate(r, m_truth);
        QCOMPARE(scoreOf(res, "job-b").steps.found(), 0.0);
        QCOMPARE(scoreOf(res, "job-b").findings.recall(), 1.0);
        r.jobs[kB].findings[0].firstStep = r.jobs[kB].findings[0].lastStep = 4;
        QCOMPARE(scoreOf(evaluate(r, m_truth), "job-b").findings.recall(), 0.0);
    }

    void aMissedAnomalyHalvesRecall() {
        Report r = perfectReportFor(m_truth);
        auto& f = r.jobs[kA].findings;
        f.erase(std::remove_if(f.begin(), f.end(), [](const Finding& x) { return x.kind == "slow_link"; }), f.end());
        EvaluationResult res = evaluate(r, m_truth);
        const JobScore& a = scoreOf(res, "job-a");
        QCOMPARE(a.findings.recall(), 0.5);
        QCOMPARE(a.findings.precision(), 1.0);
        QCOMPARE(a.findingsByKind.at("slow_link").recall(), 0.0);
        QCOMPARE(a.findingsByKind.at("slow_rank").recall(), 1.0);
        QVERIFY(res.perfect()); // findings are not part of perfect()
    }

    void aFindingAtTheWrongPlaceLowersPrecision() {
        Report r = perfectReportFor(m_truth);
        for (Finding& f : r.jobs[kA].findings)
            if (f.kind == "slow_rank") f.ip = "10.0.0.7";
        const JobScore& a = scoreOf(evaluate(r, m_truth), "job-a");
        QCOMPARE(a.findings.precision(), 0.5);
        QCOMPARE(a.findings.recall(), 0.5);
        QCOMPARE(a.findingsByKind.at("slow_rank").precision(), 0.0);
    }

    void aFindingOutsideTheAnomalyStepsDoesNotMatch() {
        Report r = perfectReportFor(m_truth);
        for (Finding& f : r.jobs[kA].findings)
            if (f.kind == "slow_rank") f.firstStep = f.lastStep = 8;
        QCOMPARE(scoreOf(evaluate(r, m_truth), "job-a").findings.precision(), 0.5);
        for (Finding& f : r.jobs[kA].findings)
            if (f.kind == "slow_rank") { // overlaps step 6
                f.firstStep = 6;
                f.lastStep = 9;
            }
        QCOMPARE(scoreOf(evaluate(r, m_truth), "job-a").findings.precision(), 1.0);
    }

    void aSlowRankFindingOnAGroupMemberMatches() {
        Report truth = m_truth;
        for (Finding& a : truth.jobs[kA].anomalies)
            if (a.kind == "slow_rank") a.group = {"10.0.0.3", "10.0.0.4"};
        Report r = perfectReportFor(m_truth);
        for (Finding& f : r.jobs[kA].findings)
            if (f.kind == "slow_rank") f.ip = "10.0.0.4";
        QCOMPARE(scoreOf(evaluate(r, truth), "job-a").findings.precision(), 1.0);
        QCOMPARE(scoreOf(evaluate(r, m_truth), "job-a").findings.precision(), 0.5);
    }

    void aSlowLinkFindingMatchesOnAnySharedEndpoint() {
        Report r = perfectReportFor(m_truth);
        for (Finding& f : r.jobs[kA].findings)
            if (f.kind == "slow_link") {
                f.srcIp = "10.0.0.5"; // reversed direction, one endpoint in `ip`
                f.dstIp.clear();
                f.ip = "10.0.0.8";
            }
        QCOMPARE(scoreOf(evaluate(r, m_truth), "job-a").findings.precision(), 1.0);
        for (Finding& f : r.jobs[kA].findings)
            if (f.kind == "slow_link") f.srcIp = "10.0.0.6";
        QCOMPARE(scoreOf(evaluate(r, m_truth), "job-a").findings.precision(), 0.5);
    }

    void aSlowSwitchOnTheRightLeafFindsTheSlowLink() {
        Report r = perfectReportFor(m_truth);
        for (Finding& f : r.jobs[kA].findings)
            if (f.kind == "slow_link") {
                f = Finding{};
                f.kind = "slow_switch";
                f.switchName = "leaf-0";
                f.firstStep = 2;
                f.lastStep = 5;
            }
        EvaluationResult res = evaluate(r, m_truth);
        const JobScore& a = scoreOf(res, "job-a");
        QCOMPARE(a.findings.precision(), 1.0);
        QCOMPARE(a.findings.recall(), 1.0);
        QCOMPARE(a.findingsByKind.at("slow_switch").precision(), 1.0);
        QCOMPARE(a.findingsByKind.at("slow_link").recall(), 1.0);

        for (Finding& f : r.jobs[kA].findings)
            if (f.kind == "slow_switch") f.switchName = "leaf-1";
        const JobScore& wrong = scoreOf(evaluate(r, m_truth), "job-a");
        QCOMPARE(wrong.findings.precision(), 0.5);
        QCOMPARE(wrong.findings.recall(), 0.5);
    }

    void noFindingsAgainstAnomaliesScoresZeroAndNothingAgainstNothingScoresOne() {
        Report r = perfectReportFor(m_truth);
        for (JobInfo& j : r.jobs) j.findings.clear();
        EvaluationResult res = evaluate(r, m_truth);
        QCOMPARE(scoreOf(res, "job-a").findings.precision(), 0.0);
        QCOMPARE(scoreOf(res, "job-a").findings.recall(), 0.0);
        QCOMPARE(scoreOf(res, "job-c").findings.precision(), 1.0); // no anomaly, no finding
        QCOMPARE(scoreOf(res, "job-c").findings.recall(), 1.0);

        EvaluationResult empty = evaluate(Report{}, Report{});
        QVERIFY(empty.perfect());
        QCOMPARE(empty.totals.jobs.precision(), 1.0);
        QCOMPARE(empty.totals.steps.found(), 1.0);
        QVERIFY(!evaluate(Report{}, m_truth).perfect());
        QCOMPARE(evaluate(Report{}, m_truth).totals.jobs.precision(), 0.0);
    }

    void addressesAreComparedInCanonicalForm() {
        Report r = perfectReportFor(m_truth);
        for (auto& ip : r.jobs[kC].gpus) ip = "FD00:0:0::" + ip.substr(6);
        r.jobs[kC].dpGroups[0][0] = "fd00:0000::1";
        EvaluationResult res = evaluate(r, m_truth);
        const JobScore& c = scoreOf(res, "job-c");
        QVERIFY(c.recognized);
        QVERIFY(c.dpPairs.exact());
        QVERIFY(res.perfect());
    }

    void theTextHasATablePerJobAndTheTotals() {
        Report r = perfectReportFor(m_truth);
        r.jobs[kB].steps.pop_back();
        EvaluationResult res = evaluate(r, m_truth);
        QString text = QString::fromStdString(res.toText());
        for (const JobInfo& j : m_truth.jobs)
            QVERIFY2(text.contains(QString::fromStdString("truth " + j.id)), qPrintable(text));
        QVERIFY(text.contains("DP-group pairs"));
        QVERIFY(text.contains("step duration error"));
        QVERIFY(text.contains("Totals"));
        QVERIFY2(text.contains("Perfect: no (steps)"), qPrintable(text));
        QVERIFY(QString::fromStdString(evaluate(perfectReportFor(m_truth), m_truth).toText()).contains("Perfect: yes"));
    }

    void theJsonHoldsEveryFigureUnderStableKeys() {
        Report r = perfectReportFor(m_truth);
        r.jobs.erase(r.jobs.begin() + kB);
        EvaluationResult res = evaluate(r, m_truth);
        nlohmann::json j = res.toJson();
        QCOMPARE(j.at("perfect").get<bool>(), false);
        QCOMPARE(j.at("jobs").size(), std::size_t(3));
        const nlohmann::json& a = j.at("jobs").at(0);
        QCOMPARE(a.at("truth_job").get<std::string>(), std::string("job-a"));
        for (const char* key : {"gpus", "tp", "pp", "dp", "dp_pairs", "pp_pairs", "pp_chains", "steps", "findings",
                                "findings_by_kind"})
            QVERIFY2(a.contains(key), key);
        QCOMPARE(a.at("gpus").at("jaccard").get<double>(), 1.0);
        QCOMPARE(a.at("steps").at("tolerance_ns").get<std::int64_t>(), scoreOf(res, "job-a").steps.toleranceNs);
        QVERIFY(j.at("jobs").at(1).at("report_job").is_null());
        const nlohmann::json& t = j.at("totals");
        QCOMPARE(t.at("jobs").at("recall").get<double>(), res.totals.jobs.recall());
        QCOMPARE(t.at("steps").at("found").get<double>(), res.totals.steps.found());
        QCOMPARE(t.at("findings").at("truth").get<std::size_t>(), res.totals.findings.truthItems);
        QCOMPARE(t.at("tp").at("exact").get<std::size_t>(), std::size_t(2));
        QCOMPARE(t.at("tp").at("of").get<std::size_t>(), m_truth.jobs.size());
    }

    void fixturesReadFromDiskScorePerfect() {
        Report report = readReportFile(kData + "report-perfect.json");
        EvaluationResult res = evaluate(report, m_truth);
        QVERIFY2(res.perfect(), res.toText().c_str());
        QCOMPARE(res.totals.findings.recall(), 1.0);
        QCOMPARE(res.totals.findings.precision(), 1.0);
        QCOMPARE(scoreOf(res, "job-a").reportId, std::string("job-1")); // listed second in the report
    }

    void aMalformedReportFileGivesAnInputErrorNamingTheFile() {
        for (const char* name : {"report-not-json.json", "report-bad-step.json"}) {
            const std::string path = kData + name;
            try {
                readReportFile(path);
                QFAIL("no InputError");
            } catch (const InputError& e) {
                QCOMPARE(e.issue().file, path);
                QVERIFY2(std::string(e.what()).find(path) != std::string::npos, e.what());
            }
        }
        try {
            readReportFile(kData + "report-bad-step.json");
        } catch (const InputError& e) {
            QVERIFY2(e.issue().message.find("jobs[0].steps[1]") != std::string::npos, e.what());
            QVERIFY2(e.issue().message.find("end_ns") != std::string::npos, e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestEvaluate)
#include "tst_evaluate.moc"
