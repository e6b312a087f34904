#pragma once
// Medians and robust statistics, for the engine and the UI alike; a sorted search near the last answer.
#include <algorithm>
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

// std::lower_bound's index of `v` in `sorted`, found from `near`, the answer for a value close by: the same
// index, or one on or back, else by binary search. For values that come nearly in order (records by start
// against step ends), where a binary search a value cost 30-50 ms of CPU a pass on `large`.
inline std::size_t lowerBoundNear(const std::vector<std::int64_t>& sorted, std::int64_t v, std::size_t near) {
    const std::size_t n = sorted.size();
    std::size_t k = near < n ? near : n;
    if ((k < n && sorted[k] < v && (k + 1 == n || sorted[k + 1] < v)) || (k > 1 && sorted[k - 2] >= v))
        return std::size_t(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
    if (k < n && sorted[k] < v) return k + 1;
    if (k > 0 && sorted[k - 1] >= v) return k - 1;
    return k;
}

// std::stable_sort of a list that is nearly in order (a rank's transfers: records come by start, stirred only by
// the peers' clock offsets): by insertion while each element moves back at most `reach` places, which is stable
// and keeps equal elements in their order, so a list found out of order farther goes on by std::stable_sort, to
// the same result. (std::stable_sort of every rank's transfers took 1% of `analyze large`.)
template <typename T, typename Less>
void sortNearlySorted(std::vector<T>& v, Less less, std::size_t reach = 16) {
    for (std::size_t i = 1; i < v.size(); ++i) {
        if (!less(v[i], v[i - 1])) continue;
        const T x = v[i];
        std::size_t j = i;
        while (j > 0 && i - j < reach && less(x, v[j - 1])) {
            v[j] = v[j - 1];
            --j;
        }
        v[j] = x;
        if (j > 0 && less(x, v[j - 1])) { // farther back than `reach`: the rest by merge sort
            std::stable_sort(v.begin(), v.end(), less);
            return;
        }
    }
}

} // namespace prism
