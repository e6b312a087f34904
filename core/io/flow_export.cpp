// Flow export decoding: IPFIX (RFC 7011), NetFlow v9 (RFC 3954) and sFlow v5 datagrams into flow records.
//
// IPFIX and v9 share one template engine: a template is compiled once into the list of fields we use (role,
// offset, length); a data record of a fixed-length template is then read at those offsets without walking its
// other fields. Templates, options-derived sampling rates and system init times live per exporting process:
// (exporter address, observation domain) for IPFIX, (exporter address, source id) for v9.
// sFlow samples carry raw packet headers: they go through decodePacket and a PacketFlowBuilder, each sampled
// packet weighted by the sampling rate (sflow.cpp).
#include "io/flow_export.h"

#include "io/flow_export_wire.h"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <unordered_map>
#include <vector>

namespace prism {

using flowexport::be16;
using flowexport::be32;
using flowexport::be64;
using flowexport::Where;

namespace {

// An unsigned integer of 1..8 bytes (IPFIX reduced-size encoding, RFC 7011 section 6.2).
std::uint64_t beN(const std::uint8_t* p, std::size_t n) {
    if (n == 8) return be64(p);
    if (n == 4) return be32(p);
    if (n == 2) return be16(p);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n && i < 8; ++i) v = (v << 8) | p[i];
    return v;
}

constexpr std::uint16_t kIpfixVersion = 10;
constexpr std::uint16_t kNetflow9Version = 9;
constexpr std::uint16_t kNetflow5Version = 5;
constexpr std::size_t kNetflow5Header = 24;
constexpr std::size_t kNetflow5Record = 48;
constexpr std::size_t kIpfixHeader = 16;
constexpr std::size_t kNetflow9Header = 20;
constexpr std::uint16_t kVariableLength = 0xFFFF;
constexpr std::int64_t kNtpToUnixSeconds = 2208988800LL; // 1900-01-01 to 1970-01-01
constexpr std::int64_t kNsPerMs = 1000000;
constexpr std::int64_t kNsPerSec = 1000000000;

// What a template field is used for. Everything else is skipped.
enum class Role : std::uint8_t {
    None,
    SrcV4,
    DstV4,
    SrcV6,
    DstV6,
    SrcPort,
    DstPort,
    Proto,
    OctetDelta,
    OctetTotal,
    PacketDelta,
    PacketTotal,
    PostOctetDelta,
    PostPacketDelta,
    StartSec,
    EndSec,
    StartMs,
    EndMs,
    StartUs,
    EndUs,
    StartNs,
    EndNs, // IEs 150-157
    StartUptime,
    EndUptime, // IEs 22 / 21 (ms since system init)
    StartDeltaUs,
    EndDeltaUs, // IEs 158 / 159 (us before export)
    SysInitMs,  // IE 160
    SamplingInterval,
    SamplerRandomInterval,
    PacketInterval,
    PacketSpace,
    SamplingSize,
    SamplingPopulation,
    SamplerId,
    SelectorId,
};

// Role of an IANA information element (or v9 field type, same numbers) of `len` bytes; None when unused or when
// the length does not fit the element's type.
Role roleOf(std::uint16_t ie, std::uint16_t len) {
    const bool intLen = len >= 1 && len <= 8;
    switch (ie) {
    case 8: return len == 4 ? Role::SrcV4 : Role::None;
    case 12: return len == 4 ? Role::DstV4 : Role::None;
    case 27: return len == 16 ? Role::SrcV6 : Role::None;
    case 28: return len == 16 ? Role::DstV6 : Role::None;
    case 7: return intLen ? Role::SrcPort : Role::None;
    case 11: return intLen ? Role::DstPort : Role::None;
    case 4: return intLen ? Role::Proto : Role::None;
    case 1: return intLen ? Role::OctetDelta : Role::None;
    case 85: return intLen ? Role::OctetTotal : Role::None;
    case 2: return intLen ? Role::PacketDelta : Role::None;
    case 86: return intLen ? Role::PacketTotal : Role::None;
    case 23: return intLen ? Role::PostOctetDelta : Role::None;  // v9 OUT_BYTES: what an egress monitor counts
    case 24: return intLen ? Role::PostPacketDelta : Role::None; // v9 OUT_PKTS
    case 150: return intLen ? Role::StartSec : Role::None;
    case 151: return intLen ? Role::EndSec : Role::None;
    case 152: return intLen ? Role::StartMs : Role::None;
    case 153: return intLen ? Role::EndMs : Role::None;
    case 154: return len == 8 ? Role::StartUs : Role::None;
    case 155: return len == 8 ? Role::EndUs : Role::None;
    case 156: return len == 8 ? Role::StartNs : Role::None;
    case 157: return len == 8 ? Role::EndNs : Role::None;
    case 22: return intLen ? Role::StartUptime : Role::None;
    case 21: return intLen ? Role::EndUptime : Role::None;
    case 158: return intLen ? Role::StartDeltaUs : Role::None;
    case 159: return intLen ? Role::EndDeltaUs : Role::None;
    case 160: return intLen ? Role::SysInitMs : Role::None;
    case 34: return intLen ? Role::SamplingInterval : Role::None;
    case 50: return intLen ? Role::SamplerRandomInterval : Role::None;
    case 305: return intLen ? Role::PacketInterval : Role::None;
    case 306: return intLen ? Role::PacketSpace : Role::None;
    case 309: return intLen ? Role::SamplingSize : Role::None;
    case 310: return intLen ? Role::SamplingPopulation : Role::None;
    case 48: return intLen ? Role::SamplerId : Role::None; // samplerId / v9 FLOW_SAMPLER_ID
    case 302: return intLen ? Role::SelectorId : Role::None;
    default: return Role::None;
    }
}

struct Field {
    std::uint16_t length = 0; // kVariableLength for IPFIX variable-length fields
    Role role = Role::None;
};

struct Use {
    std::uint16_t offset;
    std::uint16_t length;
    Role role;
};

struct Template {
    std::vector<Field> fields;
    bool options = false;
    bool variable = false;       // has a variable-length field
    std::size_t minLength = 0;   // shortest record (variable fields counted as their 1-byte length prefix)
    std::vector<Use> uses;       // fixed-length templates: the fields we read, at their offsets
    bool hasFlowKey = false;     // carries a source or destination address: a flow record
};

void compile(Template& t) {
    t.variable = false;
    t.minLength = 0;
    t.uses.clear();
    t.hasFlowKey = false;
    std::size_t offset = 0;
    for (const Field& f : t.fields) {
        if (f.length == kVariableLength) {
            t.variable = true;
            t.minLength += 1;
            continue;
        }
        if (f.role != Role::None && !t.variable) t.uses.push_back({std::uint16_t(offset), f.length, f.role});
        if (f.role == Role::SrcV4 || f.role == Role::DstV4 || f.role == Role::SrcV6 || f.role == Role::DstV6)
            t.hasFlowKey = true;
        offset += f.length;
        t.minLength += f.length;
    }
}

// The values of one data record we care about.
struct Values {
    std::uint32_t srcV4 = 0, dstV4 = 0;
    const std::uint8_t* srcV6 = nullptr;
    const std::uint8_t* dstV6 = nullptr;
    bool hasSrcV4 = false, hasDstV4 = false;
    std::uint16_t srcPort = 0, dstPort = 0;
    std::uint8_t proto = 0;
    std::optional<std::uint64_t> octetDelta, octetTotal, packetDelta, packetTotal, postOctetDelta, postPacketDelta;
    std::optional<std::int64_t> startNs, endNs;           // absolute (IEs 150-157)
    std::optional<std::int64_t> startUptime, endUptime;   // ms since system init
    std::optional<std::int64_t> startDeltaUs, endDeltaUs; // us before export
    std::optional<std::uint64_t> sysInitMs;
    std::optional<std::uint64_t> samplingInterval, randomInterval, packetInterval, packetSpace, samplingSize,
        samplingPopulation;
    std::optional<std::uint64_t> samplerId, selectorId;
};

std::int64_t ntpToNs(std::uint64_t ntp, bool micro) {
    std::uint64_t secs = ntp >> 32;
    std::uint64_t frac = ntp & 0xFFFFFFFFull;
    if (micro) frac &= ~std::uint64_t(0x7FF); // dateTimeMicroseconds: the lower 11 bits are not significant
    std::int64_t ns = std::int64_t((frac * std::uint64_t(kNsPerSec)) >> 32);
    if (micro) ns = ns / 1000 * 1000;
    return (std::int64_t(secs) - kNtpToUnixSeconds) * kNsPerSec + ns;
}

// Time values are capped so that the arithmetic on them never overflows int64 ns (garbage gives a far-future time,
// not undefined behaviour): absolute seconds and ms up to year ~2255, uptime, init time and deltas below 4e12 ms.
std::int64_t capped(std::uint64_t v, std::uint64_t max) { return std::int64_t(std::min(v, max)); }
constexpr std::uint64_t kMaxSecs = 9'000'000'000ULL;
constexpr std::uint64_t kMaxMs = 9'000'000'000'000ULL;
constexpr std::uint64_t kMaxRelativeMs = 4'000'000'000'000ULL;

void setValue(Values& v, Role role, const std::uint8_t* p, std::size_t len) {
    switch (role) {
    case Role::None: break;
    case Role::SrcV4: v.srcV4 = be32(p); v.hasSrcV4 = true; break;
    case Role::DstV4: v.dstV4 = be32(p); v.hasDstV4 = true; break;
    case Role::SrcV6: v.srcV6 = p; break;
    case Role::DstV6: v.dstV6 = p; break;
    case Role::SrcPort: v.srcPort = std::uint16_t(beN(p, len)); break;
    case Role::DstPort: v.dstPort = std::uint16_t(beN(p, len)); break;
    case Role::Proto: v.proto = std::uint8_t(beN(p, len)); break;
    case Role::OctetDelta: v.octetDelta = beN(p, len); break;
    case Role::OctetTotal: v.octetTotal = beN(p, len); break;
    case Role::PacketDelta: v.packetDelta = beN(p, len); break;
    case Role::PacketTotal: v.packetTotal = beN(p, len); break;
    case Role::PostOctetDelta: v.postOctetDelta = beN(p, len); break;
    case Role::PostPacketDelta: v.postPacketDelta = beN(p, len); break;
    case Role::StartSec: v.startNs = capped(beN(p, len), kMaxSecs) * kNsPerSec; break;
    case Role::EndSec: v.endNs = capped(beN(p, len), kMaxSecs) * kNsPerSec; break;
    case Role::StartMs: v.startNs = capped(beN(p, len), kMaxMs) * kNsPerMs; break;
    case Role::EndMs: v.endNs = capped(beN(p, len), kMaxMs) * kNsPerMs; break;
    case Role::StartUs: v.startNs = ntpToNs(be64(p), true); break;
    case Role::EndUs: v.endNs = ntpToNs(be64(p), true); break;
    case Role::StartNs: v.startNs = ntpToNs(be64(p), false); break;
    case Role::EndNs: v.endNs = ntpToNs(be64(p), false); break;
    case Role::StartUptime: v.startUptime = capped(beN(p, len), kMaxRelativeMs); break;
    case Role::EndUptime: v.endUptime = capped(beN(p, len), kMaxRelativeMs); break;
    case Role::StartDeltaUs: v.startDeltaUs = capped(beN(p, len), kMaxRelativeMs); break;
    case Role::EndDeltaUs: v.endDeltaUs = capped(beN(p, len), kMaxRelativeMs); break;
    case Role::SysInitMs: v.sysInitMs = std::uint64_t(capped(beN(p, len), kMaxRelativeMs)); break;
    case Role::SamplingInterval: v.samplingInterval = beN(p, len); break;
    case Role::SamplerRandomInterval: v.randomInterval = beN(p, len); break;
    case Role::PacketInterval: v.packetInterval = beN(p, len); break;
    case Role::PacketSpace: v.packetSpace = beN(p, len); break;
    case Role::SamplingSize: v.samplingSize = beN(p, len); break;
    case Role::SamplingPopulation: v.samplingPopulation = beN(p, len); break;
    case Role::SamplerId: v.samplerId = beN(p, len); break;
    case Role::SelectorId: v.selectorId = beN(p, len); break;
    }
}

// Packets each sampled one stands for, from the sampling elements of a record (1 when it has none):
// n-out-of-N (309/310), systematic count-based (305 with 306; 305 alone is taken as the interval),
// then samplingInterval (34) and samplerRandomInterval (50).
double samplingFactor(const Values& v) {
    if (v.samplingSize && v.samplingPopulation && *v.samplingSize > 0)
        return double(*v.samplingPopulation) / double(*v.samplingSize);
    if (v.packetInterval && *v.packetInterval > 0) {
        if (v.packetSpace) return double(*v.packetInterval + *v.packetSpace) / double(*v.packetInterval);
        return double(*v.packetInterval);
    }
    if (v.samplingInterval && *v.samplingInterval > 0) return double(*v.samplingInterval);
    if (v.randomInterval && *v.randomInterval > 0) return double(*v.randomInterval);
    return 1.0;
}

bool hasSampling(const Values& v) {
    return v.samplingSize || v.samplingPopulation || v.packetInterval || v.samplingInterval || v.randomInterval;
}

// n scaled by a sampling rate, saturating: a garbage rate must not wrap.
std::uint64_t scaled(std::uint64_t n, double factor) {
    const double x = std::round(double(n) * factor);
    return x >= 1.8e19 ? ~std::uint64_t(0) : std::uint64_t(x);
}

// An exporting process: exporter address + observation domain (IPFIX) or source id (v9).
struct DomainKey {
    IpAddr exporter;
    std::uint32_t domain = 0;
    std::uint16_t version = 0;
    friend bool operator==(const DomainKey&, const DomainKey&) = default;
};
struct DomainKeyHash {
    std::size_t operator()(const DomainKey& k) const noexcept {
        return IpAddrHash{}(k.exporter) ^ (std::size_t(k.domain) * 0x9E3779B97F4A7C15ull) ^ k.version;
    }
};

// A data set that came before its template (a capture that starts between two template refreshes: IOS-XR sends
// them every 30 minutes), kept to be decoded when the template comes, with what its message header said.
struct Pending {
    std::uint16_t templateId = 0;
    std::vector<std::uint8_t> bytes;
    std::size_t base = 0;
    std::uint16_t version = 0;
    std::int64_t exportSecs = 0, sysUptimeMs = 0;
    std::string datagram;  // where it was, for messages
    std::uint64_t seq = 0; // arrival order
};

// A record emitted before what it needed came: unscaled for want of its sampling rate, or at the export time for
// want of the system init time (IE 160). Fixed in the table when the options record comes.
struct Unscaled {
    std::size_t row;
    std::optional<std::uint64_t> samplerId, selectorId;
};
struct Untimed {
    std::size_t row;
    std::optional<std::int64_t> startUptime, endUptime;
};

struct Domain {
    std::unordered_map<std::uint16_t, Template> templates;
    std::size_t fixups = 0;                                          // rows waiting in unscaled* and untimed
    std::unordered_map<std::uint16_t, std::vector<Pending>> pending; // by template id
    // Unscaled rows by what will give their rate: their selector, else their sampler, else the domain's. Each
    // group is applied once, when its rate first comes: every row is touched at most twice.
    std::unordered_map<std::uint64_t, std::vector<Unscaled>> unscaledBySelector, unscaledBySampler;
    std::vector<Unscaled> unscaled;
    std::vector<Untimed> untimed;
    std::optional<double> sampling;                            // from an options record without a sampler scope
    std::unordered_map<std::uint64_t, double> samplerSampling; // by samplerId (48)
    std::unordered_map<std::uint64_t, double> selectorSampling; // by selectorId (302)
    std::optional<std::int64_t> sysInitMs;                     // IE 160 from an options record
    bool warnedUptime = false;
};

// The rate of a record without sampling elements of its own: the options record of its selector, else of its
// sampler, else the domain's; 1 when none has come (yet).
double rateOf(const Domain& d, const std::optional<std::uint64_t>& selector,
              const std::optional<std::uint64_t>& sampler) {
    if (selector)
        if (auto it = d.selectorSampling.find(*selector); it != d.selectorSampling.end()) return it->second;
    if (sampler)
        if (auto it = d.samplerSampling.find(*sampler); it != d.samplerSampling.end()) return it->second;
    return d.sampling.value_or(1.0);
}

} // namespace

