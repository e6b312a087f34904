// libFuzzer harness for packet captures: decodePacket + PacketFlowBuilder on arbitrary frames, and readPcap on
// arbitrary files.
//
// Input: byte 0 picks the mode. Even: byte 1 picks a link type, bytes 2-3 (big endian) add to the original
// length, the rest is the captured frame; decoded and fed to a flow builder with the other frames of the
// input split at every 0xfe 0xed pair. Odd: the rest is written to a file and read with readPcap (lenient).
// Built by tests/fuzz/CMakeLists.txt (-DLLMPRISM_FUZZ=ON); run by scripts/fuzz.sh. Seeds
// (tests/fuzz/corpus/pcap): mode 1 + the captures of tests/data (the first KiB of the large ones).
#include "fuzz_util.h"
#include "io/packet_decode.h"
#include "io/pcap_reader.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

constexpr int kLinks[] = {prism::kLinkEthernet, prism::kLinkRaw,  prism::kLinkRawDlt,   prism::kLinkIpv4,
                          prism::kLinkIpv6,     prism::kLinkLinuxSll, prism::kLinkLinuxSll2, 147};

void checkPacket(const prism::DecodedPacket& p, const std::uint8_t* data, std::size_t cap) {
    // Nothing read may lie outside the captured bytes.
    if (p.payload && (p.payload < data || p.payload + p.payloadLen > data + cap)) __builtin_trap();
    if (p.roce && (!p.payload || p.payloadLen < 12)) __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    if (data[0] & 1) {
        static const std::string path = fuzz::tempPath("capture.pcap");
        fuzz::writeFile(path, data + 1, size - 1);
        try {
            prism::LoadDiagnostics diag;
            prism::FlowTable t = prism::readPcap(path, {}, diag);
            for (std::size_t i = 0; i < t.size(); ++i)
                if (t.end(i) < t.startNs[i]) __builtin_trap();
            // Packets give congestion counts for every record; flow exports carried in the capture give none.
            fuzz::checkTable(t);
        } catch (const prism::InputError& e) {
            fuzz::checkRefusal(e);
        }
        return 0;
    }
    if (size < 4) return 0;
    const int link = kLinks[data[1] % (sizeof kLinks / sizeof kLinks[0])];
    const std::size_t extra = std::size_t(data[2] << 8 | data[3]);
    prism::PacketFlowBuilder builder;
    prism::FlowTable out;
    std::size_t at = 4;
    std::int64_t t = 0;
    while (at <= size) {
        std::size_t end = at;
        while (end + 1 < size && !(data[end] == 0xfe && data[end + 1] == 0xed)) ++end;
        if (end + 1 >= size) end = size;
        const std::size_t cap = end - at;
        // A copy of exactly the captured bytes, so that ASan sees any read past them.
        std::uint8_t* frame = new std::uint8_t[cap ? cap : 1];
        for (std::size_t i = 0; i < cap; ++i) frame[i] = data[at + i];
        prism::DecodedPacket p;
        if (prism::decodePacket(frame, cap, cap + extra, link, p)) builder.add(p, t, 1, out);
        checkPacket(p, frame, cap);
        delete[] frame;
        t += 100 + std::int64_t(cap) * 10;
        at = end + 2;
    }
    builder.finish(out);
    for (std::size_t i = 0; i < out.size(); ++i)
        if (out.end(i) < out.startNs[i]) __builtin_trap();
    return 0;
}
