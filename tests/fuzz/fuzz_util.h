#pragma once
// Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.cpp, built by tests/fuzz/CMakeLists.txt with
// -DLLMPRISM_FUZZ=ON, run by scripts/fuzz.sh; docs/FUZZING.md). The readers take paths, so an input is written to
// a file of its own per process, on /dev/shm when there is one (no disk I/O per execution).
#include "model/diagnostics.h"
#include "model/flow_table.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace fuzz {

// A file name of this process ending in `suffix` (e.g. ".csv", "flows.csv.gz").
inline std::string tempPath(const std::string& suffix) {
    static const std::string dir = [] {
        struct stat st {};
        return ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? std::string("/dev/shm") : std::string("/tmp");
    }();
    return dir + "/llmprism-fuzz." + std::to_string(::getpid()) + "." + suffix;
}

inline void writeFile(const std::string& path, const std::uint8_t* data, std::size_t size) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) __builtin_trap(); // the harness cannot run: fail loudly rather than fuzz nothing
    if (size && std::fwrite(data, 1, size, f) != size) __builtin_trap();
    std::fclose(f);
}

// The input written as flows.csv, or as flows.csv.gz when it starts with the gzip magic; returns the path.
inline const std::string& writeFlowsCsv(const std::uint8_t* data, std::size_t size) {
    static const std::string plainPath = tempPath("flows.csv");
    static const std::string gzPath = tempPath("flows.csv.gz");
    const std::string& path = size >= 2 && data[0] == 0x1f && data[1] == 0x8b ? gzPath : plainPath;
    writeFile(path, data, size);
    return path;
}

// Every refusal names what is wrong.
inline void checkRefusal(const prism::InputError& e) {
    if (e.issue().message.empty() || e.issue().file.empty() || std::string(e.what()).empty()) __builtin_trap();
}

// A table a reader gave: every endpoint id inside its endpoint table, and the congestion columns (when the table
// has them) one entry per record.
inline void checkTable(const prism::FlowTable& t) {
    for (std::size_t i = 0; i < t.size(); ++i)
        if (t.src[i] >= t.endpoints.size() || t.dst[i] >= t.endpoints.size()) __builtin_trap();
    if (t.hasCongestion() &&
        (t.retransmits.size() != t.size() || t.cnps.size() != t.size() || t.ecnCe.size() != t.size()))
        __builtin_trap();
}

} // namespace fuzz