struct FlowExportDecoder::Impl {
    std::string file;
    FlowExportStats stats;
    std::unordered_map<DomainKey, Domain, DomainKeyHash> domains;
    PacketFlowBuilder sflowFlows; // sFlow's sampled packets, weighted by their sampling rate
    std::uint64_t sflowRecordsCounted = 0; // of sflowFlows' records, those already in stats

    // Header fields of the message being decoded.
    std::uint16_t version = 0;
    std::int64_t exportSecs = 0;
    std::int64_t sysUptimeMs = 0; // v9 only
    // Where records go and messages are said (the decoder's caller gives the same ones every time).
    FlowTable* out = nullptr;
    LoadDiagnostics* diag = nullptr;
    // Data before its template, and rows to fix, are kept up to these bounds over all exporting processes (then
    // skipped or left as they are): what a hostile capture can make the decoder hold.
    static constexpr std::size_t kMaxPendingBytes = std::size_t(64) << 20; // the sets and what holds them
    static constexpr std::size_t kMaxFixups = std::size_t(2) << 20;        // rows (about 40 bytes each)
    static constexpr std::size_t kMaxDomainFixups = std::size_t(1) << 20;  // of one exporting process
    std::size_t pendingBytes = 0;
    std::size_t fixups = 0;
    std::uint64_t pendingSeq = 0;

