#pragma once
// Flow export protocols: IPFIX (RFC 7011; files per RFC 5655), NetFlow v9 (RFC 3954) and sFlow v5 datagrams,
// decoded into flow records. Datagrams come from a pcap (the pcap reader hands every UDP payload that
// looksLikeExport) or from an IPFIX file. Qt-free.
#include "model/diagnostics.h"
#include "model/flow_table.h"
#include "model/ip.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace prism {

struct FlowExportStats {
    std::uint64_t ipfixMessages = 0;
    std::uint64_t netflow9Packets = 0;
    std::uint64_t netflow5Packets = 0;
    std::uint64_t sflowDatagrams = 0;
    std::uint64_t records = 0;          // flow records added
    std::uint64_t templates = 0;        // (options) templates learnt
    std::uint64_t withoutTemplate = 0;  // data sets skipped because their template was never seen
    std::uint64_t sampledRecords = 0;   // records scaled by a sampling rate
    std::uint64_t sflowFlowSamples = 0;    // sFlow flow samples (compact and expanded)
    std::uint64_t sflowCounterSamples = 0; // sFlow counter samples (ignored)
    std::uint64_t sflowPackets = 0;        // sampled packet headers decoded into flow records
};

class FlowExportDecoder {
public:
    // `file` names the source in messages.
    explicit FlowExportDecoder(std::string file);
    ~FlowExportDecoder();
    FlowExportDecoder(const FlowExportDecoder&) = delete;
    FlowExportDecoder& operator=(const FlowExportDecoder&) = delete;

    // True when a UDP payload is an IPFIX (version 10), NetFlow v9 or sFlow v5 datagram by its header
    // (version, length and counts consistent), whatever the port.
    static bool looksLikeExport(const std::uint8_t* payload, std::size_t len);

    // Decodes one datagram sent by `exporter`; `packetTimeNs` is when it was captured (used for sFlow,
    // whose samples carry no time), `packetNumber` (1-based) names it in messages. Problems go to `diag`.
    void decode(const std::uint8_t* payload, std::size_t len, const IpAddr& exporter, std::int64_t packetTimeNs,
                std::uint64_t packetNumber, FlowTable& out, LoadDiagnostics& diag);
    // Flushes what is still aggregated (sFlow samples) into `out`; stats() counts sFlow's records after it.
    void finish(FlowTable& out);
    const FlowExportStats& stats() const;

private:
    // Decodes the file's messages itself, to name them by file offset in messages.
    friend FlowTable readIpfixFile(const std::string& path, LoadDiagnostics& diag, FlowExportStats* stats);
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// A warning when records were scaled by a sampling rate: bytes and packets are estimates, and transfers the
// sampler missed are not there. The summary, the report and the GUI's input problems show it.
void warnIfSampled(const FlowExportStats& stats, const std::string& file, LoadDiagnostics& diag);

// True when the first bytes of a file are an IPFIX message header (RFC 5655 files are IPFIX messages back to back).
bool looksLikeIpfixFile(const std::uint8_t* head, std::size_t len);
// Reads an IPFIX file (RFC 5655). Throws InputError when it is not one; bad messages go to `diag` with their offset.
FlowTable readIpfixFile(const std::string& path, LoadDiagnostics& diag, FlowExportStats* stats = nullptr);

} // namespace prism
