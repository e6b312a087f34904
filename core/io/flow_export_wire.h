#pragma once
// Internal to core/io: what the flow export decoders share (flow_export.cpp: IPFIX and NetFlow v9, the files
// and the decoder's front; sflow.cpp: sFlow v5): big-endian reads, where a problem is, and sFlow's entry points.
#include "io/flow_export.h"
#include "io/packet_decode.h"

#include <cstdint>
#include <string>

namespace prism::flowexport {

inline std::uint16_t be16(const std::uint8_t* p) { return std::uint16_t((p[0] << 8) | p[1]); }
inline std::uint32_t be32(const std::uint8_t* p) {
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}
inline std::uint64_t be64(const std::uint8_t* p) { return (std::uint64_t(be32(p)) << 32) | be32(p + 4); }

// Where a problem is, for messages: "packet 12" or "IPFIX message 3 at byte offset 1024", then the offset
// inside the datagram.
struct Where {
    const std::string* file;
    std::string datagram;
    LoadDiagnostics* diag;
    void error(std::size_t offset, const std::string& what) const {
        diag->addError({*file, 0, 0, datagram + ", byte " + std::to_string(offset) + ": " + what});
    }
    void warning(std::size_t offset, const std::string& what) const {
        diag->addWarning({*file, 0, 0, datagram + ", byte " + std::to_string(offset) + ": " + what});
    }
};

inline constexpr std::uint32_t kSflowVersion = 5;

// An sFlow v5 datagram by its header: address type, and sample lengths adding up to the datagram.
bool looksLikeSflow(const std::uint8_t* p, std::size_t len);

// sFlow v5 datagram: header (agent address IPv4 or IPv6), then samples. Flow samples (1) and expanded flow
// samples (3) carry flow records; raw packet headers (record format 1) of Ethernet, IPv4 or IPv6 frames go
// through decodePacket into `flows`, weighted by the sample's sampling rate, stamped `timeNs` (when the
// datagram was captured: samples carry no time). Counter samples are counted; other samples and records are
// skipped.
void decodeSflow(const std::uint8_t* p, std::size_t len, std::int64_t timeNs, PacketFlowBuilder& flows,
                 FlowExportStats& stats, FlowTable& out, const Where& at);

} // namespace prism::flowexport