    void decodeIpfix(const std::uint8_t* p, std::size_t len, const IpAddr& exporter, FlowTable& out, const Where& at);
    void decodeNetflow9(const std::uint8_t* p, std::size_t len, const IpAddr& exporter, FlowTable& out,
                        const Where& at);
    void decodeNetflow5(const std::uint8_t* p, std::size_t len, const IpAddr& exporter, FlowTable& out,
                        const Where& at);

    // Set 2 / flowset 0 (templates) and set 3 / flowset 1 (options templates). `base` is the set's offset.
    void readTemplates(Domain& d, const std::uint8_t* p, std::size_t len, std::size_t base, bool options,
                       const Where& at);
    void readNetflow9Options(Domain& d, const std::uint8_t* p, std::size_t len, std::size_t base, const Where& at);
    void readData(Domain& d, std::uint16_t templateId, const std::uint8_t* p, std::size_t len, std::size_t base,
                  FlowTable& out, const Where& at);
    // `offset`: the record's byte offset in the datagram, for the one warning per domain about missing times.
    void emit(Domain& d, const Values& v, FlowTable& out, const Where& at, std::size_t offset);
    void learnOptions(Domain& d, const Values& v);
    // Forgets the rows of `d` waiting for a rate or an init time.
    void dropFixups(Domain& d);
    // Whether another row of `d` may wait (within its bound and the decoder's); the count of rows waiting.
    bool roomForFixup(const Domain& d) const { return fixups < kMaxFixups && d.fixups < kMaxDomainFixups; }
    void fixupsTaken(Domain& d, std::size_t n) {
        fixups += n;
        d.fixups += n;
    }
    void fixupsReleased(Domain& d, std::size_t n) {
        fixups -= n;
        d.fixups -= n;
    }
    // The data sets of template `id` that came before it, decoded now that it is known.
    void decodePending(Domain& d, std::uint16_t id);
    // A v9 uptime (ms) as ns since the epoch, from the header's uptime and export time: modulo 2^32, so that a
    // router up for more than 49.7 days (its uptime wrapped) gives the flows before the wrap their past times.
    std::int64_t netflow9UptimeNs(std::int64_t uptime) const;
};

