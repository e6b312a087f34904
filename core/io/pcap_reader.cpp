// readPcap: libpcap reads the records (pcap and pcapng, nanosecond time stamps); each packet is decoded and
// goes to the packet flow builder, or to the flow export decoder when it is an IPFIX / NetFlow v9 / sFlow
// datagram.
#include "io/pcap_reader.h"

#include <pcap/pcap.h>

#include <cstdio>
#include <filesystem>
#include <memory>

namespace prism {

namespace {

InputIssue issue(const std::string& path, std::string message) {
    InputIssue i;
    i.file = path;
    i.message = std::move(message);
    return i;
}

std::string packetIssue(std::uint64_t number, const std::string& what) {
    return "packet " + std::to_string(number) + ": " + what;
}

struct PcapCloser {
    void operator()(pcap_t* p) const { pcap_close(p); }
};

} // namespace

bool looksLikePcap(const std::uint8_t* head, std::size_t len) {
    if (len < 4) return false;
    const std::uint32_t le = std::uint32_t(head[0]) | std::uint32_t(head[1]) << 8 | std::uint32_t(head[2]) << 16 |
                             std::uint32_t(head[3]) << 24;
    const std::uint32_t be = std::uint32_t(head[3]) | std::uint32_t(head[2]) << 8 | std::uint32_t(head[1]) << 16 |
                             std::uint32_t(head[0]) << 24;
    for (std::uint32_t magic : {0xa1b2c3d4u, 0xa1b23c4du}) // microsecond, nanosecond
        if (le == magic || be == magic) return true;
    if (le == 0x0a0d0d0au) { // pcapng section header block: the byte-order magic follows the block length
        if (len < 12) return true;
        const std::uint8_t* m = head + 8;
        return (m[0] == 0x4d && m[1] == 0x3c && m[2] == 0x2b && m[3] == 0x1a) ||
               (m[0] == 0x1a && m[1] == 0x2b && m[2] == 0x3c && m[3] == 0x4d);
    }
    return false;
}

FlowTable readPcap(const std::string& path, const PcapReadOptions& options, LoadDiagnostics& diag,
                   PcapStats* statsOut) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    std::unique_ptr<pcap_t, PcapCloser> pcap(
        pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf));
    if (!pcap)
        throw InputError(issue(path, std::string("cannot read it as a pcap or pcapng capture (libpcap: ") + errbuf +
                                         ")"));
    PcapStats stats;
    stats.linkType = pcap_datalink(pcap.get());
    if (!linkTypeSupported(stats.linkType)) {
        const char* name = pcap_datalink_val_to_name(stats.linkType);
        throw InputError(issue(path, "link type " + std::to_string(stats.linkType) + " (" +
                                         (name ? name : "unknown") +
                                         ") is not supported; expected Ethernet, raw IP or Linux cooked capture"));
    }
    std::uintmax_t fileSize = 0;
    {
        std::error_code ec;
        fileSize = std::filesystem::file_size(path, ec);
        if (ec) fileSize = 0;
    }
    FILE* file = pcap_file(pcap.get());

    FlowTable out;
    PacketFlowBuilder builder(options.flows);
    std::unique_ptr<FlowExportDecoder> exports;
    DecodedPacket packet;
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    std::uint64_t number = 0;
    for (;;) {
        const int rc = pcap_next_ex(pcap.get(), &header, &data);
        if (rc == PCAP_ERROR_BREAK) break; // end of file
        ++number;
        if (rc != 1) {
            // Truncated record (the capture was cut while being written) or a malformed block.
            InputIssue bad = issue(path, packetIssue(number, std::string(pcap_geterr(pcap.get())) +
                                                         "; expected a complete packet record"));
            if (options.strict) throw InputError(bad);
            diag.addError(bad);
            break;
        }
        const std::int64_t t = std::int64_t(header->ts.tv_sec) * 1'000'000'000 + std::int64_t(header->ts.tv_usec);
        if (stats.packets == 0) stats.firstNs = t;
        stats.lastNs = std::max(stats.lastNs, t);
        ++stats.packets;
        stats.capturedBytes += header->caplen;
        stats.wireBytes += header->len;
        const bool ip = decodePacket(data, header->caplen, header->len, stats.linkType, packet);
        if (packet.cut) {
            ++stats.cut;
            if (diag.warnings.size() >= LoadDiagnostics::kMaxMessages)
                ++diag.warningCount; // counted; the message would not be kept
            else
                    diag.addWarning(issue(path, packetIssue(number, std::string(packet.cut) + " (" +
                                                                    std::to_string(header->caplen) + " of " +
                                                                    std::to_string(header->len) + " bytes captured)")));
        }
        if (!ip) {
            if (!packet.cut) ++stats.notIp;
        } else if (packet.proto == kProtoUdp && !packet.roce && packet.dstPort != kRoceV2Port && packet.payload &&
                   FlowExportDecoder::looksLikeExport(packet.payload, packet.payloadLen)) {
            if (!exports) exports = std::make_unique<FlowExportDecoder>(path);
            ++stats.exportDatagrams;
            exports->decode(packet.payload, packet.payloadLen, packet.src, t, number, out, diag);
        } else {
            builder.add(packet, t, 1, out);
        }
        if ((number & 0xffff) == 0 && options.progress) {
            const long pos = file ? std::ftell(file) : -1;
            const double f = fileSize > 0 && pos >= 0 ? std::min(1.0, double(pos) / double(fileSize)) : 0.0;
            if (!options.progress(f)) throw Cancelled();
        }
    }
    builder.finish(out);
    if (exports) {
        exports->finish(out);
        stats.exports = exports->stats();
    }
    stats.flows = builder.stats();
    out.sortByStart();
    if (options.progress && !options.progress(1.0)) throw Cancelled();
    if (statsOut) *statsOut = stats;
    return out;
}

} // namespace prism
