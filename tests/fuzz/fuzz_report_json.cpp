// libFuzzer harness for the report reader (docs/FORMATS.md "The report"; `evaluate` reads reports and truths):
// any bytes give a report, which written back and read again is the same report, or an InputError naming the
// file, never a crash, a hang or a sanitizer report.
// Built by tests/fuzz/CMakeLists.txt (-DLLMPRISM_FUZZ=ON); run by scripts/fuzz.sh.
#include "fuzz_util.h"
#include "io/report_json.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = fuzz::tempPath("report.json");
    fuzz::writeFile(path, data, size);
    try {
        const prism::Report r = prism::readReportFile(path);
        // What was read can be written; written again after a round trip, it does not change.
        const nlohmann::json once = prism::reportToJson(r);
        const prism::Report again = prism::reportFromJson(once, "round trip");
        if (prism::reportToJson(again) != once) __builtin_trap();
    } catch (const prism::InputError& e) {
        fuzz::checkRefusal(e);
    }
    return 0;
}
