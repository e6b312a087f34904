// writePcapCapture: the simulated flow records as the packets a port mirror would capture (tcpdump -s 96,
// nanosecond pcap). Each RoCE record becomes RDMA WRITE (or SEND) first / middle / last packets of at most 4096
// payload bytes, evenly spread over the record's time, with the BTH of its QP and PSNs that continue per QP;
// the receiver ACKs every few packets; seeded go-back-N retransmissions (with their NAK) and CNPs (with the
// ECN-CE mark that caused them). Other records become TCP or UDP packets of at most 1448 payload bytes.
#include "io/capture.h"
#include "io/report_json.h"
#include "sim/random.h"
#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <vector>
#include <nlohmann/json.hpp>

namespace prism::sim {

namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kSnapLen = 96;
constexpr std::uint64_t kRoceMtu = 4096;
constexpr std::uint64_t kOtherMtu = 1448;
constexpr std::int64_t kAckDelayNs = 2'000; // the receiver's ACK / NAK / CNP reaches the capture point later
constexpr std::uint64_t kPcapStream = 400;

// BTH opcodes (RC)
constexpr std::uint8_t kSendFirst = 0x00, kSendMiddle = 0x01, kSendLast = 0x02, kSendOnly = 0x04;
constexpr std::uint8_t kWriteFirst = 0x06, kWriteMiddle = 0x07, kWriteLast = 0x08, kWriteOnly = 0x0a;
constexpr std::uint8_t kAck = 0x11, kCnp = 0x81;

inline std::uint64_t hashOf(const IpAddr& a, const IpAddr& b, std::uint64_t more) {
    std::uint64_t h = 0x9e3779b97f4a7c15ull ^ more;
    for (int i = 0; i < 16; ++i) h = mixSeed(h ^ (std::uint64_t(a.bytes[std::size_t(i)]) << (i % 8 * 8)));
    for (int i = 0; i < 16; ++i) h = mixSeed(h ^ (std::uint64_t(b.bytes[std::size_t(i)]) << (i % 8 * 8)));
    return h;
}

// A QP as seen on the wire: the responder's QP (BTH destination of data), the requester's QP (destination
// of ACKs and CNPs), the ACK's UDP source port, the next PSN, and whether it moves data by SEND or WRITE.
struct Qp {
    std::uint32_t destQp = 0;
    std::uint32_t requesterQp = 0;
    std::uint16_t ackPort = 0;
    std::uint32_t nextPsn = 0;
    bool send = false;
    bool vlan = false;  // frames of the sender's host carry an 802.1Q tag
    bool qinq = false;  // ... or 802.1ad + 802.1Q
    bool peerVlan = false, peerQinq = false;
};

// One RoCE record being written: its data packets (plus a replayed run for a retransmission) over its time.
struct Active {
    std::uint32_t record = 0;
    Qp* qp = nullptr;
    std::uint32_t psnBase = 0;
    std::uint32_t dataPackets = 0; // n
    std::uint32_t retransAt = 0;   // j: first packet sent again (when retransLen > 0)
    std::uint32_t retransLen = 0;  // k: packets sent again after packet j + k - 1
    bool congested = false;        // some packets ECN-CE marked, each followed by a CNP
};

// Ties in time go in this order; kRelease frees a RoCE record's slot once its last ACK / CNP is out.
enum Kind : std::uint8_t { kData = 0, kAckPacket = 1, kNakPacket = 2, kCnpPacket = 3, kOther = 4, kRelease = 5 };

struct Event {
    std::int64_t t;
    std::uint32_t slot; // index into the active list (RoCE) or the record (other)
    std::uint32_t seq;  // packet number within the record
    std::uint8_t kind;
    std::uint32_t psn;  // ACK / NAK: the PSN acknowledged
    bool operator>(const Event& o) const {
        if (t != o.t) return t > o.t;
        if (kind != o.kind) return kind > o.kind;
        if (slot != o.slot) return slot > o.slot;
        return seq > o.seq;
    }
};

class PcapOut {
public:
    explicit PcapOut(const std::string& path) : m_path(path) {
        m_file = std::fopen(path.c_str(), "wb");
        if (!m_file) throw std::runtime_error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
        m_buf.reserve(kChunk + 256);
        // Nanosecond pcap, version 2.4, snap length 96, Ethernet.
        putLe32(0xa1b23c4d);
        putLe16(2);
        putLe16(4);
        putLe32(0);
        putLe32(0);
        putLe32(kSnapLen);
        putLe32(1);
    }
    ~PcapOut() {
        if (m_file) std::fclose(m_file);
    }
    void packet(std::int64_t t, const std::uint8_t* frame, std::size_t headerLen, std::size_t origLen) {
        const std::size_t cap = std::min<std::size_t>({origLen, kSnapLen});
        putLe32(std::uint32_t(t / 1'000'000'000));
        putLe32(std::uint32_t(t % 1'000'000'000));
        putLe32(std::uint32_t(cap));
        putLe32(std::uint32_t(origLen));
        // Headers as built; payload bytes (zeros) up to the snap length.
        const std::size_t fromFrame = std::min(cap, headerLen);
        m_buf.append(reinterpret_cast<const char*>(frame), fromFrame);
        m_buf.append(cap - fromFrame, '\0');
        if (m_buf.size() >= kChunk) flush();
    }
    void finish() {
        flush();
        const bool ok = std::fclose(m_file) == 0;
        m_file = nullptr;
        if (!ok) throw std::runtime_error(m_path + ": write failed (disk full?)");
    }

private:
    static constexpr std::size_t kChunk = std::size_t(1) << 20;
    void putLe16(std::uint16_t v) { m_buf.append({char(v), char(v >> 8)}); }
    void putLe32(std::uint32_t v) { m_buf.append({char(v), char(v >> 8), char(v >> 16), char(v >> 24)}); }
    void flush() {
        if (m_buf.empty()) return;
        const bool ok = std::fwrite(m_buf.data(), 1, m_buf.size(), m_file) == m_buf.size();
        m_buf.clear();
        if (!ok) throw std::runtime_error(m_path + ": write failed (disk full?)");
    }
    std::string m_path;
    std::FILE* m_file = nullptr;
    std::string m_buf;
};

// The headers of one frame (Ethernet + tags, IPv4 or IPv6, UDP or TCP, BTH ...) in b[0 .. n); the payload is
// not built: the pcap holds at most 96 bytes of a frame, the rest is zeros up to that.
class Frame {
public:
    std::uint8_t b[128];
    std::size_t n = 0;

    void u8(std::uint8_t v) { b[n++] = v; }
    void u16(std::uint16_t v) {
        b[n++] = std::uint8_t(v >> 8);
        b[n++] = std::uint8_t(v);
    }
    void u24(std::uint32_t v) {
        b[n++] = std::uint8_t(v >> 16);
        b[n++] = std::uint8_t(v >> 8);
        b[n++] = std::uint8_t(v);
    }
    void u32(std::uint32_t v) {
        u16(std::uint16_t(v >> 16));
        u16(std::uint16_t(v));
    }
    void mac(const IpAddr& ip) {
        u8(0x02);
        u8(0x00);
        for (int i = 12; i < 16; ++i) u8(ip.bytes[std::size_t(i)]);
    }

    // Ethernet (+ tags) and the IP header of a packet with `l4Len` bytes of transport header and payload;
    // returns the frame's length on the wire.
    std::size_t ethIp(const IpAddr& src, const IpAddr& dst, bool vlan, bool qinq, std::uint8_t proto,
                      std::size_t l4Len, std::uint8_t ecn) {
        n = 0;
        mac(dst);
        mac(src);
        if (qinq) {
            u16(0x88a8);
            u16(200);
        }
        if (vlan || qinq) {
            u16(0x8100);
            u16(0x6000 | 100); // priority 3 (RoCE traffic class), VLAN 100
        }
        if (!src.v6) {
            u16(0x0800);
            const std::size_t at = n;
            u8(0x45);
            u8(std::uint8_t((26 << 2) | ecn)); // DSCP 26 (RoCE), ECN bits
            u16(std::uint16_t(20 + l4Len));
            u16(0);      // identification
            u16(0x4000); // don't fragment
            u8(64);
            u8(proto);
            u16(0);
            for (int i = 12; i < 16; ++i) u8(src.bytes[std::size_t(i)]);
            for (int i = 12; i < 16; ++i) u8(dst.bytes[std::size_t(i)]);
            std::uint32_t sum = 0;
            for (std::size_t i = at; i < at + 20; i += 2) sum += std::uint32_t(b[i] << 8 | b[i + 1]);
            while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
            b[at + 10] = std::uint8_t(~sum >> 8);
            b[at + 11] = std::uint8_t(~sum);
        } else {
            u16(0x86dd);
            u32(0x60000000u | std::uint32_t(26 << 2 | ecn) << 20);
            u16(std::uint16_t(l4Len));
            u8(proto);
            u8(64);
            for (int i = 0; i < 16; ++i) u8(src.bytes[std::size_t(i)]);
            for (int i = 0; i < 16; ++i) u8(dst.bytes[std::size_t(i)]);
        }
        return n + l4Len;
    }
    void udp(std::uint16_t sport, std::uint16_t dport, std::size_t payloadLen) {
        u16(sport);
        u16(dport);
        u16(std::uint16_t(8 + payloadLen));
        u16(0);
    }
    void bth(std::uint8_t opcode, std::uint32_t destQp, std::uint32_t psn, bool ackReq) {
        u8(opcode);
        u8(0x40); // migration state set, no pad, transport version 0
        u16(0xffff);
        u8(0);
        u24(destQp);
        u8(ackReq ? 0x80 : 0);
        u24(psn & 0xffffff);
    }
};

// The share of a record's bytes carried by packet d of n (MTU-sized, the remainder last).
inline std::uint64_t payloadOf(std::uint64_t bytes, std::uint64_t mtu, std::uint32_t d, std::uint32_t n) {
    return d + 1 < n ? mtu : bytes - mtu * (n - 1);
}

inline std::uint32_t packetsOf(std::uint64_t bytes, std::uint64_t mtu) {
    return std::uint32_t(std::max<std::uint64_t>(1, (bytes + mtu - 1) / mtu));
}

// Time of packet s of m spread evenly over [start, end].
inline std::int64_t timeOf(std::int64_t start, std::int64_t end, std::uint32_t s, std::uint32_t m) {
    if (m <= 1) return start;
    return start + std::int64_t((__int128(end - start) * s) / (m - 1));
}

} // namespace

SimResult withIpv6Nics(const SimResult& result, double share) {
    SimResult out = result;
    // The NICs of the first ceil(share x jobs) jobs (RoCE never crosses jobs, so never address families).
    const std::size_t jobs = std::size_t(std::ceil(share * double(out.truth.jobs.size()) - 1e-9));
    std::unordered_map<IpAddr, IpAddr, IpAddrHash> map;
    std::unordered_map<std::string, std::string> text;
    for (std::size_t j = 0; j < std::min(jobs, out.truth.jobs.size()); ++j)
        for (const std::string& gpu : out.truth.jobs[j].gpus) {
            const auto ip = IpAddr::parse(gpu);
            if (!ip || ip->v6) continue;
            IpAddr v6; // 10.a.b.c -> fd10::a:b:c
            v6.v6 = true;
            v6.bytes[0] = 0xfd;
            v6.bytes[1] = 0x10;
            for (int i = 0; i < 3; ++i) v6.bytes[std::size_t(11 + 2 * i)] = ip->bytes[std::size_t(13 + i)];
            map.emplace(*ip, v6);
            text.emplace(gpu, v6.toString());
        }
    for (Nic& nic : out.topology.nics) {
        auto it = map.find(nic.ip);
        if (it != map.end()) nic.ip = it->second;
    }
    out.topology.index();
    // RoCE records move to the new addresses (new endpoint ids); other traffic of those NICs (storage,
    // management) stays on their IPv4 addresses, as on a dual-stack NIC.
    FlowTable& f = out.flows;
    std::vector<EndpointId> moved(f.endpoints.size(), EndpointId(-1));
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (!f.isRoce(i)) continue;
        for (IdColumn* ids : {&f.src, &f.dst}) {
            const EndpointId id = (*ids)[i];
            if (moved[id] == EndpointId(-1)) {
                auto it = map.find(f.endpoints.at(id));
                moved[id] = it == map.end() ? id : f.endpoints.intern(it->second);
            }
            ids->set(i, moved[id]);
        }
    }
    // The truth names NICs by address.
    const auto fix = [&](std::string& s) {
        auto it = text.find(s);
        if (it != text.end()) s = it->second;
    };
    for (JobInfo& j : out.truth.jobs) {
        for (std::string& g : j.gpus) fix(g);
        for (auto& group : j.dpGroups)
            for (std::string& g : group) fix(g);
        for (auto& chain : j.ppChains)
            for (std::string& g : chain) fix(g);
        for (auto* list : {&j.findings, &j.anomalies})
            for (Finding& fi : *list) {
                fix(fi.ip);
                fix(fi.srcIp);
                fix(fi.dstIp);
                for (std::string& g : fi.group) fix(g);
            }
    }
    return out;
}

std::uint64_t pcapPacketCount(const SimResult& result, const PcapWriteOptions& options) {
    std::uint64_t total = 0;
    const FlowTable& f = result.flows;
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (f.isRoce(i)) {
            const std::uint64_t n = packetsOf(f.bytes[i], kRoceMtu);
            total += n + (n + std::uint64_t(options.ackEvery) - 1) / std::uint64_t(options.ackEvery);
        } else {
            total += packetsOf(f.bytes[i], kOtherMtu);
        }
    }
    return total;
}

PcapWriteStats writePcapCapture(const SimResult& result, const std::string& dir, const PcapWriteOptions& options) {
    if (options.ackEvery < 1) throw std::invalid_argument("ackEvery must be positive");
    const std::uint64_t estimate = pcapPacketCount(result, options);
    if (estimate > options.maxPackets)
        throw std::runtime_error("the capture would hold about " + std::to_string(estimate) +
                                 " packets, more than the budget of " + std::to_string(options.maxPackets) +
                                 " (one per 4096 bytes of RoCE traffic): use a smaller preset such as tiny");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw std::runtime_error(dir + ": cannot create the folder (" + ec.message() + ")");
    const fs::path base(dir);
    const std::string path = (base / "capture.pcap").string();
    const std::string tmp = path + ".tmp";

    const FlowTable& flows = result.flows;
    std::vector<std::uint32_t> order(flows.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return flows.startNs[a] < flows.startNs[b]; });

