#pragma once
// Human units for numbers shown to users (CLI summaries, GUI labels, axis ticks).
#include <cstdint>
#include <string>

namespace prism {

std::string formatCount(std::uint64_t n);       // 1234567 -> "1,234,567"
std::string formatCounted(std::uint64_t n, const std::string& word); // "1 step", "2 steps", "1,234 rows"
std::string formatBytes(std::uint64_t bytes);    // 1536 -> "1.5 KiB"
// "8G", "512M", "1.5GiB", "2000000": bytes; 0 when the text is none of these (--memory, LLMPRISM_MEMORY).
std::uint64_t parseSize(std::string text);
std::string formatDuration(std::int64_t ns);     // 1500 -> "1.50 µs", 2500000000 -> "2.500 s"
std::string formatTimestamp(std::int64_t ns);    // epoch ns -> "2026-11-01 00:00:00.123456 UTC"; small values relative
std::string formatPercent(double fraction);      // 0.1234 -> "12.3%"

} // namespace prism
