// libFuzzer harness for the collector CSV reader (nfdump / pmacct) and the source detection: any bytes give
// records or an InputError with a message, never a crash, a hang or a sanitizer report. Each input is tried
// plain, with an nfdump header, and with a pmacct header in front. Build and run (clang, outside the build
// directory; seeds from tests/data/collector):
//   clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -Icore tests/fuzz/fuzz_collector_csv.cpp \
//     core/io/collector_csv.cpp core/io/text_input.cpp core/model/{diagnostics,flow_table,ip,units}.cpp -lz \
//     -o /tmp/fuzz_collector_csv
//   /tmp/fuzz_collector_csv -max_total_time=60 /tmp/corpus tests/data/collector
#include "io/collector_csv.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

void tryRead(const std::string& bytes, bool strict, const char* zone) {
    static const std::string path = "/tmp/fuzz_collector_csv." + std::to_string(::getpid()) + ".csv";
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    }
    prism::LoadOptions o;
    o.strict = strict;
    o.timeZone = zone;
    prism::LoadDiagnostics diag;
    try {
        prism::FlowTable t = prism::readCollectorCsv(path, o, diag);
        for (std::size_t i = 0; i < t.size(); ++i)
            if (t.endNs[i] < t.startNs[i]) __builtin_trap(); // the reader promises end >= start
    } catch (const prism::InputError& e) {
        if (e.issue().message.empty()) __builtin_trap(); // every refusal says why
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
