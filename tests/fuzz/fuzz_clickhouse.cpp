// libFuzzer harness for the ClickHouse answer reader (TabSeparated flow rows) and the URL parser: any bytes give
// rows, skipped rows with messages, or an InputError, never a crash, a hang or a sanitizer report. Built by
// tests/fuzz/CMakeLists.txt (-DLLMPRISM_FUZZ=ON); run by scripts/fuzz.sh (seeds: tests/fuzz/corpus/clickhouse).
#include "fuzz_util.h"
#include "io/clickhouse.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    prism::LoadDiagnostics diag;
    try {
        const prism::FlowTable t = prism::parseClickHouseRows(bytes, "clickhouse://fuzz:8123/a.b", diag);
        fuzz::checkTable(t);
        for (std::size_t i = 0; i < t.size(); ++i)
            if (t.end(i) < t.startNs[i]) __builtin_trap(); // a row the reader should have refused
    } catch (const prism::InputError& e) {
        if (e.issue().message.empty()) __builtin_trap();
    }
    try {
        const prism::ClickHouseUrl u = prism::ClickHouseUrl::parse("clickhouse://" + bytes);
        if (u.host.empty() || u.database.empty() || u.table.empty() || u.port < 1 || u.port > 65535) __builtin_trap();
        if (u.window.from >= u.window.to) __builtin_trap();
    } catch (const prism::InputError& e) {
        if (e.issue().message.empty()) __builtin_trap();
    }
    return 0;
}
