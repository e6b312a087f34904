// Speed of engine stages 1-2 (job recognition + parallelism inference) after parsing, on one core.
// Input: $LLMPRISM_BENCH_CAPTURE (a capture folder); without it the `large` preset is simulated in memory.
// Reports records/s (items_per_second) over all flow records of the capture.
#include "analysis/parallelism.h"
#include "analysis/recognition.h"
#include "io/capture.h"
#include "sim/simulator.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

namespace {

const prism::Capture& capture() {
    static std::unique_ptr<prism::Capture> c = [] {
        auto cap = std::make_unique<prism::Capture>();
        if (const char* path = std::getenv("LLMPRISM_BENCH_CAPTURE")) {
            *cap = prism::loadCapture(path);
        } else {
            auto sim = prism::sim::simulate(*prism::sim::makePreset("large", 1));
            cap->flows = std::move(sim.flows);
            cap->flows.sortByStart();
            cap->topology = std::move(sim.topology);
            cap->hasTopology = true;
        }
        return cap;
    }();
    return *c;
}

void BM_Recognition(benchmark::State& state) {
    const prism::Capture& c = capture();
    for (auto _ : state) {
        auto r = prism::recognizeJobs(c.flows, c.topology);
        benchmark::DoNotOptimize(r.jobs.data());
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(c.flows.size()));
}

void BM_Parallelism(benchmark::State& state) {
    const prism::Capture& c = capture();
    auto r = prism::recognizeJobs(c.flows, c.topology);
    for (auto _ : state)
        for (const auto& job : r.jobs) {
            auto p = prism::inferParallelism(c.flows, c.topology, job);
            benchmark::DoNotOptimize(p.pairs.data());
        }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(c.flows.size()));
}

void BM_RecognitionAndParallelism(benchmark::State& state) {
    const prism::Capture& c = capture();
    for (auto _ : state) {
        auto r = prism::recognizeJobs(c.flows, c.topology);
        for (const auto& job : r.jobs) {
            auto p = prism::inferParallelism(c.flows, c.topology, job);
            benchmark::DoNotOptimize(p.pairs.data());
        }
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(c.flows.size()));
    state.counters["records"] = double(c.flows.size());
}

} // namespace

BENCHMARK(BM_Recognition)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Parallelism)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_RecognitionAndParallelism)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_MAIN();
