// Speed of BOCD (core/analysis/bocd.h) on 1M points, one core. The cost per point is proportional to the
// number of run lengths kept, so each case reports it (runLengths = BocdResult::meanRunLengthsKept) next to
// points/s (items_per_second) and run-length updates/s (updates = points x runLengths).
//  - Piecewise/L/seg: piecewise-constant series (σ = 1, levels alternating ±1.5, segment lengths uniform in
//    [L/2, 3L/2]) with the default settings: pruning at 1e-4, no cap; seg = 0 leaves out the segmentation
//    (as the engine runs it).
//  - Capped/C: white noise, where pruning cannot drop anything (the whole series is one run), capped at C.
#include "analysis/bocd.h"

#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <vector>

namespace {

constexpr std::size_t kPoints = 1'000'000;

const std::vector<double>& piecewise(std::size_t meanLength)
{
    static std::map<std::size_t, std::vector<double>> cache;
    auto& x = cache[meanLength];
    if (x.empty()) {
        std::mt19937_64 rng(meanLength);
        std::normal_distribution<double> noise(0.0, 1.0);
        std::uniform_int_distribution<std::size_t> length(meanLength / 2, meanLength * 3 / 2);
        double level = 1.5;
        while (x.size() < kPoints) {
            level = -level;
            for (std::size_t i = length(rng); i > 0 && x.size() < kPoints; --i)
                x.push_back(level + noise(rng));
        }
    }
    return x;
}

const std::vector<double>& whiteNoise()
{
    static const std::vector<double> x = [] {
        std::mt19937_64 rng(7);
        std::normal_distribution<double> noise(0.0, 1.0);
        std::vector<double> v(kPoints);
        for (double& d : v)
            d = noise(rng);
        return v;
    }();
    return x;
}

void report(benchmark::State& state, const prism::BocdResult& r)
{
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(kPoints));
    state.counters["runLengths"] = r.meanRunLengthsKept;
    state.counters["updates"] =
        benchmark::Counter(double(kPoints) * r.meanRunLengthsKept, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["changePoints"] = double(r.changePoints.size());
}

void BM_BocdPiecewise(benchmark::State& state)
{
    const auto& x = piecewise(std::size_t(state.range(0)));
    prism::BocdParams p;
    p.segmentation = state.range(1) != 0;
    prism::BocdResult r;
    for (auto _ : state) {
        r = prism::runBocd(x, p);
        benchmark::DoNotOptimize(r.changePoints.data());
    }
    report(state, r);
}
BENCHMARK(BM_BocdPiecewise)
    ->ArgNames({"L", "seg"})
    ->Args({16, 1})
    ->Args({32, 1})
    ->Args({64, 1})
    ->Args({100, 1})
    ->Args({256, 1})
    ->Args({16, 0})
    ->Args({32, 0})
    ->Args({64, 0})
    ->Args({100, 0})
    ->Unit(benchmark::kMillisecond);

void BM_BocdCapped(benchmark::State& state)
{
    prism::BocdParams p;
    p.maxRunLength = std::size_t(state.range(0));
    prism::BocdResult r;
    for (auto _ : state) {
        r = prism::runBocd(whiteNoise(), p);
        benchmark::DoNotOptimize(r.changePoints.data());
    }
    report(state, r);
}
BENCHMARK(BM_BocdCapped)->ArgName("C")->Arg(16)->Arg(32)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
