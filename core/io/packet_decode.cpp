// decodePacket: one captured frame to addresses, ports and the RoCEv2 BTH; PacketFlowBuilder: packets to
// flow records. Every read is bounds-checked against the captured length (snap lengths cut headers).
#include "io/packet_decode.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace prism {

namespace {

inline std::uint16_t be16(const std::uint8_t* p) { return std::uint16_t((p[0] << 8) | p[1]); }
inline std::uint32_t be24(const std::uint8_t* p) { return (std::uint32_t(p[0]) << 16) | (std::uint32_t(p[1]) << 8) | p[2]; }

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherIpv6 = 0x86dd;

inline bool isVlanTag(std::uint16_t type) {
    return type == 0x8100 || type == 0x88a8 || type == 0x9100 || type == 0x9200;
}

// BTH opcodes of the RC / UC / XRC transports (low five bits; the top three name the transport).
enum : std::uint8_t {
    kSendLastImm = 0x03, kSendOnlyImm = 0x05, kWriteFirst = 0x06, kWriteLastImm = 0x09, kWriteOnly = 0x0a,
    kWriteOnlyImm = 0x0b, kReadRequest = 0x0c, kReadRespFirst = 0x0d, kReadRespLast = 0x0f, kReadRespOnly = 0x10,
    kAcknowledge = 0x11, kAtomicAcknowledge = 0x12,
};
constexpr std::uint8_t kOpCnp = 0x81;

void decodeBth(const std::uint8_t* p, std::size_t len, DecodedPacket& out) {
    constexpr std::size_t kBth = 12;
    if (len < kBth) { // cut BTH: a UDP packet to 4791, not decoded as RoCE
        out.cut = "the BTH (12 bytes after the UDP header to port 4791) is cut";
        return;
    }
    out.roce = true;
    out.opcode = p[0];
    out.destQp = be24(p + 5);
    out.psn = be24(p + 9);
    if (out.opcode == kOpCnp) {
        out.cnp = true;
        return;
    }
    const std::uint8_t transport = out.opcode >> 5;
    if (transport != 0 && transport != 1 && transport != 5) return; // RC, UC, XRC; UD / RD carry no RETH / AETH
    const std::uint8_t op = out.opcode & 0x1f;
    out.midMessage = op == 0x00 || op == 0x01 || op == kWriteFirst || op == 0x07 || op == kReadRespFirst || op == 0x0e;
    out.reth = op == kWriteFirst || op == kWriteOnly || op == kWriteOnlyImm || op == kReadRequest;
    out.aeth = op == kReadRespFirst || op == kReadRespLast || op == kReadRespOnly || op == kAcknowledge ||
               op == kAtomicAcknowledge;
    out.immDt = op == kSendLastImm || op == kSendOnlyImm || op == kWriteLastImm || op == kWriteOnlyImm;
    if (op == kAcknowledge || op == kAtomicAcknowledge) {
        // AETH syndrome bits 7..5: 000 ACK, 001 RNR NAK, 011 NAK. An AETH cut by the snap length reads as an ACK.
        std::size_t aethAt = kBth + (transport == 5 ? 4 : 0); // XRC: the XRCETH comes first
        const std::uint8_t kind = len > aethAt ? std::uint8_t(p[aethAt] >> 5) : 0;
        out.nak = kind == 1 || kind == 3;
        out.ack = !out.nak;
    }
}

// The transport header at p (len bytes captured) of an IP packet whose payload is `ipPayload` bytes long.
void decodeTransport(const std::uint8_t* p, std::size_t len, std::size_t ipPayload, DecodedPacket& out) {
    if (out.proto == kProtoUdp) {
        if (len < 8) {
            out.cut = "the UDP header is cut";
            return;
        }
        out.srcPort = be16(p);
        out.dstPort = be16(p + 2);
        const std::size_t udpLen = be16(p + 4);
        const std::size_t bodyLen = udpLen >= 8 ? std::min<std::size_t>(udpLen, ipPayload) - 8 : ipPayload - 8;
        out.payload = p + 8;
        out.payloadLen = std::min(bodyLen, len - 8);
        if (out.dstPort == kRoceV2Port) decodeBth(out.payload, out.payloadLen, out);
    } else if (out.proto == kProtoTcp) {
        if (len < 4) {
            out.cut = "the TCP ports are cut";
            return;
        }
        out.srcPort = be16(p);
        out.dstPort = be16(p + 2);
        if (len < 20) return;
        const std::size_t hdr = std::size_t(p[12] >> 4) * 4;
        if (hdr < 20 || hdr > len) return;
        out.payload = p + hdr;
        out.payloadLen = len - hdr; // len never exceeds the IP payload
    }
}

bool decodeIpv4(const std::uint8_t* p, std::size_t len, std::size_t wireLen, DecodedPacket& out) {
    if (len < 20) {
        out.cut = "the IPv4 header is cut";
        return false;
    }
    if ((p[0] >> 4) != 4) {
        out.cut = "an IPv4 EtherType with an IP version other than 4";
        return false;
    }
    const std::size_t ihl = std::size_t(p[0] & 0x0f) * 4;
    if (ihl < 20 || ihl > len) { // options cut: the header is incomplete
        out.cut = ihl < 20 ? "the IPv4 header length is below 20 bytes" : "the IPv4 options are cut";
        return false;
    }
    std::size_t total = be16(p + 2);
    // Total length 0 (TSO) or beyond the frame: fall back on what the frame holds.
    if (total < ihl || total > wireLen) total = wireLen;
    out.wireBytes = std::uint32_t(total);
    out.ecnCe = (p[1] & 3) == 3;
    out.proto = p[9];
    out.src = IpAddr::v4(std::uint32_t(be16(p + 12)) << 16 | be16(p + 14));
    out.dst = IpAddr::v4(std::uint32_t(be16(p + 16)) << 16 | be16(p + 18));
    const std::uint16_t fragOffset = be16(p + 6) & 0x1fff;
    if (fragOffset != 0) {
        out.fragment = true;
        return true;
    }
    decodeTransport(p + ihl, std::min(len, total) - ihl, total - ihl, out);
    return true;
}

bool decodeIpv6(const std::uint8_t* p, std::size_t len, std::size_t wireLen, DecodedPacket& out) {
    if (len < 40) {
        out.cut = "the IPv6 header is cut";
        return false;
    }
    if ((p[0] >> 4) != 6) {
        out.cut = "an IPv6 EtherType with an IP version other than 6";
        return false;
    }
    std::size_t total = 40 + std::size_t(be16(p + 4));
    if (total == 40 || total > wireLen) total = wireLen; // jumbogram or bogus: what the frame holds
    out.wireBytes = std::uint32_t(total);
    out.ecnCe = ((p[1] >> 4) & 3) == 3; // traffic class bits 1..0 sit at bits 5..4 of byte 1
    out.src.v6 = out.dst.v6 = true;
    std::memcpy(out.src.bytes.data(), p + 8, 16);
    std::memcpy(out.dst.bytes.data(), p + 24, 16);
    const std::size_t end = std::min(len, total);
    std::size_t off = 40;
    std::uint8_t next = p[6];
    // Extension headers: hop-by-hop (0), routing (43), destination options (60), fragment (44), AH (51).
    for (int guard = 0; guard < 16; ++guard) {
        if (next != 0 && next != 43 && next != 60 && next != 44 && next != 51) break;
        if (off + 8 > end) { // cut inside the extension headers: the IP header stands, the transport is unknown
            out.proto = next;
            out.cut = "the IPv6 extension headers are cut";
            return true;
        }
        const std::uint8_t* h = p + off;
        std::size_t hlen;
        if (next == 44) {
            hlen = 8;
            if ((be16(h + 2) & 0xfff8) != 0) { // not the first fragment
                out.proto = h[0];
                out.fragment = true;
                return true;
            }
        } else if (next == 51) {
            hlen = (std::size_t(h[1]) + 2) * 4;
        } else {
            hlen = (std::size_t(h[1]) + 1) * 8;
        }
        next = h[0];
        off += hlen;
    }
    out.proto = next;
    if (off > end) {
        out.cut = "the IPv6 extension headers are cut";
        return true;
    }
    decodeTransport(p + off, end - off, total - std::min(off, total), out);
    return true;
}

bool decodeIp(const std::uint8_t* p, std::size_t len, std::size_t wireLen, DecodedPacket& out) {
    if (len < 1) {
        out.cut = "the IP header is cut";
        return false;
    }
    const int version = p[0] >> 4;
    if (version == 4) return decodeIpv4(p, len, wireLen, out);
    if (version == 6) return decodeIpv6(p, len, wireLen, out);
    return false;
}

bool decodeEtherType(std::uint16_t type, const std::uint8_t* p, std::size_t len, std::size_t wireLen,
                     DecodedPacket& out) {
    if (type == kEtherIpv4) return decodeIpv4(p, len, wireLen, out);
    if (type == kEtherIpv6) return decodeIpv6(p, len, wireLen, out);
    return false;
}

} // namespace