FlowExportDecoder::FlowExportDecoder(std::string file) : m_impl(std::make_unique<Impl>()) {
    m_impl->file = std::move(file);
}
FlowExportDecoder::~FlowExportDecoder() = default;
const FlowExportStats& FlowExportDecoder::stats() const { return m_impl->stats; }
void FlowExportDecoder::finish(FlowTable& out) {
    Impl& m = *m_impl;
    // Data whose template never came: skipped now, each set said where it was, in the order they came.
    std::vector<Pending> skipped;
    for (auto& [key, d] : m.domains) {
        for (auto& [id, sets] : d.pending) std::move(sets.begin(), sets.end(), std::back_inserter(skipped));
        d.pending.clear();
        m.dropFixups(d); // (rows of `out`, which the caller sorts next)
    }
    std::sort(skipped.begin(), skipped.end(), [](const Pending& a, const Pending& b) { return a.seq < b.seq; });
    for (const Pending& q : skipped) {
        ++m.stats.withoutTemplate;
        if (m.diag)
            Where{&m.file, q.datagram, m.diag}.warning(
                q.base - 4, "data set " + std::to_string(q.templateId) + " skipped (" + std::to_string(q.bytes.size()) +
                                " bytes): its template did not come in the capture; expected the template (exporters "
                                "send it again every few minutes: a longer capture holds it)");
    }
    m.pendingBytes = 0;
    m_impl->sflowFlows.finish(out);
    // Every record of sampled packets is a sampled record (counted once, however often finish is called).
    const std::uint64_t added = m_impl->sflowFlows.stats().records - m_impl->sflowRecordsCounted;
    m_impl->sflowRecordsCounted += added;
    m_impl->stats.records += added;
    m_impl->stats.sampledRecords += added;
}

namespace {

// The set/flowset headers of a message body are consistent: each length >= 4 and within the message.
bool setsFit(const std::uint8_t* p, std::size_t len) {
    std::size_t off = 0;
    while (off + 4 <= len) {
        std::size_t setLen = be16(p + off + 2);
        if (setLen < 4 || off + setLen > len) return false;
        off += setLen;
    }
    return true;
}

bool looksLikeIpfix(const std::uint8_t* p, std::size_t len) {
    if (len < kIpfixHeader + 4 || be16(p) != kIpfixVersion) return false;
    std::size_t msgLen = be16(p + 2);
    if (msgLen < kIpfixHeader + 4 || msgLen > len) return false;
    std::uint16_t setId = be16(p + kIpfixHeader);
    return (setId == 2 || setId == 3 || setId >= 256) && setsFit(p + kIpfixHeader, msgLen - kIpfixHeader);
}

bool looksLikeNetflow9(const std::uint8_t* p, std::size_t len) {
    if (len < kNetflow9Header + 4 || be16(p) != kNetflow9Version) return false;
    std::uint16_t setId = be16(p + kNetflow9Header);
    std::uint16_t count = be16(p + 2);
    // Exporters fill the header's record count loosely (some count flowsets): only a count larger than the
    // datagram is refused; the flowset lengths decide.
    return (setId <= 1 || setId >= 256) && count <= len && setsFit(p + kNetflow9Header, len - kNetflow9Header);
}

} // namespace

// NetFlow v5: a 24-byte header, then `count` (1 to 30) records of 48 bytes, nothing else.
bool looksLikeNetflow5(const std::uint8_t* p, std::size_t len) {
    if (len < kNetflow5Header + kNetflow5Record || be16(p) != kNetflow5Version) return false;
    const std::size_t count = be16(p + 2);
    return count >= 1 && count <= 30 && len == kNetflow5Header + count * kNetflow5Record;
}

bool FlowExportDecoder::looksLikeExport(const std::uint8_t* payload, std::size_t len) {
    return looksLikeIpfix(payload, len) || looksLikeNetflow9(payload, len) || looksLikeNetflow5(payload, len) ||
           flowexport::looksLikeSflow(payload, len);
}

bool looksLikeIpfixFile(const std::uint8_t* head, std::size_t len) {
    return len >= kIpfixHeader && be16(head) == kIpfixVersion && be16(head + 2) >= kIpfixHeader;
}

void FlowExportDecoder::decode(const std::uint8_t* payload, std::size_t len, const IpAddr& exporter,
                               std::int64_t packetTimeNs, std::uint64_t packetNumber, FlowTable& out,
                               LoadDiagnostics& diag) {
    Where at{&m_impl->file, "packet " + std::to_string(packetNumber), &diag};
    if (m_impl->out && m_impl->out != &out) // another table: the rows waiting for fixes are not in it
        for (auto& [key, d] : m_impl->domains) m_impl->dropFixups(d);
    m_impl->out = &out;
    m_impl->diag = &diag;
    if (len >= 2 && be16(payload) == kNetflow5Version) return m_impl->decodeNetflow5(payload, len, exporter, out, at);
    if (len >= 2 && be16(payload) == kIpfixVersion) return m_impl->decodeIpfix(payload, len, exporter, out, at);
    if (len >= 2 && be16(payload) == kNetflow9Version) return m_impl->decodeNetflow9(payload, len, exporter, out, at);
    if (len >= 4 && be32(payload) == flowexport::kSflowVersion)
        return flowexport::decodeSflow(payload, len, packetTimeNs, m_impl->sflowFlows, m_impl->stats, out, at);
    at.error(0, "unknown flow export version; expected IPFIX (10), NetFlow v9 (9), NetFlow v5 or sFlow v5");
}

