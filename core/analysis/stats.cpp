#include "analysis/stats.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace prism {

namespace {

// A double as a key in the same order (negatives below positives, each by magnitude).
std::uint64_t keyOf(double x) {
    const auto bits = std::bit_cast<std::uint64_t>(x);
    return bits >> 63 ? ~bits : bits | (std::uint64_t(1) << 63);
}
double valueOf(std::uint64_t key) { return std::bit_cast<double>(key >> 63 ? key & ~(std::uint64_t(1) << 63) : ~key); }

// The k-th smallest (from 0) of the n keys at `keys`, all in [lo, hi], by radix: each round counts the keys by the
// 11 bits below the highest bit where lo and hi differ and keeps those of the bucket the k-th falls in (moved to
// `room`, n long). `keys` and `room` are overwritten.
std::uint64_t selectKey(std::uint64_t* keys, std::uint64_t* room, std::size_t n, std::size_t k, std::uint64_t lo,
                        std::uint64_t hi) {
    constexpr unsigned kBits = 11;
    for (;;) {
        if (lo == hi) return lo; // (the keys in [lo, hi] share every bit above the highest that differs)
        const unsigned top = 63 - unsigned(__builtin_clzll(lo ^ hi));
        const unsigned shift = top >= kBits - 1 ? top - (kBits - 1) : 0;
        std::uint32_t count[1u << kBits] = {};
        for (std::size_t i = 0; i < n; ++i) ++count[(keys[i] >> shift) & ((1u << kBits) - 1)];
        std::uint64_t bucket = 0;
        for (; k >= count[bucket]; ++bucket) k -= count[bucket];
        std::size_t kept = 0;
        lo = ~std::uint64_t(0);
        hi = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (((keys[i] >> shift) & ((1u << kBits) - 1)) == bucket) {
                room[kept++] = keys[i];
                lo = std::min(lo, keys[i]);
                hi = std::max(hi, keys[i]);
            }
        std::swap(keys, room);
        n = kept;
    }
}

// The median of v, reordering v. From 1024 values on by radix selection on the values' bits (slow links take the
// median of some 25,000 transfer rates a step: nth_element twice took half of their judging, 45 ms on `large`'s
// job-0); the same value as nth_element gives, but for NaN or -0 (which nth_element orders as it finds them):
// there nth_element.
double medianInPlace(std::vector<double>& v) {
    if (v.empty()) return 0;
    const std::size_t n = v.size(), h = n / 2;
    if (n >= 1024) {
        std::vector<std::uint64_t> keys(n), room(n);
        std::uint64_t lo = ~std::uint64_t(0), hi = 0;
        bool plain = true;
        for (std::size_t i = 0; i < n; ++i) {
            plain = plain && !std::isnan(v[i]) && !(v[i] == 0 && std::signbit(v[i]));
            keys[i] = keyOf(v[i]);
            lo = std::min(lo, keys[i]);
            hi = std::max(hi, keys[i]);
        }
        if (plain) {
            const std::uint64_t middle = selectKey(keys.data(), room.data(), n, h, lo, hi);
            double m = valueOf(middle);
            if (n % 2 == 0) { // the value below it: the largest key under it, unless h keys are not under it
                std::size_t under = 0;
                std::uint64_t below = 0;
                for (double x : v)
                    if (const std::uint64_t k = keyOf(x); k < middle) {
                        ++under;
                        below = std::max(below, k);
                    }
                m = (m + (under == h ? valueOf(below) : m)) / 2;
            }
            return m;
        }
    }
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(h), v.end());
    double m = v[h];
    if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(h))) / 2;
    return m;
}

} // namespace

double medianOf(std::vector<double> v) { return medianInPlace(v); }

RobustStats robustStats(std::vector<double> v) {
    RobustStats r;
    r.n = v.size();
    if (v.empty()) return r;
    r.median = medianInPlace(v); // v is this function's own: no copy
    for (double& x : v) x = std::fabs(x - r.median);
    r.sigma = 1.4826 * medianInPlace(v);
    return r;
}

std::int64_t upperMedian(std::vector<std::int64_t> v) {
    if (v.empty()) return 0;
    const auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
}

} // namespace prism
