// libFuzzer harness for the collector CSV reader (nfdump / pmacct) and the source detection: any bytes give
// records or an InputError with a message, never a crash, a hang or a sanitizer report. Each input is tried
// plain, with an nfdump header, and with a pmacct header in front. Built by tests/fuzz/CMakeLists.txt
// (-DLLMPRISM_FUZZ=ON); run by scripts/fuzz.sh (seeds: tests/fuzz/corpus/collector_csv).
#include "fuzz_util.h"
#include "io/collector_csv.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

void tryRead(const std::string& bytes, bool strict, const char* zone) {
    static const std::string path = fuzz::tempPath("collector.csv");
    fuzz::writeFile(path, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    prism::LoadOptions o;
    o.strict = strict;
    o.timeZone = zone;
    prism::LoadDiagnostics diag;
    try {
        prism::FlowTable t = prism::readCollectorCsv(path, o, diag);
        for (std::size_t i = 0; i < t.size(); ++i)
            if (t.end(i) < t.startNs[i]) __builtin_trap(); // the reader promises end >= start
    } catch (const prism::InputError& e) {
        fuzz::checkRefusal(e);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string in(reinterpret_cast<const char*>(data), size);
    bool strict = size && (data[0] & 1);
    tryRead(in, strict, "");
    tryRead("ts,te,td,sa,da,sp,dp,pr,ipkt,ibyt\n" + in, strict, "+05:30");
    tryRead("SRC_IP,DST_IP,SRC_PORT,DST_PORT,PROTOCOL,TIMESTAMP_START,TIMESTAMP_END,PACKETS,BYTES\n" + in, strict, "");
    return 0;
}
