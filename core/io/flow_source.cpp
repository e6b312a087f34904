// Source detection by content and the dispatch to each kind's reader. Adding a reader is one case in
// readFlowSource (and its magic in detectSource).
#include "io/flow_source.h"

#include "io/clickhouse.h"
#include "io/collector_csv.h"
#include "io/flow_export.h"
#include "io/pcap_reader.h"
#include "io/text_input.h"
#include "model/units.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace prism {
namespace {

constexpr std::size_t kHead = 64 * 1024;

std::uint32_t be32(const unsigned char* p) {
    return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}

// The first line that is neither blank nor a '#' comment, without its line end; empty when there is none.
std::string_view firstLine(std::string_view text) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    while (!text.empty()) {
        std::size_t nl = text.find('\n');
        std::string_view l = text.substr(0, nl);
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        std::string_view t = trimField(l);
        if (!t.empty() && t.front() != '#') return l;
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return {};
}

// A JSON file whose top level is an object with "hosts": the whole file is read and must be well formed, without
// building its document (readTopologyJson builds it once the topology is chosen; building it here too took
// longer than the read itself).
bool isTopologyJson(const std::string& path, bool gzip) {
    if (gzip) return false; // readTopologyJson reads plain files only
    struct HostsKey : nlohmann::json_sax<nlohmann::json> {
        int depth = 0;
        bool object = false, hosts = false;
        bool open(bool isObject) {
            if (depth++ == 0) object = isObject;
            return true;
        }
        bool null() override { return true; }
        bool boolean(bool) override { return true; }
        bool number_integer(number_integer_t) override { return true; }
        bool number_unsigned(number_unsigned_t) override { return true; }
        bool number_float(number_float_t, const string_t&) override { return true; }
        bool string(string_t&) override { return true; }
        bool binary(binary_t&) override { return true; }
        bool start_object(std::size_t) override { return open(true); }
        bool key(string_t& k) override {
            if (depth == 1 && k == "hosts") hosts = true;
            return true;
        }
        bool end_object() override { return --depth, true; }
        bool start_array(std::size_t) override { return open(false); }
        bool end_array() override { return --depth, true; }
        bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
    } sax;
    std::ifstream in(path, std::ios::binary);
    return nlohmann::json::sax_parse(in, &sax) && sax.object && sax.hosts;
}

} // namespace

const char* expectedFlowData() {
    return "flows.csv, nfdump -o csv / csv-fast, pmacct CSV, a pcap or pcapng capture, an IPFIX file, or a ClickHouse "
           "table (clickhouse://HOST:PORT/DB.TABLE)";
}

SourceInfo detectSource(const std::string& path) {
    SourceInfo info;
    if (ClickHouseUrl::looksLikeUrl(path)) {
        ClickHouseUrl::parse(path); // a malformed URL is an InputError here
        info.kind = SourceKind::ClickHouse;
        info.what = "ClickHouse table";
        return info;
    }
    std::string head = readHead(path, kHead, &info.gzip); // inflated when gzip
    const auto* u = reinterpret_cast<const unsigned char*>(head.data());
    if (head.size() >= 4) {
        std::uint32_t magic = be32(u);
        // libpcap: microsecond and nanosecond magics, either byte order.
        if (magic == 0xA1B2C3D4 || magic == 0xD4C3B2A1 || magic == 0xA1B23C4D || magic == 0x4D3CB2A1) {
            info.kind = SourceKind::Pcap;
            info.what = "pcap";
            return info;
        }
        if (magic == 0x0A0D0D0A) {
            info.kind = SourceKind::Pcapng;
            info.what = "pcapng";
            return info;
        }
        if (looksLikeIpfixFile(u, head.size())) {
            info.kind = SourceKind::IpfixFile;
            info.what = "IPFIX file";
            return info;
        }
        if (head.compare(0, 16, std::string("SQLite format 3\0", 16)) == 0) {
            info.what = "SQLite database (a session file is opened on its own, not as flow data)";
            return info;
        }
    }
    if (findBinary(head.data(), head.data() + std::min<std::size_t>(head.size(), 4096))) {
        info.what = "binary data of no known kind";
        return info;
    }
    std::string_view line = firstLine(head);
    std::string_view t = trimField(line);
    if (!t.empty() && (t.front() == '{' || t.front() == '[')) {
        if (isTopologyJson(path, info.gzip)) {
            info.kind = SourceKind::Topology;
            info.what = "topology.json";
        } else {
            info.what = "JSON without a top-level \"hosts\" (not a topology)";
        }
        return info;
    }
    if (line.empty()) {
        info.what = "an empty text file";
        return info;
    }
    if (auto kind = collectorCsvKindOfHeader(line)) {
        info.kind = SourceKind::CollectorCsv;
        info.what = describe(*kind);
        return info;
    }
    // Ours: the header names start_ns (readFlowsCsv then checks every required column).
    const auto names = headerNames(line);
    if (std::find(names.begin(), names.end(), "start_ns") != names.end()) {
        info.kind = SourceKind::FlowsCsv;
        info.what = "flows.csv";
        return info;
    }
    info.what = "text whose first line is " + quoted(line);
    return info;
}

FlowTable readFlowSource(const std::string& path, const SourceInfo& info, const LoadOptions& options,
                         LoadDiagnostics& diag, std::string* description) {
    std::string what = info.what + (info.gzip ? " (gzip)" : "");
    FlowTable table;
    switch (info.kind) {
    case SourceKind::FlowsCsv:
        table = readFlowsCsv(path, options, diag);
        break;
    case SourceKind::CollectorCsv: {
        CollectorCsvInfo ci;
        table = readCollectorCsv(path, options, diag, &ci);
        if (ci.localTimes) what += ", local times read as " + ci.timeZone;
        break;
    }
    case SourceKind::Pcap:
    case SourceKind::Pcapng: {
        if (info.gzip) throw InputError({path, 0, 0, "a gzip-compressed " + info.what + ": decompress it first (gunzip)"});
        PcapReadOptions po;
        po.flows.idleTimeoutNs = options.idleTimeoutNs;
        po.flows.activeTimeoutNs = options.activeTimeoutNs;
        po.flows.messageGapNs = options.messageGapNs;
        po.strict = options.strict;
        po.maxRecords = options.maxRecords;
        po.progress = options.progress;
        PcapStats stats;
        table = readPcap(path, po, diag, &stats);
        what += ", " + formatCount(stats.packets) + " packets, flow timeouts idle " +
                formatDuration(stats.flowOptions.idleTimeoutNs) + ", active " +
                formatDuration(stats.flowOptions.activeTimeoutNs);
        break;
    }
    case SourceKind::IpfixFile: {
        if (info.gzip) throw InputError({path, 0, 0, "a gzip-compressed IPFIX file: decompress it first (gunzip)"});
        FlowExportStats stats;
        table = readIpfixFile(path, diag, &stats);
        table.sortByStart();
        what += ", " + formatCount(stats.ipfixMessages) + " messages";
        break;
    }
    case SourceKind::ClickHouse: {
        TimeWindow window{options.fromNs, options.toNs};
        table = readClickHouseTable(ClickHouseUrl::parse(path), window, diag, options.progress);
        what += ", " + formatCount(table.size()) + " records";
        if (window.bounded()) what += " starting in the window given";
        break;
    }
    case SourceKind::Topology:
    case SourceKind::Other:
        throw InputError({path, 0, 0, "not flow data: found " + info.what + "; expected " + expectedFlowData()});
    }
    if (description) *description = what;
    return table;
}

} // namespace prism
