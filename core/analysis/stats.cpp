#include "analysis/stats.h"

#include <algorithm>
#include <cmath>

namespace prism {

namespace {

// The median of v, reordering v.
double medianInPlace(std::vector<double>& v) {
    if (v.empty()) return 0;
    const std::size_t h = v.size() / 2;
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