    PcapWriteStats stats;
    std::unordered_map<std::uint64_t, Qp> qps; // by hash of (src, dst, source port)
    std::vector<Active> active;                // RoCE records being written; slots reused
    std::vector<std::uint32_t> freeSlots;
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;

    auto hostTags = [&](const IpAddr& ip, bool& vlan, bool& qinq) {
        // A third of the hosts tag their frames with 802.1Q, a sixth with QinQ (by address, so stable per host).
        const std::uint64_t h = hashOf(ip, IpAddr{}, options.seed) % 6;
        vlan = h == 1 || h == 2;
        qinq = h == 3;
    };

    auto activate = [&](std::uint32_t rec) {
        const IpAddr& src = flows.endpoints.at(flows.src[rec]);
        const IpAddr& dst = flows.endpoints.at(flows.dst[rec]);
        const std::uint64_t key = hashOf(src, dst, flows.srcPort[rec]);
        auto [it, inserted] = qps.try_emplace(key);
        Qp& qp = it->second;
        if (inserted) {
            Rng r(streamSeed(options.seed, kPcapStream, key));
            qp.destQp = std::uint32_t(r.integer(0x100, 0xffffff));
            qp.requesterQp = std::uint32_t(r.integer(0x100, 0xffffff));
            qp.ackPort = std::uint16_t(r.integer(49152, 65535));
            // Start a quarter of the QPs just below the 24-bit wrap so the capture shows PSNs wrapping.
            qp.nextPsn = r.chance(0.25) ? std::uint32_t(0x1000000 - r.integer(1, 3000)) : std::uint32_t(r.integer(0, 0xffffff));
            qp.send = r.chance(0.3);
            hostTags(src, qp.vlan, qp.qinq);
            hostTags(dst, qp.peerVlan, qp.peerQinq);
        }
        Active a;
        a.record = rec;
        a.qp = &qp;
        a.psnBase = qp.nextPsn & 0xffffff;
        a.dataPackets = packetsOf(flows.bytes[rec], kRoceMtu);
        if ((a.psnBase + a.dataPackets) > 0xffffff) ++stats.psnWraps;
        qp.nextPsn = (a.psnBase + a.dataPackets) & 0xffffff;
        Rng r(streamSeed(options.seed, kPcapStream + 1, rec));
        if (a.dataPackets >= 8 && r.chance(options.retransmitRate)) {
            a.retransLen = std::uint32_t(r.integer(1, 4));
            a.retransAt = std::uint32_t(r.integer(1, a.dataPackets - a.retransLen - 1));
        }
        a.congested = a.dataPackets >= 4 && r.chance(options.cnpRate);
        std::uint32_t slot;
        if (!freeSlots.empty()) {
            slot = freeSlots.back();
            freeSlots.pop_back();
            active[slot] = a;
        } else {
            slot = std::uint32_t(active.size());
            active.push_back(a);
        }
        events.push(Event{flows.startNs[rec], slot, 0, kData, 0});
    };

