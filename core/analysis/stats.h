#pragma once
// Medians and robust statistics, for the engine and the UI alike.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace prism {

// Robust location and scale: the median and 1.4826 x MAD (the normal-consistent sigma). Empty input: zeros.
struct RobustStats {
    double median = 0;
    double sigma = 0;
    std::size_t n = 0;
};
RobustStats robustStats(std::vector<double> values);
// The median; of an even count, the mean of the two middle values. Empty input: 0.
double medianOf(std::vector<double> values);
// The upper of the two middle values of an even count (a value that occurs: a duration, a gap). Empty: 0.
std::int64_t upperMedian(std::vector<std::int64_t> values);

} // namespace prism
