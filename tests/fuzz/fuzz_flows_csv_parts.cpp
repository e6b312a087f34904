// libFuzzer harness comparing the ways flows.csv is read (docs/FORMATS.md "flows.csv"): the same file read
// sequentially, in parallel parts (every file split, on 2 threads) and streamed in batches of 3 records (at least),
// sequentially and in parallel parts, must give the same records and the same diagnostics. The reader's own promises
// (records, messages or a refusal naming the file; strict refusing exactly what lenient skips) are fuzz_flows_csv's,
// which reads each input once and so runs several times as many inputs a second. Input starting with the gzip magic is
// read as flows.csv.gz. Its seeds are fuzz_flows_csv's (tests/fuzz/corpus/flows_csv_parts links to them). Built by
// tests/fuzz/CMakeLists.txt (-DLLMPRISM_FUZZ=ON); run by scripts/fuzz.sh.
#include "fuzz_util.h"
#include "io/capture.h"

#include <algorithm>
#include <optional>

namespace {

struct Read {
    std::vector<prism::FlowRecord> records;
    prism::LoadDiagnostics diag;
    std::optional<std::string> refused;
};

bool same(const prism::FlowRecord& a, const prism::FlowRecord& b) {
    return a.startNs == b.startNs && a.endNs == b.endNs && a.src == b.src && a.dst == b.dst &&
           a.srcPort == b.srcPort && a.dstPort == b.dstPort && a.proto == b.proto && a.bytes == b.bytes &&
           a.packets == b.packets;
}

bool same(const Read& a, const Read& b) {
    if (a.refused != b.refused || a.records.size() != b.records.size()) return false;
    for (std::size_t i = 0; i < a.records.size(); ++i)
        if (!same(a.records[i], b.records[i])) return false;
    if (a.diag.skippedRows != b.diag.skippedRows || a.diag.warningCount != b.diag.warningCount ||
        a.diag.errors.size() != b.diag.errors.size() || a.diag.warnings.size() != b.diag.warnings.size())
        return false;
    for (std::size_t i = 0; i < a.diag.errors.size(); ++i)
        if (a.diag.errors[i].toString() != b.diag.errors[i].toString()) return false;
    for (std::size_t i = 0; i < a.diag.warnings.size(); ++i)
        if (a.diag.warnings[i].toString() != b.diag.warnings[i].toString()) return false;
    return true;
}

Read readWhole(const std::string& path, const prism::LoadOptions& o) {
    Read r;
    try {
        const prism::FlowTable t = prism::readFlowsCsv(path, o, r.diag);
        fuzz::checkTable(t);
        r.records.reserve(t.size());
        for (std::size_t i = 0; i < t.size(); ++i) r.records.push_back(t.record(i));
    } catch (const prism::InputError& e) {
        fuzz::checkRefusal(e);
        r.refused = e.what();
    }
    return r;
}

Read readStreamed(const std::string& path, const prism::LoadOptions& o) {
    Read r;
    try {
        prism::streamFlowsCsv(path, o, r.diag, 3, [&](const prism::FlowTable& t) {
            fuzz::checkTable(t);
            if (t.empty()) __builtin_trap(); // a batch has rows
            for (std::size_t i = 0; i < t.size(); ++i) r.records.push_back(t.record(i));
        });
    } catch (const prism::InputError& e) {
        fuzz::checkRefusal(e);
        r.refused = e.what();
    }
    // Batches come in file order; a whole read is sorted stably by (start, end).
    std::stable_sort(r.records.begin(), r.records.end(), [](const prism::FlowRecord& x, const prism::FlowRecord& y) {
        return x.startNs != y.startNs ? x.startNs < y.startNs : x.endNs < y.endNs;
    });
    return r;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = fuzz::writeFlowsCsv(data, size);

    prism::LoadOptions sequential;
    sequential.threads = 1;
    const Read a = readWhole(path, sequential);

    prism::LoadOptions parallel;
    parallel.threads = 2;
    parallel.parallelFromBytes = 1;
    if (!same(a, readWhole(path, parallel))) __builtin_trap();
    if (!same(a, readStreamed(path, sequential))) __builtin_trap();
    if (!same(a, readStreamed(path, parallel))) __builtin_trap(); // parts of every file streamed on two threads

    return 0;
}
