#pragma once
// Packet captures (pcap and pcapng, read with libpcap at nanosecond precision) to flow records: RoCEv2 and
// other packets through decodePacket and PacketFlowBuilder; IPFIX / NetFlow v9 / sFlow datagrams found in
// the capture (by content, any port but 4791) through FlowExportDecoder. Qt-free.
#include "io/flow_export.h"
#include "io/packet_decode.h"
#include "model/diagnostics.h"
#include "model/flow_table.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace prism {

struct PcapReadOptions {
    FlowBuilderOptions flows; // idle / active timeouts (0: the defaults)
    bool strict = false;      // a truncated packet record throws instead of ending the read with an error
    // More flow records than this (0: no limit) is an InputError saying to analyse in stages, before memory runs
    // out (a capture of 10^8 tiny packets of as many flows).
    std::uint64_t maxRecords = 0;
    // Called now and then with a fraction in [0,1]; return false to cancel (the read throws Cancelled).
    std::function<bool(double)> progress;
};

struct PcapStats {
    int linkType = 0;                 // DLT of the capture
    std::uint64_t packets = 0;        // packet records read
    std::uint64_t capturedBytes = 0;  // bytes captured (snap length applied)
    std::uint64_t wireBytes = 0;      // original frame lengths
    std::uint64_t notIp = 0;          // frames that are not IPv4 / IPv6 (ARP, LLDP, ...)
    std::uint64_t cut = 0;            // packets with a header cut short (warnings name the first ones)
    std::uint64_t exportDatagrams = 0; // IPFIX / NetFlow v9 / sFlow datagrams handed to the export decoder
    std::int64_t firstNs = 0;         // first and last packet times
    std::int64_t lastNs = 0;
    PacketFlowStats flows;            // what the packet flow builder saw
    FlowBuilderOptions flowOptions;   // the flow builder's timeouts, defaults filled in
    FlowExportStats exports;          // what the export decoder saw
};

// Reads a pcap or pcapng file into flow records sorted by start time. Throws InputError (naming the file and,
// for a packet, its 1-based number) when the file cannot be opened as a capture, its link type is not one
// decodePacket understands, or (strict) a packet record is truncated. Lenient: a truncated last record ends
// the read with an error in `diag`; cut headers become warnings.
FlowTable readPcap(const std::string& path, const PcapReadOptions& options, LoadDiagnostics& diag,
                   PcapStats* stats = nullptr);

// True when the first bytes are a pcap file header (microsecond or nanosecond magic, either byte order) or a
// pcapng section header block.
bool looksLikePcap(const std::uint8_t* head, std::size_t len);

} // namespace prism
