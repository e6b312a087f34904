// Flow exports (IPFIX, NetFlow v9, sFlow v5): real captures decode to the records tshark's dissectors give,
// IPFIX files read back, malformed datagrams give exact messages, sampling and times follow the documented rules.
#include "test_util.h"
#include "io/flow_export.h"
#include "io/pcap_reader.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimeZone>
#include <QtTest>

#include <pcap/pcap.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

using namespace prism;
using namespace prism::test;

namespace {

std::string data(const std::string& name) { return std::string(LLMPRISM_TEST_DATA) + "/flow-exports/" + name; }

// One flow record as both sides see it. Times are compared only where both sides give them (nullopt: unknown).
struct Rec {
    std::uint64_t frame = 0;
    std::string src, dst;
    int srcPort = 0, dstPort = 0, proto = 0;
    std::uint64_t bytes = 0, packets = 0;
    std::optional<std::int64_t> startNs, endNs;
    auto key() const { return std::tie(frame, src, dst, srcPort, dstPort, proto, bytes, packets); }
    std::string describe() const {
        std::ostringstream s;
        s << "frame " << frame << " " << src << ":" << srcPort << " -> " << dst << ":" << dstPort << " proto " << proto
          << " bytes " << bytes << " packets " << packets << " start " << (startNs ? std::to_string(*startNs) : "?")
          << " end " << (endNs ? std::to_string(*endNs) : "?");
        return s.str();
    }
};

void sortRecs(std::vector<Rec>& v) {
    std::stable_sort(v.begin(), v.end(), [](const Rec& a, const Rec& b) { return a.key() < b.key(); });
}

// Empty when both lists hold the same records (times compared where both have them), else the first difference.
std::string recsDiff(std::vector<Rec> got, std::vector<Rec> want) {
    sortRecs(got);
    sortRecs(want);
    if (got.size() != want.size())
        return "got " + std::to_string(got.size()) + " records, want " + std::to_string(want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        const Rec& g = got[i];
        const Rec& w = want[i];
        bool same = g.key() == w.key() && (!g.startNs || !w.startNs || *g.startNs == *w.startNs) &&
                    (!g.endNs || !w.endNs || *g.endNs == *w.endNs);
        if (!same) return "record " + std::to_string(i) + ": got " + g.describe() + ", want " + w.describe();
    }
    return {};
}

#define COMPARE_RECS(got, want)                                                                                        \
    do {                                                                                                               \
        std::string diff_ = recsDiff(got, want);                                                                       \
        QVERIFY2(diff_.empty(), diff_.c_str());                                                                        \
    } while (0)

// The UDP datagrams of a pcap (Ethernet, optional 802.1Q, IPv4 or IPv6 without extension headers), read here with
// libpcap independently of the project's pcap reader.
struct Datagram {
    std::uint64_t frame;
    std::int64_t timeNs;
    IpAddr exporter;
    std::vector<std::uint8_t> payload;
};

std::vector<Datagram> udpDatagrams(const std::string& path) {
    std::vector<Datagram> out;
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* pcap = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
    if (!pcap) throw std::runtime_error(err);
    pcap_pkthdr* h;
    const u_char* p;
    std::uint64_t frame = 0;
    while (pcap_next_ex(pcap, &h, &p) == 1) {
        ++frame;
        std::size_t off = 12, len = h->caplen;
        if (len < 14) continue;
        std::uint16_t type = std::uint16_t(p[12] << 8 | p[13]);
        if (type == 0x8100 && len >= 18) type = std::uint16_t(p[16] << 8 | p[17]), off += 4;
        off += 2;
        Datagram d{frame, std::int64_t(h->ts.tv_sec) * 1000000000 + h->ts.tv_usec, {}, {}};
        std::size_t udp;
        if (type == 0x0800 && len >= off + 20 && p[off + 9] == 17) {
            d.exporter = IpAddr::v4(p[off + 12], p[off + 13], p[off + 14], p[off + 15]);
            udp = off + (p[off] & 0xF) * 4;
        } else if (type == 0x86DD && len >= off + 40 && p[off + 6] == 17) {
            d.exporter.v6 = true;
            std::copy(p + off + 8, p + off + 24, d.exporter.bytes.begin());
            udp = off + 40;
        } else {
            continue;
        }
        if (len < udp + 8) continue;
        std::size_t udpLen = std::min<std::size_t>(std::size_t(p[udp + 4] << 8 | p[udp + 5]), len - udp);
        if (udpLen < 8) continue;
        d.payload.assign(p + udp + 8, p + udp + udpLen);
        out.push_back(std::move(d));
    }
    pcap_close(pcap);
    return out;
}

struct Decoded {
    std::vector<Rec> recs;
    FlowTable table;
    FlowExportStats stats;
    LoadDiagnostics diag;
};

Decoded decodeCapture(const std::string& path) {
    Decoded r;
    FlowExportDecoder decoder(path);
    for (const Datagram& d : udpDatagrams(path)) {
        if (!FlowExportDecoder::looksLikeExport(d.payload.data(), d.payload.size())) continue;
        std::size_t before = r.table.size();
        decoder.decode(d.payload.data(), d.payload.size(), d.exporter, d.timeNs, d.frame, r.table, r.diag);
        for (std::size_t i = before; i < r.table.size(); ++i) {
            FlowRecord f = r.table.record(i);
            r.recs.push_back({d.frame, f.src.toString(), f.dst.toString(), f.srcPort, f.dstPort, f.proto, f.bytes,
                              f.packets, f.startNs, f.endNs});
        }
    }
    decoder.finish(r.table);
    r.stats = decoder.stats();
    return r;
}

std::vector<Rec> recsOf(const FlowTable& t) {
    std::vector<Rec> out;
    for (std::size_t i = 0; i < t.size(); ++i) {
        FlowRecord f = t.record(i);
        out.push_back({0, f.src.toString(), f.dst.toString(), f.srcPort, f.dstPort, f.proto, f.bytes, f.packets,
                       f.startNs, f.endNs});
    }
    return out;
}

// --- tshark as the oracle ---------------------------------------------------------------------------------------

bool haveTshark() { return !QStandardPaths::findExecutable("tshark").isEmpty(); }

QJsonArray tsharkJson(const std::string& path, const QStringList& extra) {
    QProcess p;
    QStringList args{"-r", QString::fromStdString(path), "-T", "json", "--no-duplicate-keys"};
    args += extra;
    p.start("tshark", args);
    if (!p.waitForFinished(120000) || p.exitCode() != 0) return {};
    return QJsonDocument::fromJson(p.readAllStandardOutput()).array();
}

// "Feb 28, 2023 09:45:57.504000000 UTC" -> ns since the epoch.
std::int64_t tsharkAbsTime(const QString& s) {
    QStringList parts = s.simplified().split(' '); // Feb 28, 2023 09:45:57.504000000 UTC
    QStringList hms = parts.value(3).split('.');
    QDateTime t = QDateTime::fromString(parts.value(0) + " " + parts.value(1) + " " + parts.value(2) + " " +
                                            hms.value(0),
                                        "MMM d, yyyy HH:mm:ss");
    t.setTimeZone(QTimeZone::utc());
    return t.toSecsSinceEpoch() * 1000000000 + hms.value(1).leftJustified(9, '0').toLongLong();
}

// Relative seconds "626792.716000000" -> ms.
std::int64_t tsharkRelMs(const QString& s) {
    QStringList parts = s.split('.');
    return parts.value(0).toLongLong() * 1000 + parts.value(1).leftJustified(9, '0').left(3).toLongLong();
}

// Collects every "Flow N" object (v9, IPFIX; "pdu N/M" in v5) under `v`, with the header values in force.
void collectFlows(const QJsonValue& v, std::vector<QJsonObject>& flows) {
    if (!v.isObject()) return;
    QJsonObject o = v.toObject();
    for (auto it = o.begin(); it != o.end(); ++it) {
        if ((it.key().startsWith("Flow ") || it.key().startsWith("pdu ")) && it.value().isObject())
            flows.push_back(it.value().toObject());
        else collectFlows(it.value(), flows);
    }
}

// A field anywhere under `o` (tshark nests some, e.g. times under cflow.timedelta_tree).
QJsonValue field(const QJsonObject& o, const QString& name) {
    if (o.contains(name)) return o.value(name);
    for (auto it = o.begin(); it != o.end(); ++it)
        if (it.value().isObject()) {
            QJsonValue v = field(it.value().toObject(), name);
            if (!v.isUndefined()) return v;
        }
    return QJsonValue::Undefined;
}

QString str(const QJsonObject& o, const QString& name) { return field(o, name).toString(); }
bool has(const QJsonObject& o, const QString& name) { return !field(o, name).isUndefined(); }

// The flow records of a NetFlow v9 / IPFIX capture as tshark's cflow dissector gives them. Bytes and packets are
// scaled here by the sampling the capture's own options records announce (as tshark decodes them), so the decoder
// is checked against an independent reading of the same rule (docs/FORMATS.md, "Flow exports").
std::vector<Rec> tsharkCflow(const std::string& path, int port) {
    QJsonArray frames = tsharkJson(path, {"-d", QString("udp.port==%1,cflow").arg(port)});
    // First pass: sampling announced by options records, by selector id (or domain-wide).
    std::map<QString, double> bySelector;
    std::optional<double> domainWide;
    for (const QJsonValue& f : frames) {
        std::vector<QJsonObject> flows;
        collectFlows(f.toObject()["_source"].toObject()["layers"].toObject()["cflow"], flows);
        for (const QJsonObject& o : flows) {
            if (has(o, "cflow.srcaddr") || has(o, "cflow.srcaddrv6")) continue;
            std::optional<double> factor;
            if (has(o, "cflow.sampling_population") && str(o, "cflow.sampling_size").toDouble() > 0)
                factor = str(o, "cflow.sampling_population").toDouble() / str(o, "cflow.sampling_size").toDouble();
            else if (has(o, "cflow.sampling_packet_interval") && has(o, "cflow.sampling_packet_space"))
                factor = (str(o, "cflow.sampling_packet_interval").toDouble() +
                          str(o, "cflow.sampling_packet_space").toDouble()) /
                         str(o, "cflow.sampling_packet_interval").toDouble();
            else if (has(o, "cflow.sampling_interval"))
                factor = str(o, "cflow.sampling_interval").toDouble();
            if (!factor) continue;
            if (has(o, "cflow.selector_id")) bySelector[str(o, "cflow.selector_id")] = *factor;
            else domainWide = *factor;
        }
    }
    std::vector<Rec> out;
    for (const QJsonValue& f : frames) {
        QJsonObject layers = f.toObject()["_source"].toObject()["layers"].toObject();
        QJsonObject cflow = layers["cflow"].toObject();
        std::uint64_t frame = str(layers["frame"].toObject(), "frame.number").toULongLong();
        bool v9 = str(cflow, "cflow.version") == "9";
        std::vector<QJsonObject> flows;
        collectFlows(cflow, flows);
        for (const QJsonObject& o : flows) {
            bool v4 = has(o, "cflow.srcaddr") || has(o, "cflow.dstaddr");
            bool v6 = has(o, "cflow.srcaddrv6") || has(o, "cflow.dstaddrv6");
            if (!v4 && !v6) continue; // an options record
            // Both families in one template: IPv4 unless it is 0.0.0.0 both ways and IPv6 is not :: both ways.
            bool zero4 = str(o, "cflow.srcaddr").toStdString() == "0.0.0.0" && str(o, "cflow.dstaddr") == "0.0.0.0";
            bool zero6 = (str(o, "cflow.srcaddrv6").isEmpty() || str(o, "cflow.srcaddrv6") == "::") &&
                         (str(o, "cflow.dstaddrv6").isEmpty() || str(o, "cflow.dstaddrv6") == "::");
            bool useV6 = v6 && (!v4 || (zero4 && !zero6));
            Rec r;
            r.frame = frame;
            r.src = str(o, useV6 ? "cflow.srcaddrv6" : "cflow.srcaddr").toStdString();
            r.dst = str(o, useV6 ? "cflow.dstaddrv6" : "cflow.dstaddr").toStdString();
            if (r.src.empty()) r.src = useV6 ? "::" : "0.0.0.0";
            if (r.dst.empty()) r.dst = useV6 ? "::" : "0.0.0.0";
            r.srcPort = str(o, "cflow.srcport").toInt();
            r.dstPort = str(o, "cflow.dstport").toInt();
            r.proto = str(o, "cflow.protocol").toInt();
            double factor = 1;
            if (has(o, "cflow.selector_id") && bySelector.count(str(o, "cflow.selector_id")))
                factor = bySelector[str(o, "cflow.selector_id")];
            else if (domainWide)
                factor = *domainWide;
            r.bytes = std::uint64_t(std::llround(str(o, "cflow.octets").toDouble() * factor));
            r.packets = std::uint64_t(std::llround(str(o, "cflow.packets").toDouble() * factor));
            if (has(o, "cflow.abstimestart")) r.startNs = tsharkAbsTime(str(o, "cflow.abstimestart"));
            if (has(o, "cflow.abstimeend")) r.endNs = tsharkAbsTime(str(o, "cflow.abstimeend"));
            if (v9 && has(o, "cflow.timestart")) { // uptime-relative: the header's unix secs minus its sysUptime
                std::int64_t bootMs = str(cflow, "cflow.unix_secs").toLongLong() * 1000 -
                                      tsharkRelMs(str(cflow, "cflow.sysuptime"));
                r.startNs = (bootMs + tsharkRelMs(str(o, "cflow.timestart"))) * 1000000;
                r.endNs = (bootMs + tsharkRelMs(str(o, "cflow.timeend"))) * 1000000;
            }
            if (str(cflow, "cflow.version") == "5") { // the same, the export time to the ns
                const std::int64_t exportNs = str(cflow, "cflow.unix_secs").toLongLong() * 1000000000 +
                                              str(cflow, "cflow.unix_nsecs").toLongLong();
                const std::int64_t upMs = tsharkRelMs(str(cflow, "cflow.sysuptime"));
                r.startNs = exportNs - (upMs - tsharkRelMs(str(o, "cflow.timestart"))) * 1000000;
                r.endNs = exportNs - (upMs - tsharkRelMs(str(o, "cflow.timeend"))) * 1000000;
            }
            out.push_back(r);
        }
    }
    return out;
}

// The sampled packets of an sFlow capture as tshark's sflow dissector gives them, summed per (src, dst, ports,
// proto): each raw Ethernet header stands for `sampling rate` packets of its IP length, seen at the datagram's
// capture time (the earliest per key is kept).
struct SflowSum {
    std::uint64_t bytes = 0, packets = 0;
    std::int64_t firstNs = 0;
    friend bool operator==(const SflowSum&, const SflowSum&) = default;
};
using SflowKey = std::tuple<std::string, std::string, int, int, int>;

void collectNamed(const QJsonValue& v, const QString& name, std::vector<QJsonObject>& found) {
    if (!v.isObject()) return;
    QJsonObject o = v.toObject();
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (it.key() == name && it.value().isObject()) found.push_back(it.value().toObject());
        else collectNamed(it.value(), name, found);
    }
}

