// Speed of engine stages 3-5 (step division, per-rank timeline, diagnosis) and of the whole analysis.
// Input: $LLMPRISM_BENCH_CAPTURE (a capture folder); without it the `large` preset is simulated in memory.
// Stage figures run on the recognized jobs after parsing, recognition and parallelism; BM_WholeAnalysis is
// runAnalysis on the parsed capture (what the GUI keeps: timelines with segments), BM_ReportOnlyAnalysis is
// analyzeCapture (the report only); BM_AnalyzeFromDisk (only with $LLMPRISM_BENCH_CAPTURE) adds the parse,
// as `llmprism-cli analyze` does. items_per_second counts the capture's flow records.
#include "analysis/diagnosis.h"
#include "analysis/pipeline.h"
#include "analysis/steps.h"
#include "analysis/timeline.h"
#include "io/capture.h"
#include "sim/simulator.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

namespace {

struct Prepared {
    prism::Capture capture;
    prism::RecognitionResult recognition;
    std::vector<prism::ParallelismResult> parallelism;
    std::vector<prism::StepDivision> steps;
    std::vector<prism::JobTimeline> timelines;
};

const Prepared& prepared() {
    static std::unique_ptr<Prepared> p = [] {
        auto out = std::make_unique<Prepared>();
        prism::Capture& cap = out->capture;
        if (const char* path = std::getenv("LLMPRISM_BENCH_CAPTURE")) {
            cap = prism::loadCapture(path);
        } else {
            auto sim = prism::sim::simulate(*prism::sim::makePreset("large", 1));
            cap.flows = std::move(sim.flows);
            cap.flows.sortByStart();
            cap.topology = std::move(sim.topology);
            cap.hasTopology = true;
        }
        out->recognition = prism::recognizeJobs(cap.flows, cap.topology);
        const std::int64_t first = cap.flows.empty() ? 0 : cap.flows.startNs.front();
        for (const auto& job : out->recognition.jobs) {
            out->parallelism.push_back(prism::inferParallelism(cap.flows, cap.topology, job));
            out->steps.push_back(prism::divideSteps(cap.flows, cap.topology, job, out->parallelism.back(), {}, first));
            out->timelines.push_back(
                prism::buildTimeline(cap.flows, cap.topology, job, out->parallelism.back(), out->steps.back()));
        }
        return out;
    }();
    return *p;
}

void count(benchmark::State& state, const Prepared& p) {
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(p.capture.flows.size()));
    state.counters["records"] = double(p.capture.flows.size());
}

void BM_StepDivision(benchmark::State& state) {
    const Prepared& p = prepared();
    const std::int64_t first = p.capture.flows.startNs.front();
    for (auto _ : state)
        for (std::size_t j = 0; j < p.recognition.jobs.size(); ++j) {
            auto d = prism::divideSteps(p.capture.flows, p.capture.topology, p.recognition.jobs[j], p.parallelism[j],
                                        {}, first);
            benchmark::DoNotOptimize(d.steps.data());
        }
    count(state, p);
    std::size_t steps = 0;
    for (const auto& d : p.steps) steps += d.steps.size();
    state.counters["steps"] = double(steps);
}

void BM_Timeline(benchmark::State& state) {
    const Prepared& p = prepared();
    for (auto _ : state)
        for (std::size_t j = 0; j < p.recognition.jobs.size(); ++j) {
            auto t = prism::buildTimeline(p.capture.flows, p.capture.topology, p.recognition.jobs[j], p.parallelism[j],
                                          p.steps[j]);
            benchmark::DoNotOptimize(t.ranks.data());
        }
    count(state, p);
    std::size_t segments = 0;
    for (const auto& t : p.timelines) segments += t.segmentCount();
    state.counters["segments"] = double(segments);
}

// What a report-only analysis (llmprism-cli analyze) builds: the step statistics without segments.
void BM_TimelineStatsOnly(benchmark::State& state) {
    const Prepared& p = prepared();
    for (auto _ : state)
        for (std::size_t j = 0; j < p.recognition.jobs.size(); ++j) {
            auto t = prism::buildTimelineStats(p.capture.flows, p.capture.topology, p.recognition.jobs[j],
                                               p.parallelism[j], p.steps[j]);
            benchmark::DoNotOptimize(t.ranks.data());
        }
    count(state, p);
}

void BM_Diagnosis(benchmark::State& state) {
    const Prepared& p = prepared();
    for (auto _ : state)
        for (std::size_t j = 0; j < p.recognition.jobs.size(); ++j) {
            auto d = prism::diagnose(p.capture.flows, p.capture.topology, p.recognition.jobs[j], p.parallelism[j],
                                     p.steps[j], p.timelines[j]);
            benchmark::DoNotOptimize(d.findings.data());
        }
    count(state, p);
}

// A query the Gantt view makes per rank and repaint: the segments visible in a window of one step.
void BM_TimelineVisibleQuery(benchmark::State& state) {
    const Prepared& p = prepared();
    const prism::JobTimeline& tl = p.timelines.front();
    const auto& st = tl.steps[tl.steps.size() / 2];
    std::size_t n = 0;
    for (auto _ : state) {
        for (std::size_t r = 0; r < tl.ranks.size(); ++r) {
            auto [a, b] = tl.visible(r, st.startNs, st.endNs);
            n += b - a;
        }
        benchmark::DoNotOptimize(n);
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(tl.ranks.size()));
    state.counters["ranks"] = double(tl.ranks.size());
}

void BM_WholeAnalysis(benchmark::State& state) {
    const Prepared& p = prepared();
    for (auto _ : state) {
        auto a = prism::runAnalysis(p.capture);
        benchmark::DoNotOptimize(a.report.jobs.data());
    }
    count(state, p);
}

// The report only (what `llmprism-cli analyze` runs after parsing): timelines are not kept.
void BM_ReportOnlyAnalysis(benchmark::State& state) {
    const Prepared& p = prepared();
    for (auto _ : state) {
        auto r = prism::analyzeCapture(p.capture);
        benchmark::DoNotOptimize(r.jobs.data());
    }
    count(state, p);
}

void BM_AnalyzeFromDisk(benchmark::State& state) {
    const char* path = std::getenv("LLMPRISM_BENCH_CAPTURE");
    if (!path) {
        state.SkipWithError("set LLMPRISM_BENCH_CAPTURE to a capture folder to time parse + analysis");
        return;
    }
    std::size_t records = 0;
    for (auto _ : state) {
        prism::Capture c = prism::loadCapture(path);
        auto r = prism::analyzeCapture(c);
        records = c.flows.size();
        benchmark::DoNotOptimize(r.jobs.data());
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(records));
}

} // namespace

BENCHMARK(BM_StepDivision)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Timeline)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_TimelineStatsOnly)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Diagnosis)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_TimelineVisibleQuery)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WholeAnalysis)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_ReportOnlyAnalysis)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_AnalyzeFromDisk)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_MAIN();