void FlowExportDecoder::Impl::decodeIpfix(const std::uint8_t* p, std::size_t len, const IpAddr& exporter,
                                          FlowTable& out, const Where& at) {
    if (len < kIpfixHeader) {
        at.error(0, "IPFIX message header cut short at " + std::to_string(len) + " bytes; expected 16");
        return;
    }
    std::size_t msgLen = be16(p + 2);
    if (msgLen < kIpfixHeader || msgLen > len) {
        at.error(2, "IPFIX message length " + std::to_string(msgLen) + "; expected 16 to " + std::to_string(len) +
                        " (the bytes available)");
        return;
    }
    ++stats.ipfixMessages;
    version = kIpfixVersion;
    exportSecs = be32(p + 4);
    sysUptimeMs = 0;
    Domain& d = domains[DomainKey{exporter, be32(p + 12), kIpfixVersion}];
    std::size_t off = kIpfixHeader;
    while (off < msgLen) {
        if (msgLen - off < 4) {
            at.error(off, "set header cut short (" + std::to_string(msgLen - off) + " bytes left); expected 4");
            return;
        }
        std::uint16_t setId = be16(p + off);
        std::size_t setLen = be16(p + off + 2);
        if (setLen < 4 || setLen > msgLen - off) {
            at.error(off + 2, "set length " + std::to_string(setLen) + "; expected 4 to " +
                                  std::to_string(msgLen - off) + " (the rest of the message)");
            return;
        }
        const std::uint8_t* body = p + off + 4;
        std::size_t bodyLen = setLen - 4;
        if (setId == 2 || setId == 3)
            readTemplates(d, body, bodyLen, off + 4, setId == 3, at);
        else if (setId >= 256)
            readData(d, setId, body, bodyLen, off + 4, out, at);
        else
            at.warning(off, "set id " + std::to_string(setId) + " skipped; expected 2, 3 or a template id >= 256");
        off += setLen;
    }
}

void FlowExportDecoder::Impl::decodeNetflow9(const std::uint8_t* p, std::size_t len, const IpAddr& exporter,
                                             FlowTable& out, const Where& at) {
    if (len < kNetflow9Header) {
        at.error(0, "NetFlow v9 header cut short at " + std::to_string(len) + " bytes; expected 20");
        return;
    }
    ++stats.netflow9Packets;
    version = kNetflow9Version;
    sysUptimeMs = be32(p + 4);
    exportSecs = be32(p + 8);
    Domain& d = domains[DomainKey{exporter, be32(p + 16), kNetflow9Version}];
    std::size_t off = kNetflow9Header;
    // Flowsets run to the end of the datagram (v9 has no message length); fewer than 4 bytes left is padding.
    while (len - off >= 4) {
        std::uint16_t setId = be16(p + off);
        std::size_t setLen = be16(p + off + 2);
        if (setLen < 4 || setLen > len - off) {
            at.error(off + 2, "flowset length " + std::to_string(setLen) + "; expected 4 to " +
                                  std::to_string(len - off) + " (the rest of the packet)");
            return;
        }
        const std::uint8_t* body = p + off + 4;
        std::size_t bodyLen = setLen - 4;
        if (setId == 0)
            readTemplates(d, body, bodyLen, off + 4, false, at);
        else if (setId == 1)
            readNetflow9Options(d, body, bodyLen, off + 4, at);
        else if (setId >= 256)
            readData(d, setId, body, bodyLen, off + 4, out, at);
        else
            at.warning(off, "flowset id " + std::to_string(setId) + " skipped; expected 0, 1 or a template id >= 256");
        off += setLen;
    }
}

// NetFlow v5 (softflowd's default, older routers): fixed records, times in ms of the sender's uptime, the
// sampling interval in the header's low 14 bits (its top 2 bits the mode: 0 none).
void FlowExportDecoder::Impl::decodeNetflow5(const std::uint8_t* p, std::size_t len, const IpAddr& exporter,
                                             FlowTable& out, const Where& at) {
    if (!looksLikeNetflow5(p, len)) {
        at.error(0, "NetFlow v5 packet of " + std::to_string(len) +
                        " bytes; expected a 24-byte header and 1 to 30 "
                        "records of 48 bytes, as its count says");
        return;
    }
    ++stats.netflow5Packets;
    version = kNetflow5Version;
    const std::size_t count = be16(p + 2);
    sysUptimeMs = be32(p + 4);
    exportSecs = be32(p + 8);
    const std::int64_t exportNs = exportSecs * kNsPerSec + std::min<std::int64_t>(be32(p + 12), kNsPerSec - 1);
    const std::uint16_t sampling = be16(p + 22);
    // An exporting process: the sender and its engine (type, id).
    Domain& d = domains[DomainKey{exporter, std::uint32_t(be16(p + 20)), kNetflow5Version}];
    for (std::size_t k = 0; k < count; ++k) {
        const std::uint8_t* r = p + kNetflow5Header + k * kNetflow5Record;
        Values v;
        v.srcV4 = be32(r);
        v.dstV4 = be32(r + 4);
        v.hasSrcV4 = v.hasDstV4 = true;
        v.packetDelta = be32(r + 16);
        v.octetDelta = be32(r + 20);
        // first / last: ms of uptime, modulo 2^32 before the export
        const auto before = [&](std::uint32_t uptime) {
            return std::int64_t(std::int32_t(std::uint32_t(sysUptimeMs) - uptime)) * kNsPerMs;
        };
        v.startNs = exportNs - before(be32(r + 24));
        v.endNs = exportNs - before(be32(r + 28));
        v.srcPort = be16(r + 32);
        v.dstPort = be16(r + 34);
        v.proto = r[38];
        if ((sampling >> 14) != 0 && (sampling & 0x3FFF) > 1) v.samplingInterval = sampling & 0x3FFF;
        emit(d, v, out, at, kNetflow5Header + k * kNetflow5Record);
    }
}