bool linkTypeSupported(int linkType) {
    switch (linkType) {
    case kLinkEthernet:
    case kLinkRaw:
    case kLinkRawDlt:
    case 14: // DLT_RAW on OpenBSD
    case kLinkIpv4:
    case kLinkIpv6:
    case kLinkLinuxSll:
    case kLinkLinuxSll2:
        return true;
    default:
        return false;
    }
}

bool decodePacket(const std::uint8_t* data, std::size_t capLen, std::size_t origLen, int linkType,
                  DecodedPacket& out) {
    out = DecodedPacket{};
    origLen = std::max(origLen, capLen);
    std::size_t off = 0;
    std::uint16_t type = 0;
    switch (linkType) {
    case kLinkEthernet:
        if (capLen < 14) {
            out.cut = "the Ethernet header is cut";
            return false;
        }
        type = be16(data + 12);
        off = 14;
        break;
    case kLinkLinuxSll: // 16 bytes: packet type, ARPHRD, address length, 8 address bytes, protocol
        if (capLen < 16) {
            out.cut = "the Linux cooked header is cut";
            return false;
        }
        type = be16(data + 14);
        off = 16;
        break;
    case kLinkLinuxSll2: // 20 bytes, the protocol first
        if (capLen < 20) {
            out.cut = "the Linux cooked (v2) header is cut";
            return false;
        }
        type = be16(data);
        off = 20;
        break;
    case kLinkRaw:
    case kLinkRawDlt:
    case 14:
    case kLinkIpv4:
    case kLinkIpv6:
        return decodeIp(data, capLen, origLen, out);
    default:
        return false;
    }
    // 802.1Q, QinQ (802.1ad 0x88a8 and the older 0x9100 / 0x9200): 4 bytes each, the next type last.
    while (isVlanTag(type)) {
        if (capLen < off + 4) {
            out.cut = "the VLAN tag is cut";
            return false;
        }
        out.vlan = true;
        type = be16(data + off + 2);
        off += 4;
    }
    return decodeEtherType(type, data + off, capLen - off, origLen - off, out);
}