std::map<SflowKey, SflowSum> tsharkSflow(const std::string& path) {
    std::map<SflowKey, SflowSum> out;
    for (const QJsonValue& f : tsharkJson(path, {})) {
        QJsonObject layers = f.toObject()["_source"].toObject()["layers"].toObject();
        QStringList epoch = str(layers["frame"].toObject(), "frame.time_epoch").split('.');
        std::int64_t timeNs =
            epoch.value(0).toLongLong() * 1000000000 + epoch.value(1).leftJustified(9, '0').toLongLong();
        QJsonObject sflow = layers["sflow"].toObject();
        for (auto it = sflow.begin(); it != sflow.end(); ++it) {
            if (!it.value().isObject() || !has(it.value().toObject(), "sflow.flow_sample.sampling_rate")) continue;
            QJsonObject sample = it.value().toObject();
            std::uint64_t rate = str(sample, "sflow.flow_sample.sampling_rate").toULongLong();
            std::vector<QJsonObject> headers;
            collectNamed(sample, "Raw packet header", headers);
            for (const QJsonObject& h : headers) {
                QJsonObject ip = field(h, "ip").toObject();
                QJsonObject ip6 = field(h, "ipv6").toObject();
                bool v6 = ip.isEmpty();
                if (v6 && ip6.isEmpty()) continue;
                int proto = v6 ? str(ip6, "ipv6.nxt").toInt() : str(ip, "ip.proto").toInt();
                QJsonObject l4 = field(h, proto == 6 ? "tcp" : "udp").toObject();
                QString l4name = proto == 6 ? "tcp" : "udp";
                SflowKey key{(v6 ? str(ip6, "ipv6.src") : str(ip, "ip.src")).toStdString(),
                             (v6 ? str(ip6, "ipv6.dst") : str(ip, "ip.dst")).toStdString(),
                             str(l4, l4name + ".srcport").toInt(), str(l4, l4name + ".dstport").toInt(), proto};
                std::uint64_t ipLen = v6 ? 40 + str(ip6, "ipv6.plen").toULongLong() : str(ip, "ip.len").toULongLong();
                SflowSum& sum = out[key];
                if (sum.packets == 0 || timeNs < sum.firstNs) sum.firstNs = timeNs;
                sum.bytes += ipLen * rate;
                sum.packets += rate;
            }
        }
    }
    return out;
}

