#pragma once
// Reading and writing the report (llmprism-report v1) and the ground truth (truth.json).
#include "model/report.h"

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace prism {

nlohmann::json reportToJson(const Report& report);
nlohmann::json truthToJson(const Report& truth); // jobs with "name", "anomalies", no "findings"
Report reportFromJson(const nlohmann::json& j, const std::string& sourceName);

// Writes atomically (temp file + rename). Throws std::runtime_error on I/O failure.
void writeJsonFile(const nlohmann::json& j, const std::string& path);
// Reads a report or a truth file; throws InputError naming the file and what was wrong.
Report readReportFile(const std::string& path);

} // namespace prism