// ---------------------------------------------------------------------------------------------------------------
// PacketFlowBuilder

namespace {

// A packet's weight as a 32-bit count (congestion counts are 32-bit columns): saturating; and a count added to.
std::uint32_t counted(std::uint64_t weight) { return std::uint32_t(std::min<std::uint64_t>(weight, UINT32_MAX)); }
void addCount(std::uint32_t& count, std::uint32_t n) { count = counted(std::uint64_t(count) + n); }

// The flow key: both addresses (16 bytes each, IPv4 mapped) and one word of ports, protocol and QP.
struct FlowKey {
    std::uint64_t w[5];
    bool operator==(const FlowKey& o) const {
        return w[0] == o.w[0] && w[1] == o.w[1] && w[2] == o.w[2] && w[3] == o.w[3] && w[4] == o.w[4];
    }
};

inline std::uint64_t mix(std::uint64_t h) {
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

inline std::uint64_t hashKey(const FlowKey& k) {
    std::uint64_t h = k.w[0] * 0x9e3779b97f4a7c15ull;
    h = (h ^ k.w[1]) * 0x9e3779b97f4a7c15ull;
    h = (h ^ k.w[2]) * 0x9e3779b97f4a7c15ull;
    h = (h ^ k.w[3]) * 0x9e3779b97f4a7c15ull;
    h = (h ^ k.w[4]) * 0x9e3779b97f4a7c15ull;
    return mix(h);
}

struct PairKey {
    std::uint64_t w[4];
    bool operator==(const PairKey& o) const {
        return w[0] == o.w[0] && w[1] == o.w[1] && w[2] == o.w[2] && w[3] == o.w[3];
    }
};
struct PairKeyHash {
    std::size_t operator()(const PairKey& k) const noexcept {
        return mix((k.w[0] * 31 + k.w[1]) * 0x9e3779b97f4a7c15ull + k.w[2] * 17 + k.w[3]);
    }
};

inline void addrWords(const IpAddr& a, std::uint64_t& hi, std::uint64_t& lo) {
    std::memcpy(&hi, a.bytes.data(), 8);
    std::memcpy(&lo, a.bytes.data() + 8, 8);
}

constexpr std::uint32_t kUnknownQp = 0xffffffff;

// The RoCE data flows of one (data source, data destination) pair, for the CNPs sent back to the source. A CNP
// is addressed to the sender's QP, which data packets do not carry; ACKs do (to the same QP), so an ACK whose
// PSN matches an open flow's teaches that flow its sender QP. A CNP goes to the flow (or the last record) of
// its QP; failing that, to the pair's most recently opened flow, else the pair's last record.
struct PairTarget {
    std::int32_t flow = -1;                                   // most recently opened flow still open, or -1
    std::int64_t row = -1;                                    // row of the pair's last record, or -1
    std::vector<std::int32_t> open;                           // open data flows (slab indices)
    std::vector<std::pair<std::uint32_t, std::int64_t>> qpRows; // sender QP -> row of its last record
};

struct Flow {
    FlowKey key;
    EndpointId src, dst;
    std::int64_t start, last;
    std::uint64_t bytes, packets;
    std::uint32_t highPsn;
    std::uint32_t retransmits, cnps, ecnCe;
    PairTarget* pair; // RoCE data flows only
    std::uint32_t senderQp; // RoCE: the QP this flow's ACKs and CNPs are addressed to (kUnknownQp until an ACK)
    bool roce;
    bool midMessage;  // the last packet was a RoCE FIRST / MIDDLE: the message goes on
    bool live;
};

} // namespace

struct PacketFlowBuilder::Impl {
    FlowBuilderOptions options;
    PacketFlowStats stats;
    std::vector<Flow> flows;          // slab of flows; dead entries are on the free list
    std::vector<std::int32_t> free;   // free slab indices
    std::vector<std::int32_t> slots;  // open addressing (linear probing): slab index or -1
    std::size_t mask = 0;
    std::size_t liveCount = 0;
    std::unordered_map<PairKey, PairTarget, PairKeyHash> pairs;
    std::int64_t latestNs = INT64_MIN;
    std::int64_t lastSweepNs = INT64_MIN;
    std::uint64_t packetsSinceSweep = 0;

