// A hostile packet capture (issue 16): N tiny packets (60-byte UDP frames), each a flow of its own, read as the CLI
// reads a capture whole (readPcap with the record limit set from the memory available). Two layouts: "spread"
// (one packet per microsecond: flows close as they go idle) and "at once" (every packet at the same instant: no
// flow closes before the end, the worst case for the flow builder's memory). N: $LLMPRISM_HOSTILE_PACKETS
// (default 10^6; docs/BENCHMARKS.md records 10^8, 7.6 GB per file). The files are written to $TMPDIR and removed.
// Counters: packets, records read (0 when refused), refused (1 when the record limit stopped the read with its
// message), peak_rss_mb (of the whole process so far).
#include "io/file_store.h"
#include "io/pcap_reader.h"

#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

std::uint64_t packetCount() {
    const char* n = std::getenv("LLMPRISM_HOSTILE_PACKETS");
    return n ? std::strtoull(n, nullptr, 10) : 1'000'000;
}

// A classic pcap (microsecond stamps) of `n` Ethernet/IPv4/UDP frames of 60 bytes from 10.x.y.z (a distinct
// source per packet) to 10.255.0.1:9000.
std::string writeCapture(bool atOnce) {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("llmprism-hostile-" + std::to_string(::getpid()) + (atOnce ? "-once" : "-spread") + ".pcap"))
                                 .string();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return {};
    std::vector<unsigned char> buf;
    buf.reserve(1 << 22);
    const auto u32 = [&](std::uint32_t v) {
        for (int i = 0; i < 4; ++i) buf.push_back(static_cast<unsigned char>(v >> (8 * i)));
    };
    const auto u16 = [&](unsigned v) {
        buf.push_back(static_cast<unsigned char>(v));
        buf.push_back(static_cast<unsigned char>(v >> 8));
    };
    u32(0xa1b2c3d4);
    u16(2);
    u16(4);
    u32(0);
    u32(0);
    u32(65535);
    u32(1); // Ethernet
    unsigned char frame[60] = {};
    frame[12] = 0x08; // IPv4
    frame[14] = 0x45;
    frame[17] = 46; // total length
    frame[22] = 64;
    frame[23] = 17; // UDP
    frame[26] = 10;
    frame[30] = 10, frame[31] = 255, frame[33] = 1;
    frame[34] = 0x30, frame[35] = 0x39; // source port 12345
    frame[36] = 0x23, frame[37] = 0x28; // destination port 9000
    frame[39] = 26;
    const std::uint64_t n = packetCount();
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t us = atOnce ? 0 : i;
        u32(std::uint32_t(1'700'000'000 + us / 1'000'000));
        u32(std::uint32_t(us % 1'000'000));
        u32(60);
        u32(60);
        frame[27] = static_cast<unsigned char>(i >> 16), frame[28] = static_cast<unsigned char>(i >> 8),
        frame[29] = static_cast<unsigned char>(i);
        frame[26] = static_cast<unsigned char>(10 + (i >> 24));
        buf.insert(buf.end(), frame, frame + 60);
        if (buf.size() > (std::size_t(1) << 22) - 128) {
            std::fwrite(buf.data(), 1, buf.size(), f);
            buf.clear();
        }
    }
    std::fwrite(buf.data(), 1, buf.size(), f);
    std::fclose(f);
    return path;
}

double peakRssMb() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return double(u.ru_maxrss) / 1024.0;
}

void BM_HostilePcap(benchmark::State& state) {
    const bool atOnce = state.range(0) != 0;
    const std::string path = writeCapture(atOnce);
    if (path.empty()) {
        state.SkipWithError("cannot write the capture to $TMPDIR");
        return;
    }
    prism::PcapReadOptions o;
    o.maxRecords = prism::maxRecordsInMemory(); // as the CLI reads a capture whole
    std::uint64_t records = 0;
    bool refused = false;
    for (auto _ : state) {
        prism::LoadDiagnostics diag;
        try {
            records = prism::readPcap(path, o, diag).size();
        } catch (const prism::InputError& e) {
            refused = true;
            state.SetLabel(e.issue().message.substr(0, 80));
        }
    }
    std::filesystem::remove(path);
    state.counters["packets"] = double(packetCount());
    state.counters["records"] = double(records);
    state.counters["refused"] = refused ? 1 : 0;
    state.counters["peak_rss_mb"] = peakRssMb();
    state.SetItemsProcessed(std::int64_t(packetCount()) * state.iterations());
}
BENCHMARK(BM_HostilePcap)->ArgName("at_once")->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kSecond);

} // namespace

BENCHMARK_MAIN();
