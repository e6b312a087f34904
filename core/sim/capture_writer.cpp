// writeCapture: flows.csv[.gz] in export order, topology.json and truth.json, each written atomically.
#include "io/capture.h"
#include "io/report_json.h"
#include "sim/simulator.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <nlohmann/json.hpp>

namespace prism::sim {

namespace fs = std::filesystem;

void writeCapture(const SimResult& result, const std::string& dir, bool gzip) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw std::runtime_error(dir + ": cannot create the folder (" + ec.message() + ")");
    const fs::path base(dir);
    // Exporters emit a record when it ends: rows go out in end-time order.
    const FlowTable& table = result.flows;
    std::vector<std::uint32_t> order(table.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return table.end(a) != table.end(b) ? table.end(a) < table.end(b) : table.startNs[a] < table.startNs[b];
    });
    writeFlowsCsv(table, (base / (gzip ? "flows.csv.gz" : "flows.csv")).string(), {}, &order);
    // A stale file of the other kind would be picked up instead of (or along with) the new one.
    fs::remove(base / (gzip ? "flows.csv" : "flows.csv.gz"), ec);
    writeTopologyJson(result.topology, (base / "topology.json").string());
    writeJsonFile(truthToJson(result.truth), (base / "truth.json").string());
}

} // namespace prism::sim
