// Speed of the session file (.prism): writing (import throughput after the analysis), opening (everything the
// GUI needs to paint: capture, report, recognition, parallelism, timelines) and the SHA-256 of the source.
// Input: $LLMPRISM_BENCH_CAPTURE (a capture folder); without it the `large` preset is simulated in memory.
// Session files go to $LLMPRISM_BENCH_TMP (default /tmp). Times are wall clock (UseRealTime): opening
// decodes on every core.
#include "analysis/pipeline.h"
#include "io/capture.h"
#include "sim/simulator.h"
#include "store/session.h"
#include "store/sha256.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <unistd.h>

namespace {

struct Input {
    prism::Capture capture;
    prism::Analysis analysis;
};

const Input& input() {
    static std::unique_ptr<Input> in = [] {
        auto i = std::make_unique<Input>();
        if (const char* path = std::getenv("LLMPRISM_BENCH_CAPTURE")) {
            i->capture = prism::loadCapture(path);
        } else {
            auto sim = prism::sim::simulate(*prism::sim::makePreset("large", 1));
            i->capture.source = "large (simulated in memory)";
            i->capture.flows = std::move(sim.flows);
            i->capture.flows.sortByStart();
            i->capture.topology = std::move(sim.topology);
            i->capture.hasTopology = true;
        }
        i->analysis = prism::runAnalysis(i->capture);
        return i;
    }();
    return *in;
}

std::string sessionPath() {
    const char* dir = std::getenv("LLMPRISM_BENCH_TMP");
    return std::string(dir ? dir : "/tmp") + "/bench-store-" + std::to_string(::getpid()) + ".prism";
}

// Written once per process by whichever benchmark needs it first; removed at exit.
const std::string& savedSession() {
    static std::string path = [] {
        std::string p = sessionPath();
        prism::SaveOptions so;
        so.flowsChecksum = prism::FileChecksum{};
        so.topologyChecksum = prism::FileChecksum{};
        prism::saveSession(p, input().capture, input().analysis, {}, so);
        std::atexit([] { std::filesystem::remove(sessionPath()); });
        return p;
    }();
    return path;
}

void BM_SaveSession(benchmark::State& state) {
    const Input& in = input();
    const std::string path = sessionPath() + ".save";
    prism::SaveOptions so; // checksums measured apart (BM_Sha256): the CLI overlaps them with the analysis
    so.flowsChecksum = prism::FileChecksum{};
    so.topologyChecksum = prism::FileChecksum{};
    for (auto _ : state) prism::saveSession(path, in.capture, in.analysis, {}, so);
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(in.capture.flows.size()));
    state.counters["records"] = double(in.capture.flows.size());
    state.counters["file_MB"] = double(std::filesystem::file_size(path)) / 1e6;
    state.counters["file_B_per_record"] =
        double(std::filesystem::file_size(path)) / double(std::max<std::size_t>(1, in.capture.flows.size()));
    std::filesystem::remove(path);
}

void openBench(benchmark::State& state, bool timelines) {
    const std::string& path = savedSession();
    prism::OpenOptions oo;
    oo.timelines = timelines;
    std::size_t records = 0, segments = 0;
    std::optional<prism::Session> s;
    for (auto _ : state) {
        // Freeing the previous session (0.6 GB on `large`) is not part of opening.
        state.PauseTiming();
        s.reset();
        state.ResumeTiming();
        s = prism::openSession(path, oo);
        benchmark::DoNotOptimize(&s->capture.flows.startNs);
    }
    records = s->capture.flows.size();
    for (const auto& j : s->analysis.jobs) segments += j.timeline.segmentCount();
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(records));
    state.counters["records"] = double(records);
    if (timelines) state.counters["segments"] = double(segments);
}

void BM_OpenSession(benchmark::State& state) { openBench(state, true); }
void BM_OpenSessionWithoutTimelines(benchmark::State& state) { openBench(state, false); }

void BM_Sha256(benchmark::State& state) {
    std::vector<std::uint8_t> data(64 << 20);
    std::mt19937_64 rng(1);
    for (auto& b : data) b = std::uint8_t(rng());
    for (auto _ : state) {
        prism::Sha256 sha;
        sha.update(data.data(), data.size());
        benchmark::DoNotOptimize(sha.finish());
    }
    state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(data.size()));
}

} // namespace

BENCHMARK(BM_SaveSession)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_OpenSession)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK(BM_OpenSessionWithoutTimelines)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK(BM_Sha256)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_MAIN();