    Impl() { rebuild(1024); }

    void rebuild(std::size_t capacity) {
        slots.assign(capacity, -1);
        mask = capacity - 1;
        for (std::size_t i = 0; i < flows.size(); ++i)
            if (flows[i].live) insertSlot(hashKey(flows[i].key), std::int32_t(i));
    }
    void insertSlot(std::uint64_t h, std::int32_t index) {
        std::size_t s = h & mask;
        while (slots[s] >= 0) s = (s + 1) & mask;
        slots[s] = index;
    }

    void close(Flow& f, FlowTable& out) {
        const std::int64_t row = std::int64_t(out.size());
        out.append(f.start, f.last, f.src, f.dst, std::uint16_t(f.key.w[4]), std::uint16_t(f.key.w[4] >> 16),
                   std::uint8_t(f.key.w[4] >> 56), f.bytes, f.packets, f.retransmits, f.cnps, f.ecnCe);
        ++stats.records;
        if (!f.pair) return;
        if (f.pair->flow == std::int32_t(&f - flows.data())) f.pair->flow = -1;
        f.pair->row = row;
        if (f.senderQp != kUnknownQp) {
            auto& rows = f.pair->qpRows;
            auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == f.senderQp; });
            if (it == rows.end())
                rows.emplace_back(f.senderQp, row);
            else
                it->second = row;
        }
    }

    // A flow closed for good (not restarted): off its pair's open list.
    void retire(Flow& f) {
        f.live = false;
        if (!f.pair) return;
        auto& open = f.pair->open;
        const auto it = std::find(open.begin(), open.end(), std::int32_t(&f - flows.data()));
        if (it != open.end()) {
            *it = open.back();
            open.pop_back();
        }
    }

    // Starts (or restarts, same slab entry) a flow with its first packet.
    void open(Flow& f, std::int32_t index, const DecodedPacket& p, std::int64_t t, std::uint64_t weight,
              FlowTable& out, bool fresh) {
        if (fresh) {
            f.src = out.endpoints.intern(p.src);
            f.dst = out.endpoints.intern(p.dst);
            f.roce = p.roce;
            f.pair = nullptr;
            f.senderQp = kUnknownQp;
            f.live = true;
            if (p.roce) {
                PairKey pk;
                addrWords(p.src, pk.w[0], pk.w[1]);
                addrWords(p.dst, pk.w[2], pk.w[3]);
                f.pair = &pairs[pk];
                f.pair->open.push_back(index);
            }
        }
        if (f.pair) f.pair->flow = index;
        f.start = f.last = t;
        f.bytes = std::uint64_t(p.wireBytes) * weight;
        f.packets = weight;
        f.highPsn = p.psn;
        f.retransmits = 0;
        f.cnps = 0;
        f.ecnCe = p.ecnCe ? counted(weight) : 0;
        f.midMessage = p.midMessage;
    }

    // Closes the flows idle since before `now` and compacts the table (memory stays bounded by the open flows).
    void sweep(std::int64_t now, FlowTable& out) {
        for (std::size_t i = 0; i < flows.size(); ++i) {
            Flow& f = flows[i];
            if (f.live && now - f.last > options.idleTimeoutNs) {
                close(f, out);
                retire(f);
                free.push_back(std::int32_t(i));
                --liveCount;
            }
        }
        std::size_t capacity = 1024;
        while (capacity < liveCount * 2 + 2) capacity *= 2;
        rebuild(capacity);
        lastSweepNs = now;
        packetsSinceSweep = 0;
    }

    // The pair of data flows an ACK, NAK or CNP (sent from the data's receiver back to its sender) belongs to.
    PairTarget* pairOfReply(const DecodedPacket& p) {
        PairKey pk;
        addrWords(p.dst, pk.w[0], pk.w[1]);
        addrWords(p.src, pk.w[2], pk.w[3]);
        auto it = pairs.find(pk);
        return it == pairs.end() ? nullptr : &it->second;
    }

    // An ACK / NAK names the sender's QP and a PSN it sent: the open flow of the pair that sent that PSN last
    // (the smallest distance back from its highest PSN) learns its sender QP.
    void learnSenderQp(const DecodedPacket& p) {
        PairTarget* pair = pairOfReply(p);
        if (!pair) return;
        std::int32_t best = -1;
        std::uint32_t bestDistance = 0x800000;
        for (std::int32_t i : pair->open) {
            const Flow& f = flows[std::size_t(i)];
            if (f.senderQp == p.destQp) return; // known
            if (f.senderQp != kUnknownQp) continue;
            const std::uint32_t distance = (f.highPsn - p.psn) & 0xffffff;
            if (distance < bestDistance) {
                bestDistance = distance;
                best = i;
            }
        }
        if (best >= 0) flows[std::size_t(best)].senderQp = p.destQp;
    }

    // A CNP counts `weight` (a sampled one stands for as many as its sampling rate says, as its bytes do).
    void countCnp(const DecodedPacket& p, std::uint32_t weight, FlowTable& out) {
        stats.cnps += weight;
        // The CNP goes from the congested receiver to the sender: it throttles a data flow dst -> src.
        PairTarget* pair = pairOfReply(p);
        if (!pair) {
            ++stats.cnpsUnattributed;
            return;
        }
        for (std::int32_t i : pair->open)
            if (flows[std::size_t(i)].senderQp == p.destQp) {
                addCount(flows[std::size_t(i)].cnps, weight);
                return;
            }
        for (const auto& [qp, row] : pair->qpRows)
            if (qp == p.destQp && std::size_t(row) < out.size()) {
                addCount(out.cnps[std::size_t(row)], weight);
                return;
            }
        ++stats.cnpsByPair; // no ACK taught the QP: the pair's latest flow
        if (pair->flow >= 0) addCount(flows[std::size_t(pair->flow)].cnps, weight);
        else if (pair->row >= 0 && std::size_t(pair->row) < out.size())
            addCount(out.cnps[std::size_t(pair->row)], weight);
        else
            ++stats.cnpsUnattributed;
    }

    void add(const DecodedPacket& p, std::int64_t t, std::uint64_t weight, FlowTable& out) {
        if (p.roce && !p.roceData()) {
            // ACK / NAK / CNP: no record of their own (they would look like small reverse-direction flows);
            // CNPs are counted on the flow they throttle.
            if (p.cnp) {
                countCnp(p, counted(weight), out);
                return;
            }
            ++(p.nak ? stats.roceNaks : stats.roceAcks);
            learnSenderQp(p);
            return;
        }
        if (p.roce)
            ++stats.roceData;
        else
            ++stats.otherPackets;
        latestNs = std::max(latestNs, t);

        FlowKey key;
        addrWords(p.src, key.w[0], key.w[1]);
        addrWords(p.dst, key.w[2], key.w[3]);
        key.w[4] = std::uint64_t(p.srcPort) | std::uint64_t(p.dstPort) << 16 |
                   std::uint64_t(p.roce ? p.destQp : 0) << 32 | std::uint64_t(p.proto) << 56;
        const std::uint64_t h = hashKey(key);
        std::size_t s = h & mask;
        while (slots[s] >= 0) {
            const std::int32_t index = slots[s];
            Flow& f = flows[std::size_t(index)];
            if (f.key == key) {
                const std::int64_t idle =
                    f.roce && !f.midMessage ? options.messageGapNs : options.idleTimeoutNs;
                if (t - f.last > idle || t - f.start >= options.activeTimeoutNs) {
                    close(f, out);
                    open(f, index, p, t, weight, out, false);
                    return;
                }
                f.start = std::min(f.start, t);
                f.last = std::max(f.last, t);
                f.bytes += std::uint64_t(p.wireBytes) * weight;
                f.packets += weight;
                if (p.ecnCe) addCount(f.ecnCe, counted(weight));
                if (t >= f.last) f.midMessage = p.midMessage;
                if (f.roce) {
                    // Serial arithmetic on 24-bit PSNs: ahead when the difference is in 1 .. 2^23 - 1,
                    // so a wrap from 0xffffff to 0 moves forward; anything else was sent before.
                    const std::uint32_t diff = (p.psn - f.highPsn) & 0xffffff;
                    if (diff != 0 && diff < 0x800000) {
                        f.highPsn = p.psn;
                    } else {
                        ++f.retransmits;
                        ++stats.retransmits;
                    }
                }
                return;
            }
            s = (s + 1) & mask;
        }
        // A new flow.
        std::int32_t index;
        if (!free.empty()) {
            index = free.back();
            free.pop_back();
        } else {
            index = std::int32_t(flows.size());
            flows.emplace_back();
        }
        Flow& f = flows[std::size_t(index)];
        f.key = key;
        open(f, index, p, t, weight, out, true);
        slots[s] = index;
        ++liveCount;
        if (liveCount * 2 > slots.size()) rebuild(slots.size() * 2);
        // Now and then (and only when time moved on by an idle timeout) close what went silent.
        if (++packetsSinceSweep >= 65536 &&
            (lastSweepNs == INT64_MIN || latestNs - lastSweepNs > options.idleTimeoutNs)) // no sweep yet: no overflow
            sweep(latestNs, out);
    }
};