std::map<SflowKey, SflowSum> sums(const FlowTable& t) {
    std::map<SflowKey, SflowSum> out;
    for (std::size_t i = 0; i < t.size(); ++i) {
        FlowRecord r = t.record(i);
        SflowSum& sum = out[{r.src.toString(), r.dst.toString(), r.srcPort, r.dstPort, r.proto}];
        if (sum.packets == 0 || r.startNs < sum.firstNs) sum.firstNs = r.startNs;
        sum.bytes += r.bytes;
        sum.packets += r.packets;
    }
    return out;
}

// --- hand-built datagrams ---------------------------------------------------------------------------------------

struct Bytes {
    std::vector<std::uint8_t> b;
    Bytes& u8(unsigned v) { b.push_back(std::uint8_t(v)); return *this; }
    Bytes& u16(unsigned v) { return u8(v >> 8).u8(v); }
    Bytes& u32(std::uint32_t v) { return u16(v >> 16).u16(v & 0xFFFF); }
    Bytes& u64(std::uint64_t v) { return u32(std::uint32_t(v >> 32)).u32(std::uint32_t(v)); }
    Bytes& add(const std::vector<std::uint8_t>& x) { b.insert(b.end(), x.begin(), x.end()); return *this; }
};

// A set (or v9 flowset): id, length, body.
std::vector<std::uint8_t> set(unsigned id, const Bytes& body) {
    return Bytes().u16(id).u16(unsigned(body.b.size() + 4)).add(body.b).b;
}

std::vector<std::uint8_t> ipfix(std::uint32_t exportSecs, std::uint32_t domain,
                                const std::vector<std::vector<std::uint8_t>>& sets) {
    Bytes body;
    for (const auto& s : sets) body.add(s);
    return Bytes().u16(10).u16(unsigned(body.b.size() + 16)).u32(exportSecs).u32(1).u32(domain).add(body.b).b;
}

std::vector<std::uint8_t> netflow9(std::uint32_t uptimeMs, std::uint32_t unixSecs, std::uint32_t sourceId,
                                   const std::vector<std::vector<std::uint8_t>>& sets) {
    Bytes m;
    m.u16(9).u16(unsigned(sets.size())).u32(uptimeMs).u32(unixSecs).u32(1).u32(sourceId);
    for (const auto& s : sets) m.add(s);
    return m.b;
}

// Template 256: src v4, dst v4, src port, dst port, proto, octetDeltaCount (8), packetDeltaCount (8),
// flowStartMilliseconds, flowEndMilliseconds.
// NetFlow v5: the 24-byte header (engine 0/1), then the records.
std::vector<std::uint8_t> netflow5(std::uint32_t uptimeMs, std::uint32_t unixSecs, std::uint32_t nsecs,
                                   std::uint16_t sampling, const std::vector<Bytes>& records) {
    Bytes b = Bytes()
                  .u16(5)
                  .u16(unsigned(records.size()))
                  .u32(uptimeMs)
                  .u32(unixSecs)
                  .u32(nsecs)
                  .u32(7)
                  .u8(0)
                  .u8(1)
                  .u16(sampling);
    for (const Bytes& r : records) b.add(r.b);
    return b.b;
}
// A 48-byte v5 record: addresses, packets, octets, first/last (ms of uptime), ports, protocol.
Bytes netflow5Record(std::uint32_t src, std::uint32_t dst, std::uint32_t pkts, std::uint32_t octets,
                     std::uint32_t first, std::uint32_t last, std::uint16_t sport, std::uint16_t dport,
                     std::uint8_t proto) {
    return Bytes()
        .u32(src)
        .u32(dst)
        .u32(0)
        .u16(1)
        .u16(2)
        .u32(pkts)
        .u32(octets)
        .u32(first)
        .u32(last)
        .u16(sport)
        .u16(dport)
        .u8(0)
        .u8(0)
        .u8(proto)
        .u8(0)
        .u16(0)
        .u16(0)
        .u8(24)
        .u8(24)
        .u16(0);
}

Bytes basicTemplate() {
    return Bytes().u16(256).u16(9).u16(8).u16(4).u16(12).u16(4).u16(7).u16(2).u16(11).u16(2).u16(4).u16(1)
        .u16(1).u16(8).u16(2).u16(8).u16(152).u16(8).u16(153).u16(8);
}
Bytes basicRecord(std::uint32_t src, std::uint32_t dst, std::uint64_t bytes, std::uint64_t packets,
                  std::uint64_t startMs, std::uint64_t endMs) {
    return Bytes().u32(src).u32(dst).u16(49152).u16(4791).u8(17).u64(bytes).u64(packets).u64(startMs).u64(endMs);
}

constexpr std::uint32_t kA = 0x0A000001, kB = 0x0A000002; // 10.0.0.1, 10.0.0.2

struct Run {
    FlowTable out;
    LoadDiagnostics diag;
    FlowExportStats stats;
};

// A pcap of `payloads` as UDP datagrams (Ethernet, IPv4 192.0.2.1 -> 192.0.2.2, to `port`), one a second: what
// tshark's dissectors are given to check a decoder against.
std::string udpPcap(const std::vector<std::vector<std::uint8_t>>& payloads, unsigned port) {
    Bytes b = Bytes().u32(0xa1b2c3d4).u16(2).u16(4).u32(0).u32(0).u32(65535).u32(1); // big-endian, Ethernet
    std::uint32_t second = 1700000000;
    for (const auto& p : payloads) {
        Bytes udp = Bytes().u16(40000).u16(port).u16(unsigned(p.size() + 8)).u16(0).add(p);
        Bytes ip = Bytes()
                       .u8(0x45)
                       .u8(0)
                       .u16(unsigned(udp.b.size() + 20))
                       .u16(0)
                       .u16(0)
                       .u8(64)
                       .u8(17)
                       .u16(0)
                       .u32(0xC0000201)
                       .u32(0xC0000202)
                       .add(udp.b);
        Bytes eth = Bytes().u32(0x02000000).u16(0x0001).u32(0x02000000).u16(0x0002).u16(0x0800).add(ip.b);
        b.u32(second++).u32(0).u32(std::uint32_t(eth.b.size())).u32(std::uint32_t(eth.b.size())).add(eth.b);
    }
    return std::string(b.b.begin(), b.b.end());
}

Run decodeAll(const std::vector<std::vector<std::uint8_t>>& datagrams) {
    Run r;
    FlowExportDecoder d("x.pcap");
    std::uint64_t n = 0;
    for (const auto& g : datagrams) d.decode(g.data(), g.size(), IpAddr::v4(192, 0, 2, 1), 0, ++n, r.out, r.diag);
    d.finish(r.out);
    r.stats = d.stats();
    return r;
}

std::string firstError(const LoadDiagnostics& d) { return d.errors.empty() ? "(none)" : d.errors[0].toString(); }
std::string firstWarning(const LoadDiagnostics& d) {
    return d.warnings.empty() ? "(none)" : d.warnings[0].toString();
}

} // namespace

