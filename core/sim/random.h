#pragma once
// Portable random numbers for the simulator: std::mt19937_64 is specified bit for bit, but the std
// distributions are not (they differ between standard libraries), so every distribution is written here.
#include <cmath>
#include <cstdint>
#include <random>

namespace prism::sim {

// SplitMix64 step: derives independent stream seeds from (seed, stream ids).
inline std::uint64_t mixSeed(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

inline std::uint64_t streamSeed(std::uint64_t seed, std::uint64_t stream, std::uint64_t sub = 0) {
    return mixSeed(mixSeed(mixSeed(seed) ^ stream) ^ sub);
}

class Rng {
public:
    explicit Rng(std::uint64_t seed) : m_engine(seed) {}

    std::uint64_t next() { return m_engine(); }
    // Uniform in [0, 1) with 53 random bits.
    double uniform() { return double(m_engine() >> 11) * 0x1.0p-53; }
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
    // Uniform integer in [lo, hi] (inclusive); the modulo bias is negligible for the small ranges used here.
    std::int64_t integer(std::int64_t lo, std::int64_t hi) {
        if (hi <= lo) return lo;
        return lo + std::int64_t(m_engine() % std::uint64_t(hi - lo + 1));
    }
    bool chance(double p) { return uniform() < p; }
    // Standard normal by Box-Muller (one value per call; the second is dropped to keep the stream simple).
    double normal() {
        double u1 = uniform();
        double u2 = uniform();
        if (u1 < 1e-300) u1 = 1e-300;
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    // Multiplicative jitter with median 1: exp(sigma * N(0,1)).
    double lognormal(double sigma) { return sigma > 0 ? std::exp(sigma * normal()) : 1.0; }
    // Exponential with the given mean (Poisson inter-arrival times).
    double exponential(double mean) { return -mean * std::log(1.0 - uniform()); }

private:
    std::mt19937_64 m_engine;
};

} // namespace prism::sim
