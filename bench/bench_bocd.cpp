// BOCD (core/analysis/bocd.h) on series of the size the engine gives it (step intervals of one job: hundreds
// to thousands of points), with its settings (no segmentation output). The cost is proportional to the run
// lengths kept per point, reported as runLengths (BocdResult::meanRunLengthsKept).
//  - Steady/n: n steps of the same duration with 2% noise: nothing can be pruned, so the run lengths grow
//    with the series (the worst case, O(n²)).
//  - Checkpoints/n: the same with a step three times as long every 500 steps (as the long-run preset).
//  - Piecewise/n: segments of 20-80 steps at alternating levels, the case pruning is made for.
#include "analysis/bocd.h"

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

namespace {

enum class Shape { Steady, Checkpoints, Piecewise };

std::vector<double> series(Shape shape, std::size_t n)
{
    std::mt19937_64 rng(n);
    std::normal_distribution<double> noise(1.0, 0.02);
    std::uniform_int_distribution<std::size_t> length(20, 80);
    std::vector<double> x;
    double level = 1.0;
    for (std::size_t next = length(rng); x.size() < n;) {
        if (shape == Shape::Piecewise && x.size() == next) {
            level = level == 1.0 ? 1.3 : 1.0;
            next += length(rng);
        }
        const bool checkpoint = shape == Shape::Checkpoints && x.size() % 500 == 499;
        x.push_back(level * noise(rng) * (checkpoint ? 3.0 : 1.0));
    }
    return x;
}

template <Shape S>
void BM_Bocd(benchmark::State& state)
{
    const std::vector<double> x = series(S, std::size_t(state.range(0)));
    prism::BocdParams p;
    p.segmentation = false; // as steps.cpp runs it
    prism::BocdResult r;
    for (auto _ : state) {
        r = prism::runBocd(x, p);
        benchmark::DoNotOptimize(r.changePoints.data());
    }
    state.counters["runLengths"] = r.meanRunLengthsKept;
    state.counters["changePoints"] = double(r.changePoints.size());
}
BENCHMARK(BM_Bocd<Shape::Steady>)->Name("Steady")->Arg(250)->Arg(1000)->Arg(4000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Bocd<Shape::Checkpoints>)->Name("Checkpoints")->Arg(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Bocd<Shape::Piecewise>)->Name("Piecewise")->Arg(2000)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