void FlowExportDecoder::Impl::readTemplates(Domain& d, const std::uint8_t* p, std::size_t len, std::size_t base,
                                            bool options, const Where& at) {
    const bool ipfix = version == kIpfixVersion;
    const char* what = options ? "options template" : "template";
    std::size_t off = 0;
    // A template record is at least its 4-byte header; fewer bytes left are padding.
    while (len - off >= 4) {
        std::uint16_t id = be16(p + off);
        std::uint16_t count = be16(p + off + 2);
        std::size_t header = options && ipfix ? 6 : 4;
        if (count == 0) {
            // Withdrawal (IPFIX): of one template, or of all (options) templates when the id is the set id.
            if (id == 2 || id == 3) {
                for (auto it = d.templates.begin(); it != d.templates.end();)
                    it = it->second.options == options ? d.templates.erase(it) : std::next(it);
            } else {
                d.templates.erase(id);
            }
            off += 4;
            continue;
        }
        if (len - off < header) {
            at.error(base + off,
                     std::string(what) + " header cut short; expected " + std::to_string(header) + " bytes");
            return;
        }
        std::uint16_t scopeCount = options && ipfix ? be16(p + off + 4) : 0;
        if (id < 256) {
            at.error(base + off, std::string(what) + " id " + std::to_string(id) + "; expected 256 or more");
            return;
        }
        if (options && (scopeCount == 0 || scopeCount > count)) {
            at.error(base + off + 4, "options template " + std::to_string(id) + " scope field count " +
                                         std::to_string(scopeCount) + "; expected 1 to " + std::to_string(count));
            return;
        }
        Template t;
        t.options = options;
        t.fields.reserve(count);
        std::size_t q = off + header;
        for (std::uint16_t i = 0; i < count; ++i) {
            if (len - q < 4) {
                at.error(base + q, std::string(what) + " " + std::to_string(id) + " declares " + std::to_string(count) +
                                       " fields but the set ends after " + std::to_string(i) + "; expected " +
                                       std::to_string(4 * (count - i)) + " more bytes of field specifiers");
                return;
            }
            std::uint16_t ie = be16(p + q);
            std::uint16_t flen = be16(p + q + 2);
            q += 4;
            bool enterprise = ipfix && (ie & 0x8000);
            if (enterprise) { // a 4-byte Private Enterprise Number follows; the field is skipped
                if (len - q < 4) {
                    at.error(base + q, std::string(what) + " " + std::to_string(id) +
                                           ": enterprise number cut short; expected 4 bytes");
                    return;
                }
                q += 4;
            }
            if (!ipfix && flen == kVariableLength) {
                at.error(base + q - 2,
                         "template " + std::to_string(id) + " field length 65535; expected a fixed length");
                return;
            }
            Field f;
            f.length = flen;
            if (!enterprise && flen != kVariableLength) f.role = roleOf(ie & 0x7FFF, flen);
            t.fields.push_back(f);
        }
        compile(t);
        if (t.minLength == 0) {
            at.error(base + off, std::string(what) + " " + std::to_string(id) + " has only zero-length fields; "
                                 "expected records of at least 1 byte");
            return;
        }
        d.templates[id] = std::move(t);
        ++stats.templates;
        decodePending(d, id);
        off = q;
    }
}

// NetFlow v9 options template: id, scope length and option length in bytes, then (type, length) pairs. Scope
// field types (system, interface, line card, cache, template) are not information elements: they are skipped.
void FlowExportDecoder::Impl::readNetflow9Options(Domain& d, const std::uint8_t* p, std::size_t len,
                                                  std::size_t base, const Where& at) {
    std::size_t off = 0;
    while (len - off >= 6) {
        std::uint16_t id = be16(p + off);
        std::size_t scopeLen = be16(p + off + 2);
        std::size_t optionLen = be16(p + off + 4);
        if (id < 256 || scopeLen % 4 || optionLen % 4 || scopeLen + optionLen > len - off - 6) {
            at.error(base + off, "options template " + std::to_string(id) + " with scope length " +
                                     std::to_string(scopeLen) + " and option length " + std::to_string(optionLen) +
                                     "; expected an id >= 256 and lengths that are multiples of 4 within the " +
                                     std::to_string(len - off - 6) + " bytes left");
            return;
        }
        Template t;
        t.options = true;
        std::size_t q = off + 6;
        for (std::size_t i = 0; i < (scopeLen + optionLen) / 4; ++i, q += 4) {
            Field f;
            f.length = be16(p + q + 2);
            if (i >= scopeLen / 4) f.role = roleOf(be16(p + q), f.length);
            t.fields.push_back(f);
        }
        compile(t);
        if (t.minLength == 0) {
            at.error(base + off, "options template " + std::to_string(id) + " has no field bytes; expected at least 1");
            return;
        }
        d.templates[id] = std::move(t);
        ++stats.templates;
        decodePending(d, id);
        off = q;
    }
}

void FlowExportDecoder::Impl::decodePending(Domain& d, std::uint16_t id) {
    const auto it = d.pending.find(id);
    if (it == d.pending.end() || !out || !diag) return;
    const std::uint16_t savedVersion = version;
    const std::int64_t savedExport = exportSecs, savedUptime = sysUptimeMs;
    const std::vector<Pending> now = std::move(it->second);
    d.pending.erase(it);
    for (const Pending& q : now) {
        pendingBytes -= q.bytes.size() + sizeof(Pending) + q.datagram.size();
        version = q.version;
        exportSecs = q.exportSecs;
        sysUptimeMs = q.sysUptimeMs;
        readData(d, id, q.bytes.data(), q.bytes.size(), q.base, *out, Where{&file, q.datagram, diag});
    }
    version = savedVersion;
    exportSecs = savedExport;
    sysUptimeMs = savedUptime;
}

std::int64_t FlowExportDecoder::Impl::netflow9UptimeNs(std::int64_t uptime) const {
    const std::int64_t exportMs = exportSecs * 1000;
    if (uptime > 0xFFFFFFFFLL || sysUptimeMs > 0xFFFFFFFFLL) return (exportMs - sysUptimeMs + uptime) * kNsPerMs;
    const auto before = std::int32_t(std::uint32_t(sysUptimeMs) - std::uint32_t(uptime)); // ms before the export
    return (exportMs - before) * kNsPerMs;
}

