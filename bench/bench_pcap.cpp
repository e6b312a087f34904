// Speed of packet captures to flow records: readPcap (libpcap read + decodePacket + PacketFlowBuilder) and
// decodePacket alone. Input: $LLMPRISM_BENCH_PCAP (a pcap file); without it the `tiny` preset is simulated and
// written with writePcapCapture into a temporary folder (about 7 M packets, 770 MB). items_per_second counts
// packets. Results are recorded in docs/BENCHMARKS.md.
#include "io/packet_decode.h"
#include "io/pcap_reader.h"
#include "sim/simulator.h"

#include <benchmark/benchmark.h>
#include <pcap/pcap.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Input {
    std::string path;
    std::string tempDir;
    std::uint64_t packets = 0;
    ~Input() {
        std::error_code ec;
        if (!tempDir.empty()) fs::remove_all(tempDir, ec);
    }
};

const Input& input() {
    static Input in = [] {
        Input i;
        if (const char* p = std::getenv("LLMPRISM_BENCH_PCAP")) {
            i.path = p;
        } else {
            i.tempDir = (fs::temp_directory_path() / ("llmprism-bench-pcap-" + std::to_string(::getpid()))).string();
            auto sim = prism::sim::simulate(*prism::sim::makePreset("tiny", 1));
            prism::sim::writePcapCapture(sim, i.tempDir);
            i.path = i.tempDir + "/capture.pcap";
        }
        prism::LoadDiagnostics diag;
        prism::PcapStats stats;
        prism::readPcap(i.path, {}, diag, &stats);
        i.packets = stats.packets;
        return i;
    }();
    return in;
}

void BM_ReadPcap(benchmark::State& state) {
    const Input& in = input();
    std::size_t records = 0;
    for (auto _ : state) {
        prism::LoadDiagnostics diag;
        prism::FlowTable t = prism::readPcap(in.path, {}, diag);
        records = t.size();
        benchmark::DoNotOptimize(t.bytes.low());
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(in.packets));
    state.counters["packets"] = double(in.packets);
    state.counters["records"] = double(records);
}
BENCHMARK(BM_ReadPcap)->Unit(benchmark::kMillisecond)->UseRealTime();

// libpcap alone: pcap_next_ex over the file, nothing decoded (the floor under BM_ReadPcap).
void BM_LibpcapOnly(benchmark::State& state) {
    const Input& in = input();
    for (auto _ : state) {
        char err[PCAP_ERRBUF_SIZE];
        pcap_t* p = pcap_open_offline_with_tstamp_precision(in.path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
        pcap_pkthdr* h;
        const u_char* d;
        std::uint64_t sum = 0;
        while (pcap_next_ex(p, &h, &d) == 1) sum += h->len;
        pcap_close(p);
        benchmark::DoNotOptimize(sum);
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(in.packets));
}
BENCHMARK(BM_LibpcapOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

// decodePacket + PacketFlowBuilder on packets already in memory (the first 1 M of the file).
void BM_DecodeAndBuild(benchmark::State& state) {
    const Input& in = input();
    struct Pkt {
        std::int64_t t;
        std::uint32_t cap, len;
        std::size_t at;
    };
    std::vector<Pkt> pkts;
    std::vector<std::uint8_t> bytes;
    {
        char err[PCAP_ERRBUF_SIZE];
        pcap_t* p = pcap_open_offline_with_tstamp_precision(in.path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
        pcap_pkthdr* h;
        const u_char* d;
        while (pcap_next_ex(p, &h, &d) == 1 && pkts.size() < 1'000'000) {
            pkts.push_back({std::int64_t(h->ts.tv_sec) * 1'000'000'000 + h->ts.tv_usec, h->caplen, h->len, bytes.size()});
            bytes.insert(bytes.end(), d, d + h->caplen);
        }
        pcap_close(p);
    }
    for (auto _ : state) {
        prism::FlowTable out;
        prism::PacketFlowBuilder builder;
        prism::DecodedPacket dp;
        for (const Pkt& k : pkts)
            if (prism::decodePacket(bytes.data() + k.at, k.cap, k.len, prism::kLinkEthernet, dp))
                builder.add(dp, k.t, 1, out);
        builder.finish(out);
        benchmark::DoNotOptimize(out.bytes.low());
    }
    state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(pkts.size()));
}
BENCHMARK(BM_DecodeAndBuild)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
