// libFuzzer harness for the flows.csv reader (docs/FORMATS.md "flows.csv"): any bytes give records, skipped rows
// with messages, or an InputError naming the file, never a crash, a hang or a sanitizer report; strict mode refuses
// exactly the files the lenient read skips a row of. Input starting with the gzip magic is read as flows.csv.gz.
// That the parallel and streamed reads agree with this one is fuzz_flows_csv_parts' (three reads an input).
// Built by tests/fuzz/CMakeLists.txt (-DLLMPRISM_FUZZ=ON); run by scripts/fuzz.sh.
#include "fuzz_util.h"
#include "io/capture.h"

namespace {

// Whether the read refused the file, and how many rows it skipped.
std::pair<bool, std::uint64_t> read(const std::string& path, const prism::LoadOptions& o) {
    prism::LoadDiagnostics diag;
    try {
        fuzz::checkTable(prism::readFlowsCsv(path, o, diag));
    } catch (const prism::InputError& e) {
        fuzz::checkRefusal(e);
        return {true, diag.skippedRows};
    }
    // Every skipped row is counted; the messages kept are the first ones.
    if (diag.errors.size() > diag.skippedRows || diag.errors.size() > prism::LoadDiagnostics::kMaxMessages ||
        (diag.skippedRows > 0 && diag.errors.empty()))
        __builtin_trap();
    for (const prism::InputIssue& issue : diag.errors)
        if (issue.message.empty() || issue.file != path) __builtin_trap();
    return {false, diag.skippedRows};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = fuzz::writeFlowsCsv(data, size);

    prism::LoadOptions lenient;
    lenient.threads = 1;
    const auto [refused, skipped] = read(path, lenient);
    prism::LoadOptions strict = lenient;
    strict.strict = true;
    const bool strictRefused = read(path, strict).first;
    if (refused ? !strictRefused : (skipped > 0) != strictRefused) __builtin_trap();
    return 0;
}
