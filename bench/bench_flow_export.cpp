// IPFIX decoding speed on one core: records/s through FlowExportDecoder::decode into a FlowTable.
// Input: synthetic IPFIX messages of at most 1400 bytes (what fits a datagram), one template set first and then
// data sets of one template, addresses drawn from a 2880-NIC RoCE cluster so endpoint interning costs what it
// does on real exports. Two templates: the 9 fields the decoder uses (45-byte records), and the same plus 20
// unused 4-byte fields (a Cisco-like 125-byte record the decoder must step over).
#include "io/flow_export.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using prism::FlowExportDecoder;
using prism::FlowTable;
using prism::IpAddr;
using prism::LoadDiagnostics;

struct Writer {
    std::vector<std::uint8_t> b;
    void u8(unsigned v) { b.push_back(std::uint8_t(v)); }
    void u16(unsigned v) { u8(v >> 8), u8(v); }
    void u32(std::uint32_t v) { u16(v >> 16), u16(v & 0xFFFF); }
    void u64(std::uint64_t v) { u32(std::uint32_t(v >> 32)), u32(std::uint32_t(v)); }
    void patch16(std::size_t at, unsigned v) { b[at] = std::uint8_t(v >> 8), b[at + 1] = std::uint8_t(v); }
};

struct Messages {
    std::vector<std::vector<std::uint8_t>> messages;
    std::uint64_t records = 0;
};

// `padding` unused 4-byte fields after the 9 used ones; `records` data records in total.
Messages build(int padding, std::uint64_t records) {
    Messages out;
    std::mt19937_64 rng(7);
    const std::size_t recordLen = 45 + 4 * std::size_t(padding);
    const std::size_t perMessage = (1400 - 16 - 4) / recordLen;
    std::uint64_t startMs = 1'700'000'000'000;
    bool first = true;
    while (out.records < records) {
        Writer w;
        w.u16(10), w.u16(0), w.u32(std::uint32_t(startMs / 1000)), w.u32(std::uint32_t(out.messages.size())), w.u32(1);
        if (first) { // template set: 256 = src, dst, ports, proto, octets, packets, start, end, then the padding
            first = false;
            w.u16(2), w.u16(4 + 4 + 4 * (9 + padding));
            w.u16(256), w.u16(9 + padding);
            const unsigned fields[][2] = {{8, 4}, {12, 4}, {7, 2}, {11, 2}, {4, 1}, {1, 8}, {2, 8}, {152, 8}, {153, 8}};
            for (const auto& f : fields) w.u16(f[0]), w.u16(f[1]);
            for (int i = 0; i < padding; ++i) w.u16(10 + (i % 2 ? 4 : 0)), w.u16(4); // ingress/egress interfaces
        }
        const std::size_t setAt = w.b.size();
        w.u16(256), w.u16(0);
        for (std::size_t i = 0; i < perMessage && out.records < records; ++i, ++out.records) {
            std::uint64_t r = rng();
            const std::uint32_t src = 0x0A000000 | std::uint32_t(r % 2880);
            const std::uint32_t dst = 0x0A000000 | std::uint32_t((r >> 16) % 2880);
            w.u32(src), w.u32(dst), w.u16(49152 + unsigned(r >> 32) % 1000), w.u16(4791), w.u8(17);
            w.u64(1 << (12 + (r >> 44) % 12)), w.u64(1 + (r >> 56)), w.u64(startMs), w.u64(startMs + 1 + r % 50);
            for (int k = 0; k < padding; ++k) w.u32(std::uint32_t(k));
            startMs += r % 3;
        }
        w.patch16(setAt + 2, unsigned(w.b.size() - setAt));
        w.patch16(2, unsigned(w.b.size()));
        out.messages.push_back(std::move(w.b));
    }
    return out;
}

// `fresh`: a new FlowTable each pass (its columns grow and fault their pages in, as a first read does);
// otherwise one table cleared between passes (capacity kept): the decoder alone.
void decodeAll(benchmark::State& state, int padding, bool fresh) {
    const Messages m = build(padding, 1'000'000);
    std::uint64_t bytes = 0;
    for (const auto& msg : m.messages) bytes += msg.size();
    const IpAddr exporter = IpAddr::v4(192, 0, 2, 1);
    FlowTable kept;
    kept.reserve(m.records);
    for (auto _ : state) {
        FlowExportDecoder decoder("bench");
        FlowTable freshTable;
        FlowTable& table = fresh ? freshTable : kept;
        // Empty the kept columns, keeping their capacity (FlowTable::clear would free it) and the endpoints.
        table.clearRecords();
        LoadDiagnostics diag;
        std::uint64_t n = 0;
        for (const auto& msg : m.messages) decoder.decode(msg.data(), msg.size(), exporter, 0, ++n, table, diag);
        if (table.size() != m.records || !diag.clean()) state.SkipWithError("records lost");
        benchmark::DoNotOptimize(table.bytes.low());
    }
    state.SetItemsProcessed(std::int64_t(state.iterations() * m.records));
    state.SetBytesProcessed(std::int64_t(state.iterations() * bytes));
}

void BM_IpfixDecode_UsedFieldsOnly(benchmark::State& state) { decodeAll(state, 0, false); }
void BM_IpfixDecode_With20UnusedFields(benchmark::State& state) { decodeAll(state, 20, false); }
void BM_IpfixDecode_UsedFieldsOnly_FreshTable(benchmark::State& state) { decodeAll(state, 0, true); }

BENCHMARK(BM_IpfixDecode_UsedFieldsOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_IpfixDecode_With20UnusedFields)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_IpfixDecode_UsedFieldsOnly_FreshTable)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
