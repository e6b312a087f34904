// libFuzzer harness for the flow export decoder (IPFIX, NetFlow v9, sFlow v5).
//
// Input: datagrams back to back, each a 2-byte big-endian length then its bytes, all from one exporter, so
// templates and options learnt from one datagram are used by the next ones. Built by tests/fuzz/CMakeLists.txt
// (-DLLMPRISM_FUZZ=ON); run by scripts/fuzz.sh. Seeds (tests/fuzz/corpus/flow_export): the UDP payloads of tests/data/flow-exports/**/*.pcap,
// length-prefixed, one file per capture (scripts/fuzz.sh --seeds makes them with tshark).
#include "io/flow_export.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    prism::FlowExportDecoder decoder("fuzz");
    prism::FlowTable out;
    prism::LoadDiagnostics diag;
    const prism::IpAddr exporter = prism::IpAddr::v4(192, 0, 2, 1);
    std::uint64_t packet = 0;
    std::size_t off = 0;
    while (size - off >= 2) {
        std::size_t len = std::size_t(data[off] << 8 | data[off + 1]);
        off += 2;
        if (len > size - off) len = size - off;
        // looksLikeExport must be safe on anything; decode is called whatever it says (the pcap reader only
        // decodes what it accepts, an IPFIX file decodes every message).
        (void)prism::FlowExportDecoder::looksLikeExport(data + off, len);
        ++packet;
        decoder.decode(data + off, len, exporter, std::int64_t(packet) * 1000, packet, out, diag);
        off += len;
    }
    decoder.finish(out);
    // Every record must be well formed: end not before start.
    for (std::size_t i = 0; i < out.size(); ++i)
        if (out.end(i) < out.startNs[i]) __builtin_trap();
    return 0;
}