class FlowExportTest : public QObject {
    Q_OBJECT

private slots:
    void theCapturesDecodeToTheRecordsAndBytesTsharksCflowDissectorGives_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("port");
        QTest::newRow("pmacct IPFIX Cisco") << "pmacct/100-IPFIXv10-CISCO/traffic-00.pcap" << 9991;
        QTest::newRow("pmacct NetFlow v9 Cisco") << "pmacct/101-NFv9-CISCO-cust_primitives/traffic-00.pcap" << 9991;
        QTest::newRow("pmacct IPFIX IPv6 sampled")
            << "pmacct/104-IPFIXv10-IPv6-CISCO-sampling_option/traffic-00.pcap" << 9992;
        QTest::newRow("nDPI IPFIX templates only") << "ndpi/netflow-fritz.pcap" << 2055;
        QTest::newRow("nDPI NetFlow v9 without templates") << "ndpi/netflowv9.pcap" << 2057;
    }
    void theCapturesDecodeToTheRecordsAndBytesTsharksCflowDissectorGives() {
        if (!haveTshark()) QSKIP("tshark not found (scripts/install-deps.sh installs it)");
        QFETCH(QString, file);
        QFETCH(int, port);
        std::string path = data(file.toStdString());
        Decoded got = decodeCapture(path);
        std::vector<Rec> want = tsharkCflow(path, port);
        qInfo("%s: %zu records, %llu sampled, %llu data sets without template", qPrintable(file), want.size(),
              (unsigned long long)got.stats.sampledRecords, (unsigned long long)got.stats.withoutTemplate);
        COMPARE_RECS(got.recs, want);
        QCOMPARE(got.stats.records, std::uint64_t(want.size()));
        QVERIFY2(got.diag.errors.empty(), firstError(got.diag).c_str());
    }

    void theRealCapturesHoldRecordsTimesAndSampling() {
        // Guards the comparison above against passing on empty sides.
        Decoded ipfix = decodeCapture(data("pmacct/100-IPFIXv10-CISCO/traffic-00.pcap"));
        Decoded v9 = decodeCapture(data("pmacct/101-NFv9-CISCO-cust_primitives/traffic-00.pcap"));
        Decoded sampled = decodeCapture(data("pmacct/104-IPFIXv10-IPv6-CISCO-sampling_option/traffic-00.pcap"));
        QVERIFY(ipfix.recs.size() > 0);
        QVERIFY(v9.recs.size() > 0);
        QVERIFY(sampled.recs.size() > 0);
        QCOMPARE(sampled.stats.sampledRecords, sampled.stats.records);
        QCOMPARE(ipfix.stats.sampledRecords, std::uint64_t(0));
        // Its records give uptime-relative times without the system init time: they end at the export time (whole
        // seconds) and last what their uptimes say (flows of about a minute), said once.
        QCOMPARE(sampled.diag.warningCount, std::uint64_t(1));
        QVERIFY2(firstWarning(sampled.diag)
                         .find("without systemInitTimeMilliseconds (IE 160) from this observation "
                               "domain: the records end at the export time, as long as their "
                               "uptimes say") != std::string::npos,
                 firstWarning(sampled.diag).c_str());
        bool anyLong = false;
        for (const Rec& r : sampled.recs) {
            QCOMPARE(*r.endNs % 1000000000, std::int64_t(0));
            QVERIFY(*r.startNs <= *r.endNs);
            anyLong |= *r.endNs - *r.startNs >= 1000000000;
        }
        QVERIFY(anyLong);
        // Times are ns since the epoch, in the year of the export (2023).
        for (const Decoded* d : {&ipfix, &v9})
            for (const Rec& r : d->recs) {
                QVERIFY2(*r.startNs >= 1672531200'000000000 && *r.endNs < 1704067200'000000000, r.describe().c_str());
                QVERIFY(*r.startNs <= *r.endNs);
            }
        // The captures without usable data: nothing decoded, the skipped data sets counted and said.
        Decoded noTemplate = decodeCapture(data("ndpi/netflowv9.pcap"));
        QCOMPARE(noTemplate.recs.size(), std::size_t(0));
        QVERIFY(noTemplate.stats.withoutTemplate > 0);
        QCOMPARE(noTemplate.diag.warningCount, noTemplate.stats.withoutTemplate);
    }

    void theCapturesDecodeToTheRecordsPmacctsCollectorWrote_data() {
        QTest::addColumn<QString>("dir");
        QTest::addColumn<bool>("times"); // pmacct's output has the record's times (its aggregate keeps them)
        QTest::newRow("IPFIX Cisco") << "pmacct/100-IPFIXv10-CISCO/" << false;
        QTest::newRow("NetFlow v9 Cisco") << "pmacct/101-NFv9-CISCO-cust_primitives/" << true;
        QTest::newRow("IPFIX IPv6 sampled") << "pmacct/104-IPFIXv10-IPv6-CISCO-sampling_option/" << false;
    }
    void theCapturesDecodeToTheRecordsPmacctsCollectorWrote() {
        // nfacctd's output (one JSON object per aggregate, here one per record), renormalized by the sampling
        // options record where there is one. Its v9 times are whole seconds: unix secs minus the whole seconds of
        // (sysUptime - switched), i.e. our time rounded up to the second.
        QFETCH(QString, dir);
        QFETCH(bool, times);
        std::string base = data(dir.toStdString());
        using Key = std::tuple<std::string, std::string, int, int, std::uint64_t, std::uint64_t, std::int64_t,
                               std::int64_t>;
        std::vector<Key> ours, pmacct;
        for (const Rec& r : decodeCapture(base + "traffic-00.pcap").recs)
            ours.emplace_back(r.src, r.dst, r.srcPort, r.dstPort, r.bytes, r.packets,
                              times ? (*r.startNs + 999999999) / 1000000000 : 0,
                              times ? (*r.endNs + 999999999) / 1000000000 : 0);
        std::istringstream in(readBytes(base + "output-flow-00.json"));
        for (std::string line; std::getline(in, line);) {
            if (line.empty()) continue;
            QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(line)).object();
            pmacct.emplace_back(o["ip_src"].toString().toStdString(), o["ip_dst"].toString().toStdString(),
                                o["port_src"].toInt(), o["port_dst"].toInt(), std::uint64_t(o["bytes"].toDouble()),
                                std::uint64_t(o["packets"].toDouble()),
                                times ? std::int64_t(o["timestamp_start"].toString().toDouble()) : 0,
                                times ? std::int64_t(o["timestamp_end"].toString().toDouble()) : 0);
        }
        std::sort(ours.begin(), ours.end());
        std::sort(pmacct.begin(), pmacct.end());
        QVERIFY(!pmacct.empty());
        QCOMPARE(ours.size(), pmacct.size());
        for (std::size_t i = 0; i < ours.size(); ++i)
            QVERIFY2(ours[i] == pmacct[i], (std::get<0>(ours[i]) + " -> " + std::get<1>(ours[i]) + " bytes " +
                                            std::to_string(std::get<4>(ours[i])) + " start " +
                                            std::to_string(std::get<6>(ours[i])) + " vs pmacct " +
                                            std::get<0>(pmacct[i]) + " -> " + std::get<1>(pmacct[i]) + " bytes " +
                                            std::to_string(std::get<4>(pmacct[i])) + " start " +
                                            std::to_string(std::get<6>(pmacct[i])))
                                               .c_str());
    }

    void readPcapFindsTheExportsByContentAndGivesTheSameRecords_data() {
        QTest::addColumn<QString>("file");
        QTest::newRow("IPFIX") << "pmacct/100-IPFIXv10-CISCO/traffic-00.pcap";
        QTest::newRow("NetFlow v9") << "pmacct/101-NFv9-CISCO-cust_primitives/traffic-00.pcap";
        QTest::newRow("IPFIX IPv6 sampled") << "pmacct/104-IPFIXv10-IPv6-CISCO-sampling_option/traffic-00.pcap";
        QTest::newRow("sFlow") << "ndpi/sflow.pcap";
    }
    void readPcapFindsTheExportsByContentAndGivesTheSameRecords() {
        // The pcap reader hands every UDP payload that looks like an export to the decoder, whatever the port.
        QFETCH(QString, file);
        std::string path = data(file.toStdString());
        Decoded loop = decodeCapture(path);
        for (Rec& r : loop.recs) r.frame = 0;
        LoadDiagnostics diag;
        PcapStats stats;
        FlowTable t = readPcap(path, {}, diag, &stats);
        QVERIFY(!loop.table.empty());
        if (loop.recs.empty()) { // sFlow: records come from the packet flow builder
            COMPARE_RECS(recsOf(t), recsOf(loop.table));
        } else {
            COMPARE_RECS(recsOf(t), loop.recs);
        }
        QCOMPARE(stats.exports.records, loop.stats.records);
        QCOMPARE(stats.exports.sampledRecords, loop.stats.sampledRecords);
        QCOMPARE(stats.exportDatagrams, std::uint64_t(udpDatagrams(path).size()));
        // Sampled data is flagged to the user: a warning naming the file says the counts are estimates.
        const bool warned = std::any_of(diag.warnings.begin(), diag.warnings.end(), [&](const InputIssue& w) {
            return w.file == path && w.message.find("sampled exports") != std::string::npos;
        });
        QCOMPARE(warned, stats.exports.sampledRecords > 0);
    }

    void anIpfixFileOfTheCapturesMessagesReadsBackToTheSameRecords() {
        std::string pcap = data("pmacct/104-IPFIXv10-IPv6-CISCO-sampling_option/traffic-00.pcap");
        std::string file;
        for (const Datagram& d : udpDatagrams(pcap)) file.append(d.payload.begin(), d.payload.end());
        QTemporaryDir tmp;
        std::string path = tmp.filePath("export.ipfix").toStdString();
        writeBytes(path, file);
        QVERIFY(looksLikeIpfixFile(reinterpret_cast<const std::uint8_t*>(file.data()), file.size()));
        LoadDiagnostics diag;
        FlowExportStats stats;
        FlowTable t = readIpfixFile(path, diag, &stats);
        std::vector<Rec> want = decodeCapture(pcap).recs;
        for (Rec& r : want) r.frame = 0;
        QVERIFY(!want.empty());
        COMPARE_RECS(recsOf(t), want);
        QCOMPARE(stats.ipfixMessages, std::uint64_t(5));
        QVERIFY2(diag.errors.empty(), firstError(diag).c_str());
    }

    void aFileThatIsNotIpfixIsRefusedAndACutMessageIsNamedByItsOffset() {
        QTemporaryDir tmp;
        std::string csv = tmp.filePath("flows.csv").toStdString();
        writeBytes(csv, "start_ns,end_ns\n1,2\n");
        try {
            LoadDiagnostics diag;
            readIpfixFile(csv, diag);
            QFAIL("no InputError");
        } catch (const InputError& e) {
            QCOMPARE(std::string(e.what()),
                     csv + ": not an IPFIX file: expected an IPFIX message header (version 10) at byte 0");
        }
        auto m = ipfix(1700000000, 1, {set(2, basicTemplate())});
        std::string bytes(m.begin(), m.end());
        bytes += bytes.substr(0, 10); // a second message cut short
        std::string cut = tmp.filePath("cut.ipfix").toStdString();
        writeBytes(cut, bytes);
        LoadDiagnostics diag;
        FlowExportStats stats;
        readIpfixFile(cut, diag, &stats);
        QCOMPARE(stats.templates, std::uint64_t(1));
        QCOMPARE(firstError(diag), cut + ": IPFIX message 2 at byte offset " + std::to_string(m.size()) +
                                       ": header cut short (10 bytes); expected a version 10 message header whose "
                                       "length fits the file. The rest of the file is skipped");
        // A message whose body the file does not hold.
        std::string cutBody = bytes.substr(0, m.size()) + bytes.substr(0, m.size() - 5);
        writeBytes(cut, cutBody);
        LoadDiagnostics diag2;
        readIpfixFile(cut, diag2);
        QCOMPARE(firstError(diag2), cut + ": IPFIX message 2 at byte offset " + std::to_string(m.size()) + ": length " +
                                        std::to_string(m.size()) + " but the file ends after " +
                                        std::to_string(m.size() - 5) + " bytes; expected a version 10 message header "
                                        "whose length fits the file. The rest of the file is skipped");
    }

    void malformedDatagramsAreSkippedWithTheirPacketOffsetAndWhatWasExpected() {
        auto tmpl = set(2, basicTemplate());
        auto rec = set(256, basicRecord(kA, kB, 1000, 1, 1, 2));
        struct Case {
            const char* name;
            std::vector<std::uint8_t> datagram;
            std::string error;
        };
        std::vector<Case> cases;
        {
            auto m = ipfix(1, 1, {tmpl});
            m.resize(10);
            cases.push_back({"truncated header", m, "packet 1, byte 0: IPFIX message header cut short at 10 bytes; "
                                                    "expected 16"});
        }
        {
            auto m = ipfix(1, 1, {tmpl});
            m[16 + 3] += 40; // set length past the message
            cases.push_back({"set past the message", m,
                             "packet 1, byte 18: set length " + std::to_string(tmpl.size() + 40) +
                                 "; expected 4 to " + std::to_string(tmpl.size()) + " (the rest of the message)"});
        }
        {
            Bytes t = basicTemplate();
            t.b[3] = 12; // 12 fields declared, 9 given
            cases.push_back({"field count overflow", ipfix(1, 1, {set(2, t)}),
                             "packet 1, byte 60: template 256 declares 12 fields but the set ends after 9; expected "
                             "12 more bytes of field specifiers"});
        }
        {
            auto m = ipfix(1, 1, {tmpl, Bytes().u16(256).u16(0).u32(0).b});
            cases.push_back({"zero-length set", m,
                             "packet 1, byte " + std::to_string(16 + tmpl.size() + 2) +
                                 ": set length 0; expected 4 to 8 (the rest of the message)"});
        }
        {
            // template 257: src, dst, then a variable-length field (applicationName) saying 200 bytes follow
            Bytes t = Bytes().u16(257).u16(3).u16(8).u16(4).u16(12).u16(4).u16(96).u16(0xFFFF);
            Bytes d = Bytes().u32(kA).u32(kB).u8(200).u32(0);
            cases.push_back({"variable-length overflow", ipfix(1, 1, {set(2, t), set(257, d)}),
                             "packet 1, byte 49: record of template 257: field 3 is 200 bytes long but the set has 4 "
                             "left; expected the field within the set"});
        }
        cases.push_back(
            {"unknown version", Bytes().u16(7).u16(1).u32(0).u32(0).u32(0).b,
             "packet 1, byte 0: unknown flow export version; expected IPFIX (10), NetFlow v9 (9), NetFlow v5 "
             "or sFlow v5"});
        {
            auto m = netflow9(1000, 2, 0, {set(0, basicTemplate())});
            m[20 + 3] = 200;
            cases.push_back({"v9 flowset past the packet", m,
                             "packet 1, byte 22: flowset length 200; expected 4 to " + std::to_string(m.size() - 20) +
                                 " (the rest of the packet)"});
        }
        for (const Case& c : cases) {
            Run r = decodeAll({c.datagram, ipfix(1, 1, {tmpl, rec})});
            QVERIFY2(r.diag.errors.size() == 1, c.name);
            QCOMPARE(firstError(r.diag), "x.pcap: " + c.error);
            // The decoder carries on: the next good datagram still gives its record.
            QVERIFY2(r.out.size() >= 1, c.name);
        }
    }

    void otherUdpPayloadsAreNotTakenForExports() {
        auto looks = [](const std::vector<std::uint8_t>& b) {
            return FlowExportDecoder::looksLikeExport(b.data(), b.size());
        };
        auto good = ipfix(1, 1, {set(2, basicTemplate())});
        QVERIFY(looks(good));
        QVERIFY(looks(netflow9(1, 2, 0, {set(0, basicTemplate())})));
        // A DNS query, a RoCE BTH with payload, zeros.
        QVERIFY(!looks(Bytes().u16(0x1234).u16(0x0100).u16(1).u16(0).u16(0).u16(0).u8(3).u8('w').u8('w').u8('w')
                           .u8(0).u16(1).u16(1).b));
        QVERIFY(!looks(Bytes().u8(0x0A).u8(0).u16(0xFFFF).u32(0x12).u32(5).u64(0).u64(0).b));
        QVERIFY(!looks(std::vector<std::uint8_t>(64, 0)));
        // Right versions, inconsistent lengths: an IPFIX length past the payload, a v9 flowset past it, sFlow
        // samples that do not add up to the datagram.
        auto longer = good;
        longer[3] += 4;
        QVERIFY(!looks(longer));
        auto v9 = netflow9(1, 2, 0, {set(0, basicTemplate())});
        v9[23] += 4;
        QVERIFY(!looks(v9));
        QVERIFY(!looks(Bytes().u32(5).u32(1).u32(0xC0000201).u32(0).u32(1).u32(1000).u32(1).u32(2).u32(8).u32(0).b));
        QVERIFY(looks(Bytes().u32(5).u32(1).u32(0xC0000201).u32(0).u32(1).u32(1000).u32(1).u32(2).u32(4).u32(0).b));
    }

    // A capture that starts between two template refreshes (IOS-XR sends them every 30 minutes): the data before
    // the template waits for it and is decoded when it comes, with its own message's export time; data whose
    // template never comes is skipped at the end, each set said where it was.
    void dataBeforeItsTemplateIsDecodedWhenTheTemplateComes() {
        auto tmpl = set(2, basicTemplate());
        auto rec = set(256, basicRecord(kA, kB, 1000, 1, 1, 2));
        auto late = set(256, basicRecord(kB, kA, 3000, 1, 1, 2));
        Run r = decodeAll({ipfix(1000, 1, {rec}), ipfix(2000, 1, {tmpl, late})});
        QVERIFY2(r.diag.clean(), firstWarning(r.diag).c_str());
        QCOMPARE(r.out.size(), std::size_t(2));
        QCOMPARE(r.stats.withoutTemplate, std::uint64_t(0));
        QCOMPARE((std::set<std::uint64_t>{r.out.bytes[0], r.out.bytes[1]}), (std::set<std::uint64_t>{1000, 3000}));
        // NetFlow v9: a waiting record's times come from its own packet's header (uptime and export time).
        Bytes vt = Bytes().u16(256).u16(4).u16(8).u16(4).u16(12).u16(4).u16(22).u16(4).u16(21).u16(4);
        Bytes vd = Bytes().u32(kA).u32(kB).u32(4000).u32(9500);
        Run v9 =
            decodeAll({netflow9(10000, 1700000000, 0, {set(256, vd)}), netflow9(70000, 1700000060, 0, {set(0, vt)})});
        QCOMPARE(v9.out.size(), std::size_t(1));
        QCOMPARE(v9.out.startNs[0], (1700000000LL * 1000 - 10000 + 4000) * 1000000);
        // Templates belong to their observation domain: domain 2 never sees template 256.
        Run other = decodeAll({ipfix(1, 1, {tmpl}), ipfix(1, 2, {rec})});
        QCOMPARE(other.out.size(), std::size_t(0));
        QCOMPARE(other.stats.withoutTemplate, std::uint64_t(1));
        QCOMPARE(firstWarning(other.diag),
                 std::string("x.pcap: packet 2, byte 16: data set 256 skipped (45 bytes): its template did not come "
                             "in the capture; expected the template (exporters send it again every few minutes: a "
                             "longer capture holds it)"));
    }

    // What an options record says applies to the records before it too: a sampler table sent now and then scales
    // the records that came first, and a system init time (IE 160) gives them their times.
    void optionsThatComeLateApplyToTheRecordsBefore() {
        Bytes opt = Bytes().u16(400).u16(2).u16(1).u16(302).u16(2).u16(305).u16(4); // selectorId, packetInterval
        Bytes optData = Bytes().u16(7).u32(100);
        Bytes t = Bytes().u16(401).u16(4).u16(8).u16(4).u16(12).u16(4).u16(1).u16(4).u16(302).u16(2);
        Bytes d = Bytes().u32(kA).u32(kB).u32(1500).u16(7);
        Run r = decodeAll(
            {ipfix(1, 1, {set(3, opt), set(2, t), set(401, d)}), ipfix(2, 1, {set(400, optData), set(401, d)})});
        QVERIFY2(r.diag.clean(), firstError(r.diag).c_str());
        QCOMPARE(r.out.size(), std::size_t(2));
        QCOMPARE(r.out.bytes[0], std::uint64_t(150000));
        QCOMPARE(r.out.bytes[1], std::uint64_t(150000));
        QCOMPARE(r.stats.sampledRecords, std::uint64_t(2));
        // NetFlow v9, a domain-wide rate (system scope) after the data: the same.
        Bytes v9opt = Bytes().u16(300).u16(4).u16(8).u16(1).u16(4).u16(34).u16(4).u16(35).u16(1);
        Bytes v9optData = Bytes().u32(0).u32(512).u8(2).u8(0).u8(0).u8(0);
        Bytes v9t = Bytes().u16(301).u16(3).u16(8).u16(4).u16(12).u16(4).u16(1).u16(4);
        Run v9 = decodeAll({netflow9(1000, 2, 5, {set(0, v9t), set(301, Bytes().u32(kA).u32(kB).u32(100))}),
                            netflow9(2000, 3, 5, {set(1, v9opt), set(300, v9optData)})});
        QVERIFY2(v9.diag.clean(), firstError(v9.diag).c_str());
        QCOMPARE(v9.out.size(), std::size_t(1));
        QCOMPARE(v9.out.bytes[0], std::uint64_t(51200));

        // Uptimes (22/21) before IE 160: first at the export time, as long as the uptimes say; then their own.
        Bytes ut = Bytes().u16(256).u16(4).u16(8).u16(4).u16(12).u16(4).u16(22).u16(4).u16(21).u16(4);
        Bytes ud = Bytes().u32(kA).u32(kB).u32(4000).u32(9500);
        Bytes io = Bytes().u16(400).u16(2).u16(1).u16(149).u16(4).u16(160).u16(8);
        Bytes iod = Bytes().u32(1).u64(1600000000000ULL);
        Run before = decodeAll({ipfix(1700000000, 1, {set(2, ut), set(256, ud)})});
        QCOMPARE(before.out.end(0), 1700000000LL * 1000000000);
        QCOMPARE(before.out.end(0) - before.out.startNs[0], std::int64_t(5500) * 1000000);
        Run after = decodeAll(
            {ipfix(1700000000, 1, {set(2, ut), set(256, ud)}), ipfix(1700000001, 1, {set(3, io), set(400, iod)})});
        QCOMPARE(after.out.startNs[0], (1600000000000LL + 4000) * 1000000);
        QCOMPARE(after.out.end(0), (1600000000000LL + 9500) * 1000000);
    }

    // A record that counts only what left the device (v9 OUT_BYTES / OUT_PKTS, IEs 23/24: an egress monitor) has
    // those counts; one with both reads its own (IEs 1/2).
    void egressCountsStandInWhenTheFlowHasNoOthers() {
        Bytes t = Bytes().u16(256).u16(4).u16(8).u16(4).u16(12).u16(4).u16(23).u16(4).u16(24).u16(4);
        Bytes both = Bytes().u16(257).u16(5).u16(8).u16(4).u16(12).u16(4).u16(1).u16(4).u16(23).u16(4).u16(24).u16(4);
        Run r = decodeAll({netflow9(1000, 1700000000, 0,
                                    {set(0, t), set(0, both), set(256, Bytes().u32(kA).u32(kB).u32(9000).u32(6)),
                                     set(257, Bytes().u32(kB).u32(kA).u32(100).u32(7).u32(1))})});
        QVERIFY2(r.diag.clean(), firstError(r.diag).c_str());
        QCOMPARE(r.out.size(), std::size_t(2));
        QCOMPARE(r.out.bytes[0], std::uint64_t(9000));
        QCOMPARE(r.out.packets[0], std::uint64_t(6));
        QCOMPARE(r.out.bytes[1], std::uint64_t(100));
        QCOMPARE(r.out.packets[1], std::uint64_t(1));
    }

    // NetFlow v9 uptimes are 32-bit ms: a router up more than 49.7 days wraps, and a flow that began before the
    // wrap is in the past, not 49.7 days ahead.
    void netflow9UptimeWrapsModulo32Bits() {
        Bytes t = Bytes().u16(256).u16(4).u16(8).u16(4).u16(12).u16(4).u16(22).u16(4).u16(21).u16(4);
        Bytes d = Bytes().u32(kA).u32(kB).u32(0xFFFFF000u).u32(1000); // began 4096 ms before the wrap, ended after
        Run v9 = decodeAll({netflow9(3000, 1700000000, 0, {set(0, t), set(256, d)})});
        QCOMPARE(v9.out.size(), std::size_t(1));
        QCOMPARE(v9.out.end(0), (1700000000LL * 1000 - 2000) * 1000000);
        QCOMPARE(v9.out.startNs[0], (1700000000LL * 1000 - 3000 - 4096) * 1000000);
    }

    // NetFlow v5 against tshark's cflow dissector: the same records, addresses, ports, counts and times (the
    // export time with its nanoseconds).
    void netflow5DecodesAsTsharkSays() {
        if (!haveTshark()) QSKIP("tshark not found (scripts/install-deps.sh installs it)");
        auto v5 = [](std::uint32_t uptime, std::uint32_t secs, std::uint32_t nsecs, const std::vector<Bytes>& recs) {
            return netflow5(uptime, secs, nsecs, 0, recs);
        };
        auto rec = [](std::uint32_t src, std::uint32_t dst, std::uint32_t pkts, std::uint32_t octets,
                      std::uint32_t first, std::uint32_t last, std::uint16_t sport, std::uint16_t dport) {
            return netflow5Record(src, dst, pkts, octets, first, last, sport, dport, 17);
        };
        std::vector<std::vector<std::uint8_t>> datagrams;
        for (std::uint32_t k = 0; k < 4; ++k) {
            std::vector<Bytes> recs;
            for (std::uint32_t i = 0; i <= k * 7; ++i)
                recs.push_back(rec(kA + i, kB + k, 3 + i, 1000 * (i + 1), 50000 + 100 * i, 60000 + 150 * i,
                                   std::uint16_t(49152 + i), 4791));
            datagrams.push_back(v5(65000 + 1000 * k, 1700000000 + k, 250000000 * k, recs));
        }
        QTemporaryDir tmp;
        const std::string path = tmp.filePath("v5.pcap").toStdString();
        writeBytes(path, udpPcap(datagrams, 2055));
        Decoded got = decodeCapture(path);
        std::vector<Rec> want = tsharkCflow(path, 2055);
        QCOMPARE(want.size(), std::size_t(1 + 8 + 15 + 22));
        COMPARE_RECS(got.recs, want);
        QVERIFY2(got.diag.clean(), firstError(got.diag).c_str());
    }

    // NetFlow v5 (softflowd's default, older routers): its fixed records, times from the header's uptime and
    // export time (with ns), the header's sampling interval applied.
    void netflow5Decodes() {
        const auto& v5 = netflow5;
        const auto& rec = netflow5Record;
        const auto one =
            v5(10000, 1700000000, 500000000, 0,
               {rec(kA, kB, 10, 40000, 4000, 9000, 49152, 4791, 17), rec(kB, kA, 1, 64, 9500, 9500, 4791, 49152, 17)});
        QVERIFY(FlowExportDecoder::looksLikeExport(one.data(), one.size()));
        Run r = decodeAll({one});
        QVERIFY2(r.diag.clean(), firstError(r.diag).c_str());
        QCOMPARE(r.out.size(), std::size_t(2));
        const std::int64_t exportNs = 1700000000LL * 1000000000 + 500000000;
        QCOMPARE(r.out.record(0).src.toString(), std::string("10.0.0.1"));
        QCOMPARE(r.out.startNs[0], exportNs - 6000LL * 1000000);
        QCOMPARE(r.out.end(0), exportNs - 1000LL * 1000000);
        QCOMPARE(r.out.bytes[0], std::uint64_t(40000));
        QCOMPARE(r.out.packets[0], std::uint64_t(10));
        QCOMPARE(r.out.dstPort[0], std::uint16_t(4791));
        QCOMPARE(r.out.proto[0], std::uint8_t(17));
        QCOMPARE(r.stats.netflow5Packets, std::uint64_t(1));
        // Sampled 1 in 64 (mode 1 in the top two bits).
        Run s = decodeAll(
            {v5(10000, 1700000000, 0, std::uint16_t(0x4000 | 64), {rec(kA, kB, 10, 40000, 4000, 9000, 1, 2, 17)})});
        QCOMPARE(s.out.bytes[0], std::uint64_t(40000 * 64));
        QCOMPARE(s.stats.sampledRecords, std::uint64_t(1));
        // A count that does not match the length is no v5 packet.
        auto bad = one;
        bad[3] = 3;
        QVERIFY(!FlowExportDecoder::looksLikeExport(bad.data(), bad.size()));
    }

    void aWithdrawnTemplateNoLongerDecodesData() {
        auto tmpl = set(2, basicTemplate());
        auto rec = set(256, basicRecord(kA, kB, 1000, 1, 1, 2));
        auto withdraw = set(2, Bytes().u16(256).u16(0));
        Run r = decodeAll({ipfix(1, 1, {tmpl, rec}), ipfix(1, 1, {withdraw}), ipfix(1, 1, {rec})});
        QCOMPARE(r.out.size(), std::size_t(1));
        QCOMPARE(r.stats.withoutTemplate, std::uint64_t(1));
        auto all = set(2, Bytes().u16(2).u16(0)); // all templates of the domain
        Run r2 = decodeAll({ipfix(1, 1, {tmpl, rec}), ipfix(1, 1, {all}), ipfix(1, 1, {rec})});
        QCOMPARE(r2.stats.withoutTemplate, std::uint64_t(1));
    }

    void recordsDecodeAcrossPaddingEnterpriseAndVariableLengthFields() {
        // Template 300: enterprise field (4 bytes, PEN 9), src, variable-length field, dst, ports, proto, octets (4).
        Bytes t = Bytes().u16(300).u16(8).u16(0x8001).u16(4).u32(9).u16(8).u16(4).u16(82).u16(0xFFFF).u16(12).u16(4)
                      .u16(7).u16(2).u16(11).u16(2).u16(4).u16(1).u16(1).u16(4);
        Bytes d;
        d.u32(0xDEADBEEF).u32(kA).u8(3).u8('e').u8('t').u8('h').u32(kB).u16(1).u16(2).u8(6).u32(500); // short length
        d.u32(0).u32(kB).u8(255).u16(300);
        d.add(std::vector<std::uint8_t>(300, 'x'));
        d.u32(kA).u16(3).u16(4).u8(17).u32(700); // 3-byte length
        d.u16(0).u8(0);                         // padding shorter than a record
        Run r = decodeAll({ipfix(1700000000, 1, {set(2, t), set(300, d)})});
        QVERIFY2(r.diag.clean(), firstError(r.diag).c_str());
        QCOMPARE(r.out.size(), std::size_t(2));
        QCOMPARE(r.out.record(0).src.toString(), std::string("10.0.0.1"));
        QCOMPARE(r.out.record(0).bytes, std::uint64_t(500));
        QCOMPARE(r.out.record(0).proto, std::uint8_t(6));
        QCOMPARE(r.out.record(1).src.toString(), std::string("10.0.0.2"));
        QCOMPARE(r.out.record(1).dstPort, std::uint16_t(4));
        QCOMPARE(r.out.record(1).bytes, std::uint64_t(700));
        // No time field: the export time.
        QCOMPARE(r.out.record(1).startNs, std::int64_t(1700000000) * 1000000000);
    }

    void samplingFromAnOptionsRecordScalesBytesAndPacketsAndIsCounted() {
        // Options template 400: scope selectorId (302), samplingPacketInterval (305) = 1, samplingPacketSpace
        // (306) = 99: 1 packet in 100.
        Bytes opt = Bytes().u16(400).u16(3).u16(1).u16(302).u16(2).u16(305).u16(4).u16(306).u16(4);
        Bytes optData = Bytes().u16(7).u32(1).u32(99).u16(8).u32(1).u32(9); // selector 7: 1/100; selector 8: 1/10
        // Data template 401: src, dst, octets, packets, selectorId.
        Bytes t = Bytes().u16(401).u16(5).u16(8).u16(4).u16(12).u16(4).u16(1).u16(4).u16(2).u16(4).u16(302).u16(2);
        Bytes d = Bytes().u32(kA).u32(kB).u32(1500).u32(3).u16(7);
        d.u32(kB).u32(kA).u32(64).u32(1).u16(8);
        d.u32(kB).u32(kA).u32(64).u32(1).u16(9); // no options record for selector 9: unscaled
        Run r = decodeAll({ipfix(1, 1, {set(3, opt), set(400, optData), set(2, t), set(401, d)})});
        QVERIFY2(r.diag.clean(), firstError(r.diag).c_str());
        QCOMPARE(r.out.size(), std::size_t(3));
        QCOMPARE(r.out.bytes[0], std::uint64_t(150000));
        QCOMPARE(r.out.packets[0], std::uint64_t(300));
        QCOMPARE(r.out.bytes[1], std::uint64_t(640));
        QCOMPARE(r.out.packets[1], std::uint64_t(10));
        QCOMPARE(r.out.bytes[2], std::uint64_t(64));
        QCOMPARE(r.stats.sampledRecords, std::uint64_t(2));

        // NetFlow v9: options template with a system scope and samplingInterval (34) = 512 for the source id.
        Bytes v9opt = Bytes().u16(300).u16(4).u16(8).u16(1).u16(4).u16(34).u16(4).u16(35).u16(1);
        Bytes v9optData = Bytes().u32(0).u32(512).u8(2).u8(0).u8(0).u8(0); // + padding
        Bytes v9t = Bytes().u16(301).u16(3).u16(8).u16(4).u16(12).u16(4).u16(1).u16(4);
        Bytes v9d = Bytes().u32(kA).u32(kB).u32(100);
        Run v9 = decodeAll({netflow9(1000, 2, 5, {set(1, v9opt), set(0, v9t), set(300, v9optData), set(301, v9d)})});
        QVERIFY2(v9.diag.clean(), firstError(v9.diag).c_str());
        QCOMPARE(v9.out.size(), std::size_t(1));
        QCOMPARE(v9.out.bytes[0], std::uint64_t(51200));
        QCOMPARE(v9.stats.sampledRecords, std::uint64_t(1));
    }

    void timesFollowTheDocumentedRules() {
        // NetFlow v9: first/last switched (22/21) are ms of sysUptime; the header gives uptime and unix secs.
        Bytes t = Bytes().u16(256).u16(4).u16(8).u16(4).u16(12).u16(4).u16(22).u16(4).u16(21).u16(4);
        Bytes d = Bytes().u32(kA).u32(kB).u32(4000).u32(9500);
        Run v9 = decodeAll({netflow9(10000, 1700000000, 0, {set(0, t), set(256, d)})});
        QCOMPARE(v9.out.size(), std::size_t(1));
        const std::int64_t boot = 1700000000LL * 1000 - 10000;
        QCOMPARE(v9.out.startNs[0], (boot + 4000) * 1000000);
        QCOMPARE(v9.out.end(0), (boot + 9500) * 1000000);

        // IPFIX: the same fields with systemInitTimeMilliseconds (160) from an options record.
        Bytes opt = Bytes().u16(400).u16(2).u16(1).u16(149).u16(4).u16(160).u16(8);
        Bytes optData = Bytes().u32(1).u64(1600000000000ULL);
        Run ipf = decodeAll({ipfix(1700000000, 1, {set(3, opt), set(400, optData), set(2, t), set(256, d)})});
        QCOMPARE(ipf.out.size(), std::size_t(1));
        QCOMPARE(ipf.out.startNs[0], (1600000000000LL + 4000) * 1000000);

        // IPFIX flowStart/EndMicroseconds (154/155) and Nanoseconds (156/157): NTP format, seconds since 1900.
        Bytes tn = Bytes().u16(257).u16(4).u16(8).u16(4).u16(12).u16(4).u16(154).u16(8).u16(157).u16(8);
        const std::uint64_t ntpSecs = 1700000000ULL + 2208988800ULL;
        Bytes dn = Bytes().u32(kA).u32(kB).u32(std::uint32_t(ntpSecs)).u32(0x80000000).u32(std::uint32_t(ntpSecs + 1))
                       .u32(0x40000000);
        Run ntp = decodeAll({ipfix(1700000002, 1, {set(2, tn), set(257, dn)})});
        QCOMPARE(ntp.out.size(), std::size_t(1));
        QCOMPARE(ntp.out.startNs[0], 1700000000LL * 1000000000 + 500000000);
        QCOMPARE(ntp.out.end(0), 1700000001LL * 1000000000 + 250000000);

        // Garbage times (flowStartSeconds of 2^63, found by the fuzzer) give a far-future time, never a wrapped one.
        Bytes ts = Bytes().u16(258).u16(3).u16(8).u16(4).u16(12).u16(4).u16(150).u16(8);
        Run far = decodeAll({ipfix(1, 1, {set(2, ts), set(258, Bytes().u32(kA).u32(kB).u64(1ULL << 63))})});
        QCOMPARE(far.out.size(), std::size_t(1));
        QVERIFY(far.out.startNs[0] > 4'000'000'000LL * 1000000000);
        QCOMPARE(far.out.end(0), far.out.startNs[0]);
    }
    void theSflowCaptureDecodesToThePacketsAndBytesTsharksSflowDissectorGivesScaledByTheRate() {
        if (!haveTshark()) QSKIP("tshark not found (scripts/install-deps.sh installs it)");
        std::string path = data("ndpi/sflow.pcap");
        Decoded got = decodeCapture(path);
        std::map<SflowKey, SflowSum> want = tsharkSflow(path);
        QVERIFY(!want.empty());
        QVERIFY(sums(got.table) == want);
        QVERIFY2(got.diag.clean(), firstError(got.diag).c_str());
        QCOMPARE(got.stats.sflowDatagrams, std::uint64_t(9));
        QCOMPARE(got.stats.sflowFlowSamples, std::uint64_t(1));
        QCOMPARE(got.stats.sflowCounterSamples, std::uint64_t(8));
        QCOMPARE(got.stats.sampledRecords, std::uint64_t(got.table.size()));
    }

    void anSflowRawHeaderOfRoceGoesThroughThePacketDecoderWeightedByTheSamplingRate() {
        // Ethernet / IPv4 / UDP to 4791 / BTH (RDMA WRITE only, QP 0x12, PSN 5), IP length 1072: 1000 bytes of
        // payload beyond the 46-byte header captured.
        Bytes frame;
        frame.u32(0x02000000).u16(1).u32(0x02000000).u16(2).u16(0x0800);           // MACs, EtherType
        frame.u8(0x45).u8(0).u16(1072).u32(0).u8(64).u8(17).u16(0).u32(kA).u32(kB); // IPv4
        frame.u16(49152).u16(4791).u16(1052).u16(0);                                // UDP
        frame.u8(0x0A).u8(0).u16(0xFFFF).u32(0x12).u32(5);                          // BTH
        const std::size_t headerLen = frame.b.size();
        while (frame.b.size() % 4) frame.u8(0);
        Bytes raw;
        raw.u32(1).u32(14 + 1072 + 4).u32(4).u32(std::uint32_t(headerLen)).add(frame.b); // Ethernet, frame, stripped
        Bytes expanded;
        expanded.u32(1).u32(0).u32(7).u32(4096).u32(0).u32(0).u32(0).u32(1).u32(0).u32(2).u32(1);
        expanded.u32(1).u32(std::uint32_t(raw.b.size())).add(raw.b);
        Bytes counters = Bytes().u32(1).u32(0).u32(0);
        Bytes dgram;
        dgram.u32(5).u32(1).u32(0xC0000201).u32(0).u32(1).u32(1000).u32(2);
        dgram.u32(3).u32(std::uint32_t(expanded.b.size())).add(expanded.b);
        dgram.u32(2).u32(std::uint32_t(counters.b.size())).add(counters.b);
        QVERIFY(FlowExportDecoder::looksLikeExport(dgram.b.data(), dgram.b.size()));
        FlowExportDecoder d("s.pcap");
        FlowTable out;
        LoadDiagnostics diag;
        const std::int64_t t = 1700000000'123456789;
        d.decode(dgram.b.data(), dgram.b.size(), IpAddr::v4(192, 0, 2, 1), t, 1, out, diag);
        d.finish(out);
        QVERIFY2(diag.clean(), firstError(diag).c_str());
        QCOMPARE(out.size(), std::size_t(1));
        QVERIFY(out.isRoce(0));
        QCOMPARE(out.bytes[0], std::uint64_t(1072) * 4096);
        QCOMPARE(out.packets[0], std::uint64_t(4096));
        QCOMPARE(out.startNs[0], t);
        QCOMPARE(d.stats().sflowCounterSamples, std::uint64_t(1));
        QCOMPARE(d.stats().sflowPackets, std::uint64_t(1));

        // The same datagram with the counter sample's length running past the end: the flow sample before it is
        // kept, the problem named.
        Bytes bad = dgram;
        bad.b[bad.b.size() - counters.b.size() - 1] = 200;
        FlowExportDecoder d2("s.pcap");
        FlowTable out2;
        LoadDiagnostics diag2;
        d2.decode(bad.b.data(), bad.b.size(), IpAddr::v4(192, 0, 2, 1), t, 3, out2, diag2);
        d2.finish(out2);
        QCOMPARE(out2.size(), std::size_t(1));
        QCOMPARE(firstError(diag2), "s.pcap: packet 3, byte " + std::to_string(bad.b.size() - counters.b.size() - 4) +
                                        ": sample 2 length 200; expected at most 12 (the rest of the datagram)");
    }
};

QTEST_GUILESS_MAIN(FlowExportTest)
#include "tst_flow_export.moc"
