// Is `analyze` linear in records on a day-long job? The `long-run` preset (DP only, 45 s steps, a checkpoint
// every 500 steps, shared NICs) simulated in memory with 250 .. 4,000 steps; analyzeCapture timed on each.
// Linear: the same ns per record at every size (counter ns_per_record). Results in docs/BENCHMARKS.md.
#include "analysis/pipeline.h"
#include "sim/simulator.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <memory>

namespace {

const prism::Capture& captureOf(int steps) {
    static std::map<int, std::unique_ptr<prism::Capture>> cache;
    auto& slot = cache[steps];
    if (!slot) {
        prism::sim::SimConfig config = *prism::sim::makePreset("long-run", 1);
        config.jobs[0].steps = steps;
        config.jobs[0].checkpointEvery = std::min(500, steps / 4); // three stalls or more at every size
        auto sim = prism::sim::simulate(config);
        slot = std::make_unique<prism::Capture>();
        slot->flows = std::move(sim.flows);
        slot->flows.sortByStart();
        slot->topology = std::move(sim.topology);
        slot->hasTopology = true;
    }
    return *slot;
}

void BM_AnalyzeLongRun(benchmark::State& state) {
    const prism::Capture& capture = captureOf(int(state.range(0)));
    std::size_t steps = 0;
    for (auto _ : state) {
        prism::Report report = prism::analyzeCapture(capture);
        steps = report.jobs.empty() ? 0 : report.jobs[0].steps.size();
        benchmark::DoNotOptimize(report);
    }
    const double records = double(capture.flows.size());
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(records));
    state.counters["records"] = records;
    state.counters["steps_found"] = double(steps);
    state.counters["ns_per_record"] = benchmark::Counter(records * double(state.iterations()),
                                                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AnalyzeLongRun)->Arg(250)->Arg(500)->Arg(1000)->Arg(2000)->Arg(4000)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
