#include "model/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace prism {

std::string formatCount(std::uint64_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    int lead = int(digits.size() % 3);
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (int(i) - lead) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string formatCounted(std::uint64_t n, const std::string& word) {
    return formatCount(n) + " " + word + (n == 1 ? "" : "s");
}

std::uint64_t parseSize(std::string text) {
    double value = 0;
    const std::size_t unitAt = text.find_first_not_of("0123456789.");
    std::string unit = unitAt == std::string::npos ? "" : text.substr(unitAt);
    const std::string number = text.substr(0, unitAt);
    auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || p != number.data() + number.size() || !(value > 0)) return 0;
    for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
    if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
    const std::string units = "KMGT";
    double scale = 1;
    if (!unit.empty()) {
        const auto k = units.find(unit);
        if (unit.size() != 1 || k == std::string::npos) return 0;
        scale = std::pow(1024.0, double(k + 1));
    }
    const double bytes = value * scale;
    return bytes >= 1.8e19 ? 0 : std::uint64_t(bytes);
}

std::string formatBytes(std::uint64_t bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = double(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

std::string formatDuration(std::int64_t ns) {
    char buf[48];
    const char* sign = ns < 0 ? "-" : "";
    double a = std::fabs(double(ns));
    if (a < 1e3)
        std::snprintf(buf, sizeof buf, "%s%.0f ns", sign, a);
    else if (a < 1e6)
        std::snprintf(buf, sizeof buf, "%s%.2f µs", sign, a / 1e3);
    else if (a < 1e9)
        std::snprintf(buf, sizeof buf, "%s%.3f ms", sign, a / 1e6);
    else if (a < 600e9)
        std::snprintf(buf, sizeof buf, "%s%.3f s", sign, a / 1e9);
    else {
        auto total = static_cast<long long>(a / 1e9);
        std::snprintf(buf, sizeof buf, "%s%lldh %02lldm %02llds", sign, total / 3600, (total / 60) % 60, total % 60);
    }
    return buf;
}

std::string formatTimestamp(std::int64_t ns) {
    // Values before 2000-01-01 are taken as capture-relative times.
    if (ns < 946684800LL * 1000000000LL) return std::string(1, '+').append(formatDuration(ns));
    std::time_t secs = std::time_t(ns / 1000000000LL);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%06lld UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>((ns % 1000000000LL) / 1000));
    return buf;
}

std::string formatPercent(double f) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", f * 100.0);
    return buf;
}

} // namespace prism