    // Sequence position s of a record with a retransmission (j, k): 0 .. j+k-1, then j .. j+k-1 again, then on.
    auto dataIndex = [](const Active& a, std::uint32_t s) {
        if (a.retransLen == 0 || s < a.retransAt + a.retransLen) return s;
        return s - a.retransLen;
    };

    PcapOut out(tmp);
    Frame f;
    std::size_t next = 0; // next record (in start order) not yet scheduled
    try {
        while (next < order.size() || !events.empty()) {
            // Schedule every record starting no later than the earliest pending packet.
            while (next < order.size() && (events.empty() || flows.startNs[order[next]] <= events.top().t)) {
                const std::uint32_t rec = order[next++];
                if (flows.isRoce(rec))
                    activate(rec);
                else
                    events.push(Event{flows.startNs[rec], rec, 0, kOther, 0});
            }
            const Event e = events.top();
            events.pop();
            if (e.kind == kOther) {
                const std::uint32_t rec = e.slot;
                const IpAddr& src = flows.endpoints.at(flows.src[rec]);
                const IpAddr& dst = flows.endpoints.at(flows.dst[rec]);
                const std::uint32_t n = packetsOf(flows.bytes[rec], kOtherMtu);
                const std::uint64_t payload = payloadOf(std::max<std::uint64_t>(flows.bytes[rec], 1), kOtherMtu, e.seq, n);
                const bool tcp = flows.proto[rec] == kProtoTcp;
                const std::size_t l4 = (tcp ? 20 : 8) + payload;
                const std::size_t frameLen = f.ethIp(src, dst, false, false, flows.proto[rec], l4, 0);
                if (tcp) {
                    f.u16(flows.srcPort[rec]);
                    f.u16(flows.dstPort[rec]);
                    f.u32(1 + e.seq * std::uint32_t(kOtherMtu));
                    f.u32(1);
                    f.u16(0x5018); // data offset 5, ACK + PSH
                    f.u16(0xffff);
                    f.u32(0);
                } else {
                    f.udp(flows.srcPort[rec], flows.dstPort[rec], payload);
                }
                out.packet(e.t, f.b, f.n, frameLen);
                ++stats.packets;
                ++stats.otherPackets;
                if (src.v6) ++stats.ipv6Packets;
                if (e.seq + 1 < n)
                    events.push(
                        Event{timeOf(flows.startNs[rec], flows.end(rec), e.seq + 1, n), rec, e.seq + 1, kOther, 0});
                continue;
            }
            Active& a = active[e.slot];
            const std::uint32_t rec = a.record;
            const Qp& qp = *a.qp;
            const IpAddr& src = flows.endpoints.at(flows.src[rec]);
            const IpAddr& dst = flows.endpoints.at(flows.dst[rec]);
            const std::uint32_t total = a.dataPackets + a.retransLen;
            if (e.kind == kData) {
                const std::uint32_t d = dataIndex(a, e.seq);
                const std::uint32_t n = a.dataPackets;
                const std::uint64_t payload = payloadOf(flows.bytes[rec], kRoceMtu, d, n);
                std::uint8_t op;
                if (n == 1)
                    op = qp.send ? kSendOnly : kWriteOnly;
                else if (d == 0)
                    op = qp.send ? kSendFirst : kWriteFirst;
                else if (d + 1 == n)
                    op = qp.send ? kSendLast : kWriteLast;
                else
                    op = qp.send ? kSendMiddle : kWriteMiddle;
                const bool reth = op == kWriteFirst || op == kWriteOnly;
                const bool ackReq = (d + 1) % std::uint32_t(options.ackEvery) == 0 || d + 1 == n;
                const bool ce = a.congested && e.seq % 8 == 4;
                const std::size_t l4 = 8 + 12 + (reth ? 16 : 0) + payload + 4; // UDP, BTH, RETH, payload, ICRC
                const std::size_t frameLen = f.ethIp(src, dst, qp.vlan, qp.qinq, kProtoUdp, l4, ce ? 3 : 2);
                f.udp(flows.srcPort[rec], kRoceV2Port, l4 - 8);
                const std::uint32_t psn = (a.psnBase + d) & 0xffffff;
                f.bth(op, qp.destQp, psn, ackReq);
                if (reth) {
                    f.u32(0x00007f00); // virtual address (64 bits)
                    f.u32(std::uint32_t(rec) << 12);
                    f.u32(0x1234);     // remote key
                    f.u32(std::uint32_t(std::min<std::uint64_t>(flows.bytes[rec], 0xffffffffu)));
                }
                out.packet(e.t, f.b, f.n, frameLen);
                ++stats.packets;
                ++stats.dataPackets;
                if (qp.vlan || qp.qinq) ++stats.vlanFrames;
                if (src.v6) ++stats.ipv6Packets;
                if (e.seq >= a.retransAt + a.retransLen && e.seq < a.retransAt + 2 * a.retransLen && a.retransLen)
                    ++stats.retransmitted;
                if (ackReq) events.push(Event{e.t + kAckDelayNs, e.slot, e.seq, kAckPacket, psn});
                if (ce) events.push(Event{e.t + kAckDelayNs, e.slot, e.seq, kCnpPacket, 0});
                if (a.retransLen && e.seq + 1 == a.retransAt + a.retransLen) // the receiver saw a gap: NAK
                    events.push(Event{e.t + 1, e.slot, e.seq, kNakPacket, (a.psnBase + a.retransAt) & 0xffffff});
                if (e.seq + 1 < total) {
                    events.push(Event{timeOf(flows.startNs[rec], flows.end(rec), e.seq + 1, total), e.slot, e.seq + 1,
                                      kData, 0});
                } else {
                    // The last data packet: the slot is free once its ACK / CNP events (pushed above) are out.
                    events.push(Event{e.t + kAckDelayNs + 1, e.slot, e.seq, kRelease, 0});
                }
                continue;
            }
            if (e.kind == kRelease) {
                freeSlots.push_back(e.slot);
                continue;
            }
            // ACK / NAK / CNP: from the receiver back to the sender's QP.
            const bool cnp = e.kind == kCnpPacket;
            const std::size_t l4 = 8 + 12 + (cnp ? 16 : 4) + 4; // UDP, BTH, AETH or CNP padding, ICRC
            const std::size_t frameLen = f.ethIp(dst, src, qp.peerVlan, qp.peerQinq, kProtoUdp, l4, 2);
            f.udp(qp.ackPort, kRoceV2Port, l4 - 8);
            f.bth(cnp ? kCnp : kAck, qp.requesterQp, cnp ? 0 : e.psn, false);
            if (cnp) {
                for (int i = 0; i < 16; ++i) f.u8(0);
            } else {
                f.u8(e.kind == kNakPacket ? 0x60 : 0x1f); // AETH syndrome: NAK (PSN sequence error) or ACK
                f.u24(e.seq & 0xffffff);                  // MSN
            }
            for (int i = 0; i < 4; ++i) f.u8(0); // ICRC (not computed)
            out.packet(e.t, f.b, f.n, frameLen);
            ++stats.packets;
            if (qp.peerVlan || qp.peerQinq) ++stats.vlanFrames;
            if (e.kind == kAckPacket) ++stats.acks;
            if (e.kind == kNakPacket) ++stats.naks;
            if (cnp) ++stats.cnps;
        }
        out.finish();
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
    fs::rename(tmp, path, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw std::runtime_error(path + ": cannot replace the file");
    }
    // A flows.csv left from an earlier run would be read along with the capture.
    fs::remove(base / "flows.csv", ec);
    fs::remove(base / "flows.csv.gz", ec);
    writeTopologyJson(result.topology, (base / "topology.json").string());
    writeJsonFile(truthToJson(result.truth), (base / "truth.json").string());
    return stats;
}

} // namespace prism::sim