PacketFlowBuilder::PacketFlowBuilder(FlowBuilderOptions options) : m_impl(new Impl) {
    if (options.idleTimeoutNs <= 0) options.idleTimeoutNs = kDefaultIdleTimeoutNs;
    if (options.activeTimeoutNs <= 0) options.activeTimeoutNs = kDefaultActiveTimeoutNs;
    if (options.messageGapNs <= 0) options.messageGapNs = kDefaultMessageGapNs;
    options.messageGapNs = std::min(options.messageGapNs, options.idleTimeoutNs);
    m_impl->options = options;
}

PacketFlowBuilder::~PacketFlowBuilder() { delete m_impl; }

void PacketFlowBuilder::add(const DecodedPacket& packet, std::int64_t timeNs, std::uint64_t weight, FlowTable& out) {
    m_impl->add(packet, timeNs, weight, out);
}

void PacketFlowBuilder::finish(FlowTable& out) {
    for (Flow& f : m_impl->flows)
        if (f.live) {
            m_impl->close(f, out);
            m_impl->retire(f);
        }
    m_impl->flows.clear();
    m_impl->free.clear();
    m_impl->liveCount = 0;
    m_impl->rebuild(1024);
}

const FlowBuilderOptions& PacketFlowBuilder::options() const { return m_impl->options; }
const PacketFlowStats& PacketFlowBuilder::stats() const { return m_impl->stats; }
std::size_t PacketFlowBuilder::openFlows() const { return m_impl->liveCount; }

} // namespace prism
