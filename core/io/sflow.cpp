// sFlow v5 datagrams (flow_export_wire.h): sampled packet headers into a PacketFlowBuilder, weighted by the
// sampling rate.
#include "io/flow_export_wire.h"

#include <algorithm>

namespace prism::flowexport {

bool looksLikeSflow(const std::uint8_t* p, std::size_t len) {
    if (len < 28 || be32(p) != kSflowVersion) return false;
    std::uint32_t addrType = be32(p + 4);
    std::size_t header = addrType == 1 ? 28 : addrType == 2 ? 40 : 0;
    if (!header || len < header) return false;
    // The samples' lengths must add up to the datagram.
    std::uint32_t samples = be32(p + header - 4);
    if (samples > (len - header) / 8) return false;
    std::size_t off = header;
    for (std::uint32_t i = 0; i < samples; ++i) {
        if (len - off < 8 || be32(p + off + 4) > len - off - 8) return false;
        off += 8 + be32(p + off + 4);
    }
    return off == len;
}

void decodeSflow(const std::uint8_t* p, std::size_t len, std::int64_t timeNs, PacketFlowBuilder& flows,
                 FlowExportStats& stats, FlowTable& out, const Where& at) {
    const std::uint32_t addrType = len >= 8 ? be32(p + 4) : 0;
    const std::size_t header = addrType == 1 ? 28 : addrType == 2 ? 40 : 0;
    if (len < 8 || !header) {
        at.error(4, len < 8 ? "sFlow header cut short; expected at least 8 bytes"
                            : "sFlow agent address type " + std::to_string(addrType) +
                                  "; expected 1 (IPv4) or 2 (IPv6)");
        return;
    }
    if (len < header) {
        at.error(0, "sFlow header cut short at " + std::to_string(len) + " bytes; expected " + std::to_string(header));
        return;
    }
    ++stats.sflowDatagrams;
    const std::uint32_t samples = be32(p + header - 4);
    std::size_t off = header;
    for (std::uint32_t i = 0; i < samples; ++i) {
        if (len - off < 8) {
            at.error(off, "sample " + std::to_string(i + 1) + " of " + std::to_string(samples) +
                              " missing; expected its 8-byte header");
            return;
        }
        const std::uint32_t format = be32(p + off);
        const std::size_t sampleLen = be32(p + off + 4);
        if (sampleLen > len - off - 8) {
            at.error(off + 4, "sample " + std::to_string(i + 1) + " length " + std::to_string(sampleLen) +
                                  "; expected at most " + std::to_string(len - off - 8) +
                                  " (the rest of the datagram)");
            return;
        }
        const std::uint8_t* s = p + off + 8;
        if (format == 1 || format == 3) {
            ++stats.sflowFlowSamples;
            // Compact: seq, source id, rate, pool, drops, input, output, record count (8 x 4 bytes).
            // Expanded: seq, source id type, index, rate, pool, drops, input format/value, output format/value,
            // record count (11 x 4 bytes).
            const std::size_t fixed = format == 1 ? 32 : 44;
            if (sampleLen < fixed) {
                at.error(off + 8, "flow sample " + std::to_string(i + 1) + " of " + std::to_string(sampleLen) +
                                      " bytes; expected at least " + std::to_string(fixed));
                return;
            }
            const std::uint64_t rate = std::max<std::uint32_t>(1, be32(s + (format == 1 ? 8 : 12)));
            const std::uint32_t records = be32(s + fixed - 4);
            std::size_t r = fixed;
            for (std::uint32_t k = 0; k < records; ++k) {
                if (sampleLen - r < 8 || be32(s + r + 4) > sampleLen - r - 8) {
                    at.error(off + 8 + r, "flow record " + std::to_string(k + 1) + " of sample " +
                                              std::to_string(i + 1) + " runs past its sample (" +
                                              std::to_string(sampleLen - r) + " bytes left); expected it within");
                    return;
                }
                const std::uint32_t recFormat = be32(s + r);
                const std::size_t recLen = be32(s + r + 4);
                const std::uint8_t* rec = s + r + 8;
                if (recFormat == 1 && recLen >= 16) { // raw packet header
                    const std::uint32_t protocol = be32(rec);
                    const std::size_t frameLen = be32(rec + 4);
                    const std::size_t stripped = be32(rec + 8);
                    const std::size_t headerLen = be32(rec + 12);
                    if (headerLen > recLen - 16) {
                        at.error(off + 8 + r + 20, "raw packet header of " + std::to_string(headerLen) +
                                                       " bytes; expected at most " + std::to_string(recLen - 16) +
                                                       " (the rest of its record)");
                        return;
                    }
                    const int link = protocol == 1 ? kLinkEthernet : (protocol == 11 || protocol == 12) ? kLinkRaw : 0;
                    // The frame as sent, without what the agent stripped (FCS, leading encapsulations).
                    const std::size_t origLen = std::max(headerLen, frameLen > stripped ? frameLen - stripped : 0);
                    DecodedPacket packet;
                    if (link && decodePacket(rec + 16, headerLen, origLen, link, packet)) {
                        flows.add(packet, timeNs, rate, out);
                        ++stats.sflowPackets;
                    }
                }
                r += 8 + recLen;
            }
        } else if (format == 2 || format == 4) {
            ++stats.sflowCounterSamples;
        }
        off += 8 + sampleLen;
    }
}

} // namespace prism::flowexport