void FlowExportDecoder::Impl::readData(Domain& d, std::uint16_t templateId, const std::uint8_t* p, std::size_t len,
                                       std::size_t base, FlowTable& out, const Where& at) {
    auto it = d.templates.find(templateId);
    if (it == d.templates.end()) {
        const std::size_t held = len + sizeof(Pending) + at.datagram.size();
        if (pendingBytes + held <= kMaxPendingBytes) { // decoded when the template comes (decodePending)
            d.pending[templateId].push_back({templateId, std::vector<std::uint8_t>(p, p + len), base, version,
                                             exportSecs, sysUptimeMs, at.datagram, pendingSeq++});
            pendingBytes += held;
            return;
        }
        ++stats.withoutTemplate;
        at.warning(base - 4, "data set " + std::to_string(templateId) + " skipped (" + std::to_string(len) +
                                 " bytes): its template was not received before it, and " +
                                 std::to_string(kMaxPendingBytes >> 20) +
                                 " MiB of such data wait already; expected the template first");
        return;
    }
    const Template& t = it->second;
    std::size_t off = 0;
    // Records follow each other; what is left shorter than the shortest record is padding.
    while (len - off >= t.minLength) {
        const std::size_t recordOffset = base + off;
        Values v;
        if (!t.variable) {
            const std::uint8_t* rec = p + off;
            for (const Use& u : t.uses) setValue(v, u.role, rec + u.offset, u.length);
            off += t.minLength;
        } else {
            std::size_t q = off;
            for (std::size_t i = 0; i < t.fields.size(); ++i) {
                std::size_t flen = t.fields[i].length;
                if (flen == kVariableLength) {
                    std::size_t prefix = len - q >= 1 && p[q] == 255 ? 3 : 1;
                    if (len - q < prefix) {
                        at.error(base + q, "record of template " + std::to_string(templateId) +
                                               ": the length of field " + std::to_string(i + 1) +
                                               " is cut short; expected " + std::to_string(prefix) +
                                               " length byte(s) within the set");
                        return;
                    }
                    flen = prefix == 1 ? p[q] : be16(p + q + 1);
                    q += prefix;
                }
                if (len - q < flen) {
                    at.error(base + q, "record of template " + std::to_string(templateId) + ": field " +
                                           std::to_string(i + 1) + " is " + std::to_string(flen) +
                                           " bytes long but the set has " + std::to_string(len - q) +
                                           " left; expected the field within the set");
                    return;
                }
                if (t.fields[i].role != Role::None) setValue(v, t.fields[i].role, p + q, flen);
                q += flen;
            }
            off = q;
        }
        if (t.options)
            learnOptions(d, v);
        else if (t.hasFlowKey)
            emit(d, v, out, at, recordOffset);
    }
}

void FlowExportDecoder::Impl::learnOptions(Domain& d, const Values& v) {
    if (!out) dropFixups(d); // (no table to fix: records are emitted only where there is one)
    if (v.sysInitMs) {
        d.sysInitMs = std::int64_t(*v.sysInitMs);
        // The records that came before it got the export time: now their own.
        for (const Untimed& u : d.untimed) {
            if (u.row >= out->size()) continue;
            const std::optional<std::int64_t> s = u.startUptime ? u.startUptime : u.endUptime;
            const std::optional<std::int64_t> e = u.endUptime ? u.endUptime : u.startUptime;
            out->startNs.set(u.row, (*d.sysInitMs + *s) * kNsPerMs);
            out->setEnd(u.row, std::max(out->startNs[u.row], (*d.sysInitMs + *e) * kNsPerMs));
        }
        fixupsReleased(d, d.untimed.size());
        d.untimed.clear();
    }
    if (!hasSampling(v)) return;
    double factor = samplingFactor(v);
    // The records that came before their rate (an exporter sends its sampler table now and then): scaled when it
    // first comes.
    auto apply = [&](const std::vector<Unscaled>& rows) {
        for (const Unscaled& u : rows) {
            const double f = rateOf(d, u.selectorId, u.samplerId);
            if (f != 1.0 && u.row < out->size()) {
                out->bytes.set(u.row, scaled(out->bytes[u.row], f));
                out->packets.set(u.row, scaled(out->packets[u.row], f));
                ++stats.sampledRecords;
            }
        }
        fixupsReleased(d, rows.size());
    };
    auto applyGroup = [&](std::unordered_map<std::uint64_t, std::vector<Unscaled>>& groups, std::uint64_t key) {
        if (auto it = groups.find(key); it != groups.end()) {
            apply(it->second);
            groups.erase(it);
        }
    };
    if (v.selectorId) {
        d.selectorSampling[*v.selectorId] = factor;
        applyGroup(d.unscaledBySelector, *v.selectorId);
    } else if (v.samplerId) {
        d.samplerSampling[*v.samplerId] = factor;
        applyGroup(d.unscaledBySampler, *v.samplerId);
    } else {
        const bool first = !d.sampling || *d.sampling == 1.0; // (a rate of 1 scaled nothing: rows still wait)
        d.sampling = factor;
        if (first) { // every row still unscaled falls back to it (their own selectors and samplers are unknown)
            apply(d.unscaled);
            for (auto* groups : {&d.unscaledBySelector, &d.unscaledBySampler})
                for (const auto& [key, rows] : *groups) apply(rows);
            d.unscaled.clear();
            d.unscaledBySelector.clear();
            d.unscaledBySampler.clear();
        }
    }
}

void FlowExportDecoder::Impl::dropFixups(Domain& d) {
    fixupsReleased(d, d.fixups);
    d.untimed.clear();
    d.unscaled.clear();
    d.unscaledBySelector.clear();
    d.unscaledBySampler.clear();
}

void FlowExportDecoder::Impl::emit(Domain& d, const Values& v, FlowTable& out, const Where& at, std::size_t offset) {
    FlowRecord r;
    // Templates may carry both families (one of them zero): IPv4 unless it is absent or 0.0.0.0 -> 0.0.0.0 while
    // the IPv6 pair is not.
    auto zero16 = [](const std::uint8_t* a) { return std::all_of(a, a + 16, [](std::uint8_t b) { return b == 0; }); };
    const bool hasV6 = v.srcV6 || v.dstV6;
    const bool useV6 = hasV6 && (!(v.hasSrcV4 || v.hasDstV4) ||
                                 (v.srcV4 == 0 && v.dstV4 == 0 && !((!v.srcV6 || zero16(v.srcV6)) &&
                                                                    (!v.dstV6 || zero16(v.dstV6)))));
    auto v6 = [](const std::uint8_t* a) {
        IpAddr ip;
        ip.v6 = true;
        if (a) std::memcpy(ip.bytes.data(), a, 16);
        return ip;
    };
    r.src = useV6 ? v6(v.srcV6) : IpAddr::v4(v.srcV4);
    r.dst = useV6 ? v6(v.dstV6) : IpAddr::v4(v.dstV4);
    r.srcPort = v.srcPort;
    r.dstPort = v.dstPort;
    r.proto = v.proto;
    // The flow's own counts (delta, else total), else what an egress monitor counted (v9 OUT_BYTES / OUT_PKTS).
    std::uint64_t bytes = v.octetDelta ? *v.octetDelta : v.octetTotal ? *v.octetTotal : v.postOctetDelta.value_or(0);
    std::uint64_t packets = v.packetDelta   ? *v.packetDelta
                            : v.packetTotal ? *v.packetTotal
                                            : v.postPacketDelta.value_or(0);

    // Sampling: the record's own elements, else the options record of its selector / sampler, else the domain's.
    const double factor = hasSampling(v) ? samplingFactor(v) : rateOf(d, v.selectorId, v.samplerId);
    if (factor != 1.0) {
        bytes = scaled(bytes, factor);
        packets = scaled(packets, factor);
        ++stats.sampledRecords;
    } else if (!hasSampling(v) && version != kNetflow5Version && roomForFixup(d)) { // until a rate comes
        const Unscaled u{out.size(), v.samplerId, v.selectorId};                    // (learnOptions; v5 has none)
        if (v.selectorId) d.unscaledBySelector[*v.selectorId].push_back(u);
        else if (v.samplerId) d.unscaledBySampler[*v.samplerId].push_back(u);
        else d.unscaled.push_back(u);
        fixupsTaken(d, 1);
    }
    r.bytes = bytes;
    r.packets = packets;

    // Times: absolute elements, else deltas before export, else system uptime (v9 header, or IE 160), else the
    // export time.
    const std::int64_t exportNs = exportSecs * kNsPerSec;
    std::optional<std::int64_t> initMs;
    if (v.sysInitMs) initMs = std::int64_t(*v.sysInitMs);
    else initMs = d.sysInitMs;
    auto timeOf = [&](const std::optional<std::int64_t>& abs, const std::optional<std::int64_t>& deltaUs,
                      const std::optional<std::int64_t>& uptime) -> std::optional<std::int64_t> {
        if (abs) return abs;
        if (deltaUs) return exportNs - *deltaUs * 1000;
        if (uptime && version == kNetflow9Version) return netflow9UptimeNs(*uptime);
        if (uptime && initMs) return (*initMs + *uptime) * kNsPerMs;
        return std::nullopt;
    };
    std::optional<std::int64_t> start = timeOf(v.startNs, v.startDeltaUs, v.startUptime);
    std::optional<std::int64_t> end = timeOf(v.endNs, v.endDeltaUs, v.endUptime);
    r.startNs = start ? *start : end ? *end : exportNs;
    r.endNs = end ? *end : r.startNs;
    if (!start && !end && (v.startUptime || v.endUptime)) {
        // Uptimes without the system init time: the flow ends at the export, lasting what its uptimes say, until
        // IE 160 comes (learnOptions sets the times then).
        if (v.startUptime && v.endUptime && *v.endUptime >= *v.startUptime)
            r.startNs = exportNs - (*v.endUptime - *v.startUptime) * kNsPerMs;
        if (roomForFixup(d)) {
            d.untimed.push_back({out.size(), v.startUptime, v.endUptime});
            fixupsTaken(d, 1);
        }
        if (!d.warnedUptime) {
            d.warnedUptime = true;
            at.warning(offset,
                       "flowStart/EndSysUpTime (IEs 22/21) without systemInitTimeMilliseconds (IE 160) from this "
                       "observation domain: the records end at the export time, as long as their uptimes say; "
                       "expected IE 160 in the record or in an options record");
        }
    }
    if (r.endNs < r.startNs) r.endNs = r.startNs;
    out.append(r);
    ++stats.records;
}

void warnIfSampled(const FlowExportStats& stats, const std::string& file, LoadDiagnostics& diag) {
    if (!stats.sampledRecords) return;
    diag.addWarning({file, 0, 0,
                     std::to_string(stats.sampledRecords) + " of " + std::to_string(stats.records) +
                         " flow records come from sampled exports (sFlow, or IPFIX / NetFlow with a sampling rate): "
                         "bytes and packets are scaled by the rate, so they are estimates, and transfers the sampler "
                         "missed are not there"});
}

// Reads message by message (one 64 KiB buffer): a file of any size costs only its flow records in memory.
FlowTable readIpfixFile(const std::string& path, LoadDiagnostics& diag, FlowExportStats* stats) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError({path, 0, 0, std::string("cannot open the file: ") + std::strerror(errno)});
    std::vector<std::uint8_t> msg(0x10000);
    auto read = [&](std::size_t at, std::size_t n) {
        in.read(reinterpret_cast<char*>(msg.data() + at), std::streamsize(n));
        return std::size_t(in.gcount());
    };
    std::size_t got = read(0, kIpfixHeader);
    if (!looksLikeIpfixFile(msg.data(), got))
        throw InputError({path, 0, 0, "not an IPFIX file: expected an IPFIX message header (version 10) at byte 0"});
    FlowExportDecoder decoder(path);
    FlowTable out;
    decoder.m_impl->out = &out;
    decoder.m_impl->diag = &diag;
    std::uint64_t off = 0;
    std::uint64_t message = 0;
    for (; got > 0; got = read(0, kIpfixHeader)) {
        ++message;
        const std::string where = "IPFIX message " + std::to_string(message) + " at byte offset " + std::to_string(off);
        const std::size_t msgLen = got >= 4 ? be16(msg.data() + 2) : 0;
        std::string problem;
        if (got < kIpfixHeader)
            problem = "header cut short (" + std::to_string(got) + " bytes)";
        else if (be16(msg.data()) != kIpfixVersion || msgLen < kIpfixHeader)
            problem = "version " + std::to_string(be16(msg.data())) + ", length " + std::to_string(msgLen);
        else if (std::size_t body = read(kIpfixHeader, msgLen - kIpfixHeader); body < msgLen - kIpfixHeader)
            problem = "length " + std::to_string(msgLen) + " but the file ends after " +
                      std::to_string(kIpfixHeader + body) + " bytes";
        if (!problem.empty()) {
            diag.addError({path, 0, 0,
                           where + ": " + problem +
                               "; expected a version 10 message header whose length fits the file. "
                               "The rest of the file is skipped"});
            break;
        }
        decoder.m_impl->decodeIpfix(msg.data(), msgLen, IpAddr{}, out, Where{&decoder.m_impl->file, where, &diag});
        off += msgLen;
    }
    decoder.finish(out);
    warnIfSampled(decoder.stats(), path, diag);
    if (stats) *stats = decoder.stats();
    return out;
}

} // namespace prism
