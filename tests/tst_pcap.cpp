// Packet captures: decodePacket on frames built here (VLAN, QinQ, IPv6 extension headers, Linux cooked, raw
// IP, cut at every length), the packet flow builder (PSN wrap, retransmissions, CNPs, ECN-CE, ACKs, timeouts),
// readPcap on malformed files (each error names the file and the packet), and the simulator's pcap: decoded
// packet by packet as tshark decodes it, and analyzed to what the same capture's flows.csv gives.
#include "test_util.h"
#include "io/capture.h"
#include "io/packet_decode.h"
#include "io/pcap_reader.h"
#include "analysis/pipeline.h"

#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <pcap/pcap.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace prism;
using namespace prism::test;

namespace {

using Bytes = std::vector<std::uint8_t>;

void put16(Bytes& b, unsigned v) {
    b.push_back(std::uint8_t(v >> 8));
    b.push_back(std::uint8_t(v));
}
void put32(Bytes& b, std::uint32_t v) {
    put16(b, v >> 16);
    put16(b, v & 0xffff);
}
void putLe32(Bytes& b, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(std::uint8_t(v >> (8 * i)));
}
void append(Bytes& b, const Bytes& more) { b.insert(b.end(), more.begin(), more.end()); }

// BTH: opcode, flags, partition key, reserved, destination QP (24 bits), ack-request + reserved, PSN (24 bits).
Bytes bth(std::uint8_t opcode, std::uint32_t qp, std::uint32_t psn) {
    Bytes b{opcode, 0x40};
    put16(b, 0xffff);
    put32(b, qp & 0xffffff);
    put32(b, psn & 0xffffff);
    return b;
}

Bytes udp(std::uint16_t sport, std::uint16_t dport, const Bytes& payload) {
    Bytes b;
    put16(b, sport);
    put16(b, dport);
    put16(b, unsigned(8 + payload.size()));
    put16(b, 0);
    append(b, payload);
    return b;
}

Bytes ipv4(std::uint32_t src, std::uint32_t dst, std::uint8_t proto, const Bytes& payload, std::uint8_t tos = 0,
           int optionWords = 0, unsigned fragOffset = 0) {
    Bytes b{std::uint8_t(0x45 + optionWords), tos};
    put16(b, unsigned(20 + 4 * optionWords + payload.size()));
    put16(b, 0x1234);
    put16(b, fragOffset);
    b.push_back(64);
    b.push_back(proto);
    put16(b, 0);
    put32(b, src);
    put32(b, dst);
    for (int i = 0; i < optionWords; ++i) put32(b, 0x01010101); // NOPs
    append(b, payload);
    return b;
}

// IPv6 with the extension headers `ext` (each {type, length in bytes}), the last one followed by `proto`.
Bytes ipv6(std::uint8_t srcLast, std::uint8_t dstLast, std::uint8_t proto, const Bytes& payload,
           const std::vector<std::pair<std::uint8_t, std::size_t>>& ext = {}, std::uint8_t trafficClass = 0) {
    Bytes body;
    for (std::size_t i = 0; i < ext.size(); ++i) {
        const std::uint8_t next = i + 1 < ext.size() ? ext[i + 1].first : proto;
        const std::size_t len = ext[i].second;
        Bytes h(len, 0);
        h[0] = next;
        h[1] = ext[i].first == 44 ? 0 : std::uint8_t(len / 8 - 1);
        append(body, h);
    }
    append(body, payload);
    Bytes b{std::uint8_t(0x60 | (trafficClass >> 4)), std::uint8_t(trafficClass << 4), 0, 0};
    put16(b, unsigned(body.size()));
    b.push_back(ext.empty() ? proto : ext[0].first);
    b.push_back(64);
    Bytes src(16, 0), dst(16, 0);
    src[0] = dst[0] = 0xfd;
    src[15] = srcLast;
    dst[15] = dstLast;
    append(b, src);
    append(b, dst);
    append(b, body);
    return b;
}

// Ethernet with VLAN tags (TPIDs in order), then `type`.
Bytes ethernet(std::uint16_t type, const Bytes& payload, const std::vector<std::uint16_t>& tags = {}) {
    Bytes b{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};
    for (std::uint16_t tpid : tags) {
        put16(b, tpid);
        put16(b, 100); // VLAN id 100
    }
    put16(b, type);
    append(b, payload);
    return b;
}

constexpr std::uint32_t kA = 0x0a000001; // 10.0.0.1
constexpr std::uint32_t kB = 0x0a000102; // 10.0.1.2

Bytes roceFrame(std::uint8_t opcode, std::uint32_t qp, std::uint32_t psn, std::size_t payloadBytes = 64,
                std::uint8_t tos = 0x02, std::uint32_t src = kA, std::uint32_t dst = kB) {
    Bytes payload = bth(opcode, qp, psn);
    payload.resize(payload.size() + payloadBytes, 0xab);
    return ethernet(0x0800, ipv4(src, dst, 17, udp(50000, 4791, payload), tos));
}

// A pcap file: nanosecond magic, little endian, the given link type, then (time, frame, original length) records.
struct Packet {
    std::int64_t ns;
    Bytes frame;
    std::size_t origLen = 0; // 0: the frame's length
};

// Microsecond files store ns / 1000; a big-endian file has every header field byte-swapped.
std::string pcapFile(int linkType, const std::vector<Packet>& packets, std::uint32_t snaplen = 65535,
                     bool micro = false, bool bigEndian = false) {
    Bytes b;
    const auto word = [&](std::uint32_t v) { bigEndian ? put32(b, v) : putLe32(b, v); };
    const auto half = [&](unsigned v) { bigEndian ? put16(b, v) : (void)(b.push_back(std::uint8_t(v)), b.push_back(0)); };
    word(micro ? 0xa1b2c3d4 : 0xa1b23c4d);
    half(2);
    half(4);
    word(0);
    word(0);
    word(snaplen);
    word(std::uint32_t(linkType));
    for (const Packet& p : packets) {
        const std::size_t cap = std::min<std::size_t>(p.frame.size(), snaplen);
        word(std::uint32_t(p.ns / 1'000'000'000));
        word(std::uint32_t(p.ns % 1'000'000'000 / (micro ? 1000 : 1)));
        word(std::uint32_t(cap));
        word(std::uint32_t(p.origLen ? p.origLen : p.frame.size()));
        b.insert(b.end(), p.frame.begin(), p.frame.begin() + std::ptrdiff_t(cap));
    }
    return std::string(b.begin(), b.end());
}

// The message of the InputError readPcap throws on `file`, or "no error".
std::string readError(const std::string& file, const PcapReadOptions& options = {}) {
    LoadDiagnostics diag;
    try {
        readPcap(file, options, diag);
    } catch (const InputError& e) {
        return e.what();
    }
    return "no error";
}

DecodedPacket decode(const Bytes& frame, int linkType = kLinkEthernet, std::size_t origLen = 0) {
    DecodedPacket p;
    decodePacket(frame.data(), frame.size(), origLen ? origLen : frame.size(), linkType, p);
    return p;
}

std::string placeOf(const Finding& f) {
    return f.kind + " " + f.ip + " " + f.srcIp + ">" + f.dstIp + " " + f.switchName + " stage " +
           std::to_string(f.stage) + " steps " + std::to_string(f.firstStep) + "-" + std::to_string(f.lastStep);
}

// What the equivalence test compares: per job its GPUs, shape, step count and findings (kind and place).
std::vector<std::string> outline(const Report& r) {
    std::vector<std::string> out;
    for (const JobInfo& j : r.jobs) {
        std::vector<std::string> gpus = j.gpus;
        std::sort(gpus.begin(), gpus.end());
        std::string line = "gpus";
        for (const auto& g : gpus) line += " " + g;
        line += " tp " + std::to_string(j.tp) + " pp " + std::to_string(j.pp) + " dp " + std::to_string(j.dp) +
                " steps " + std::to_string(j.steps.size());
        out.push_back(line);
        std::vector<std::string> places;
        for (const Finding& f : j.findings) places.push_back("  " + placeOf(f));
        std::sort(places.begin(), places.end());
        out.insert(out.end(), places.begin(), places.end());
    }
    return out;
}

// A preset with its transfers made `shrink` times smaller, so that its pcap stays small (a packet per 4 KiB).
sim::SimConfig smallConfig(const char* preset, int seed, int shrink) {
    sim::SimConfig c = presetConfig(preset, seed);
    for (sim::JobSpec& j : c.jobs) {
        j.activationBytes /= std::uint64_t(shrink);
        j.gradientBytes /= std::uint64_t(shrink);
    }
    return c;
}

} // namespace

class TestPcap : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::string path(const char* name) const { return (m_dir.path() + "/" + name).toStdString(); }

private slots:
    // ---- decodePacket -------------------------------------------------------------------------------------

    void aRoceWriteFirstOverIpv4DecodesItsBthAndRethAndLength() {
        const Bytes frame = roceFrame(0x06, 0x012345, 0xabcdef, 100, 0x03);
        const DecodedPacket p = decode(frame);
        QCOMPARE(p.src, IpAddr::v4(kA));
        QCOMPARE(p.dst, IpAddr::v4(kB));
        QCOMPARE(p.srcPort, 50000);
        QCOMPARE(p.dstPort, 4791);
        QCOMPARE(p.proto, 17);
        QVERIFY(p.roce && p.roceData() && p.reth && !p.aeth && !p.immDt);
        QCOMPARE(p.opcode, 0x06);
        QCOMPARE(p.destQp, 0x012345u);
        QCOMPARE(p.psn, 0xabcdefu);
        QVERIFY(p.ecnCe);
        QCOMPARE(std::size_t(p.wireBytes), frame.size() - 14);
        QVERIFY(!p.vlan && !p.cut);
    }

    void vlanAndQinQTagsOfEveryTpidAreSkipped() {
        const Bytes ip = ipv4(kA, kB, 17, udp(50001, 4791, bth(0x04, 7, 9)));
        for (const std::vector<std::uint16_t>& tags : std::vector<std::vector<std::uint16_t>>{
                 {0x8100}, {0x88a8, 0x8100}, {0x9100, 0x8100}, {0x88a8, 0x88a8, 0x8100}}) {
            const Bytes frame = ethernet(0x0800, ip, tags);
            const DecodedPacket p = decode(frame);
            QVERIFY(p.vlan);
            QVERIFY(p.roce);
            QCOMPARE(p.destQp, 7u);
            QCOMPARE(p.psn, 9u);
            QCOMPARE(std::size_t(p.wireBytes), ip.size());
        }
    }

    void ipv6ExtensionHeadersAreWalkedToTheUdpHeader() {
        const Bytes payload = udp(50002, 4791, bth(0x0a, 0x00beef, 3));
        // hop-by-hop (8), routing (24), destination options (16), fragment (first fragment, 8)
        const Bytes ip = ipv6(1, 2, 17, payload, {{0, 8}, {43, 24}, {60, 16}, {44, 8}}, 0x03);
        const DecodedPacket p = decode(ethernet(0x86dd, ip));
        QVERIFY(p.src.v6 && p.dst.v6);
        QCOMPARE(p.src, *IpAddr::parse("fd00::1"));
        QCOMPARE(p.dst, *IpAddr::parse("fd00::2"));
        QCOMPARE(p.proto, 17);
        QCOMPARE(p.srcPort, 50002);
        QVERIFY(p.roce && p.reth);
        QCOMPARE(p.destQp, 0x00beefu);
        QVERIFY(p.ecnCe);
        QCOMPARE(std::size_t(p.wireBytes), ip.size());
    }

    void aLaterIpv6OrIpv4FragmentHasNoPorts() {
        Bytes ip6 = ipv6(1, 2, 17, udp(1, 4791, bth(4, 1, 1)), {{44, 8}});
        ip6[40 + 3] = 0x08; // fragment offset 1 (in 8-byte units, bits 15..3)
        DecodedPacket p = decode(ethernet(0x86dd, ip6));
        QVERIFY(p.fragment);
        QCOMPARE(p.srcPort, 0);
        QVERIFY(!p.roce);
        p = decode(ethernet(0x0800, ipv4(kA, kB, 17, udp(1, 4791, bth(4, 1, 1)), 0, 0, 5)));
        QVERIFY(p.fragment);
        QCOMPARE(p.srcPort, 0);
    }

    void ipv4OptionsAreSkipped() {
        const Bytes ip = ipv4(kA, kB, 17, udp(50003, 4791, bth(0x04, 5, 6)), 0, 3);
        const DecodedPacket p = decode(ethernet(0x0800, ip));
        QVERIFY(p.roce);
        QCOMPARE(p.srcPort, 50003);
        QCOMPARE(p.destQp, 5u);
    }

    void linuxCookedAndRawIpCapturesDecode() {
        const Bytes ip = ipv4(kA, kB, 6, Bytes{0x01, 0xbb, 0xc3, 0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0, 0, 0, 0, 0, 0, 0});
        Bytes sll{0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0};
        put16(sll, 0x0800);
        append(sll, ip);
        Bytes sll2;
        put16(sll2, 0x0800);
        sll2.resize(20, 0);
        append(sll2, ip);
        for (auto [frame, link] : {std::pair{sll, kLinkLinuxSll}, std::pair{sll2, kLinkLinuxSll2},
                                    std::pair{ip, kLinkRaw}, std::pair{ip, kLinkRawDlt}}) {
            const DecodedPacket p = decode(frame, link);
            QCOMPARE(p.proto, 6);
            QCOMPARE(p.srcPort, 443);
            QCOMPARE(p.dstPort, 50000);
            QCOMPARE(std::size_t(p.wireBytes), ip.size());
        }
    }

    void acksNaksAndCnpsAreRecognised() {
        Bytes ack = bth(0x11, 1, 2);
        ack.insert(ack.end(), {0x1f, 0, 0, 1}); // AETH syndrome ACK with credit
        Bytes nak = bth(0x11, 1, 2);
        nak.insert(nak.end(), {0x60, 0, 0, 1}); // AETH syndrome NAK (PSN sequence error)
        Bytes rnr = bth(0x11, 1, 2);
        rnr.insert(rnr.end(), {0x21, 0, 0, 1}); // RNR NAK
        const auto frameOf = [](const Bytes& payload) { return ethernet(0x0800, ipv4(kB, kA, 17, udp(1, 4791, payload))); };
        DecodedPacket p = decode(frameOf(ack));
        QVERIFY(p.ack && !p.nak && !p.roceData() && p.aeth);
        p = decode(frameOf(nak));
        QVERIFY(p.nak && !p.ack && !p.roceData());
        p = decode(frameOf(rnr));
        QVERIFY(p.nak);
        p = decode(frameOf(bth(0x81, 1, 0)));
        QVERIFY(p.cnp && !p.roceData());
        p = decode(frameOf(bth(0x0b, 1, 0)));
        QVERIFY(p.reth && p.immDt && p.roceData());
        p = decode(frameOf(bth(0x10, 1, 0))); // READ response only: data, with an AETH
        QVERIFY(p.aeth && p.roceData());
    }

    void theOriginalLengthCountsNotTheSnapLength() {
        const Bytes frame = roceFrame(0x07, 1, 1, 4096);
        DecodedPacket p;
        QVERIFY(decodePacket(frame.data(), 96, frame.size(), kLinkEthernet, p));
        QVERIFY(p.roce);
        QCOMPARE(std::size_t(p.wireBytes), frame.size() - 14);
        QVERIFY(p.payloadLen <= 96 - 14 - 20 - 8);
    }

    void aFrameCutAtAnyLengthNeverReportsAHeaderItDidNotCapture() {
        const std::vector<Bytes> frames = {
            roceFrame(0x06, 1, 1, 32),
            ethernet(0x86dd, ipv6(1, 2, 17, udp(1, 4791, bth(0x04, 3, 4)), {{0, 8}, {60, 16}}), {0x88a8, 0x8100}),
            ethernet(0x0800, ipv4(kA, kB, 6, Bytes(20, 0x50)), {0x8100}),
        };
        for (const Bytes& frame : frames) {
            const DecodedPacket full = decode(frame);
            QVERIFY(full.proto != 0);
            // The offset of the transport header and of the BTH in this frame.
            const std::size_t payloadEnd = frame.size();
            for (std::size_t cap = 0; cap <= frame.size(); ++cap) {
                Bytes cut(frame.begin(), frame.begin() + std::ptrdiff_t(cap));
                DecodedPacket p;
                const bool ip = decodePacket(cut.data(), cut.size(), frame.size(), kLinkEthernet, p);
                if (p.roce) {
                    QVERIFY(full.roce);
                    QCOMPARE(p.destQp, full.destQp);
                    QVERIFY2(std::size_t(p.payload - cut.data()) + 12 <= cap, "a BTH read past the capture");
                }
                if (p.payload) QVERIFY(std::size_t(p.payload - cut.data()) + p.payloadLen <= cap);
                if (ip) QCOMPARE(p.wireBytes, full.wireBytes);
                if (cap == payloadEnd) QVERIFY(ip && !p.cut);
                if (!ip && cap >= 14) QVERIFY(p.cut != nullptr);
            }
        }
    }

    // ---- PacketFlowBuilder --------------------------------------------------------------------------------

    void aPsnWrapIsNotARetransmissionButGoingBackIs() {
        FlowTable out;
        PacketFlowBuilder builder;
        std::int64_t t = 1'000'000;
        for (std::uint32_t psn : {0xfffffdu, 0xfffffeu, 0xffffffu, 0u, 1u, 2u}) {
            builder.add(decode(roceFrame(0x07, 9, psn)), t, 1, out);
            t += 200;
        }
        builder.finish(out);
        QCOMPARE(out.size(), std::size_t(1));
        QCOMPARE(out.retransmits[0], 0u);
        QCOMPARE(out.packets[0], 6u);

        FlowTable again;
        PacketFlowBuilder b2;
        t = 1'000'000;
        // Go-back-N after a loss of 0xffffff: it and the two after it are sent again.
        for (std::uint32_t psn : {0xfffffeu, 0xffffffu, 0u, 1u, 0xffffffu, 0u, 1u, 2u}) {
            b2.add(decode(roceFrame(0x07, 9, psn)), t, 1, again);
            t += 200;
        }
        b2.finish(again);
        QCOMPARE(again.size(), std::size_t(1));
        QCOMPARE(again.retransmits[0], 3u);
        QCOMPARE(b2.stats().retransmits, 3u);
    }

    void acksAndCnpsMakeNoRecordAndCnpsCountOnTheThrottledFlow() {
        FlowTable out;
        PacketFlowBuilder builder;
        const Bytes data = roceFrame(0x07, 0x11, 0, 1000, 0x02);
        const Bytes marked = roceFrame(0x07, 0x11, 1, 1000, 0x03);
        Bytes ackPayload = bth(0x11, 0x22, 1);
        ackPayload.insert(ackPayload.end(), {0, 0, 0, 1});
        const Bytes ack = ethernet(0x0800, ipv4(kB, kA, 17, udp(60000, 4791, ackPayload)));
        const Bytes cnp = ethernet(0x0800, ipv4(kB, kA, 17, udp(60000, 4791, bth(0x81, 0x22, 0))));
        builder.add(decode(data), 1000, 1, out);
        builder.add(decode(marked), 1200, 1, out);
        builder.add(decode(ack), 1300, 1, out);
        builder.add(decode(cnp), 1400, 1, out);
        builder.add(decode(data), 1500, 1, out); // PSN 0 again: a retransmission
        builder.finish(out);
        // A CNP after the flow closed is counted on its record.
        builder.add(decode(cnp), 10'000'000, 1, out);
        QCOMPARE(out.size(), std::size_t(1));
        QCOMPARE(out.src[0], out.endpoints.find(IpAddr::v4(kA)));
        QCOMPARE(out.bytes[0], std::uint64_t(2 * (data.size() - 14) + (marked.size() - 14)));
        QCOMPARE(out.packets[0], 3u);
        QCOMPARE(out.cnps[0], 2u);
        QCOMPARE(out.ecnCe[0], 1u);
        QCOMPARE(out.retransmits[0], 1u);
        QCOMPARE(builder.stats().roceAcks, 1u);
        QCOMPARE(builder.stats().cnps, 2u);
        QCOMPARE(builder.stats().cnpsUnattributed, 0u);
    }

    // A sampled packet (sFlow: weight = the sampling rate) stands for as many packets in every count: bytes,
    // packets, ECN-CE marks and CNPs alike (a rate of 1000 with one marked sample is ~1000 marked packets).
    void sampledPacketsWeighTheCongestionCountsToo() {
        FlowTable out;
        PacketFlowBuilder builder;
        const Bytes marked = roceFrame(0x07, 0x11, 0, 1000, 0x03);
        const Bytes cnp = ethernet(0x0800, ipv4(kB, kA, 17, udp(60000, 4791, bth(0x81, 0x22, 0))));
        builder.add(decode(marked), 1000, 1000, out);
        builder.add(decode(cnp), 1100, 1000, out);
        builder.finish(out);
        QCOMPARE(out.size(), std::size_t(1));
        QCOMPARE(out.packets[0], std::uint64_t(1000));
        QCOMPARE(out.ecnCe[0], 1000u);
        QCOMPARE(out.cnps[0], 1000u);
        QCOMPARE(builder.stats().cnps, 1000u);
        // Counts are 32-bit: absurd rates saturate rather than wrap.
        FlowTable big;
        PacketFlowBuilder b2;
        b2.add(decode(marked), 1000, 0xFFFFFFFFu, big);
        b2.add(decode(marked), 1010, 0xFFFFFFFFu, big);
        b2.finish(big);
        QCOMPARE(big.size(), std::size_t(1));
        QCOMPARE(big.ecnCe[0], 0xFFFFFFFFu);
    }

    // Two QPs between the same NICs: the ACKs name each sender QP, so a CNP lands on the flow of its QP, not
    // on the pair's latest flow.
    void aCnpCountsOnTheFlowWhoseSenderQpTheAcksNamed() {
        const auto data = [](std::uint16_t sport, std::uint32_t qp, std::uint32_t psn) {
            Bytes payload = bth(0x07, qp, psn);
            payload.resize(payload.size() + 1000, 0);
            return ethernet(0x0800, ipv4(kA, kB, 17, udp(sport, 4791, payload)));
        };
        const auto reply = [](std::uint8_t opcode, std::uint32_t qp, std::uint32_t psn) {
            Bytes payload = bth(opcode, qp, psn);
            payload.insert(payload.end(), 16, 0);
            return ethernet(0x0800, ipv4(kB, kA, 17, udp(60000, 4791, payload)));
        };
        FlowTable out;
        PacketFlowBuilder builder;
        builder.add(decode(data(50000, 0x11, 100)), 1000, 1, out);   // QP 0x11, sender QP 0x22
        builder.add(decode(data(50002, 0x33, 7000)), 1100, 1, out);  // QP 0x33, sender QP 0x44 (opened last)
        builder.add(decode(reply(0x11, 0x22, 100)), 1200, 1, out);   // ACK of PSN 100 to QP 0x22
        builder.add(decode(reply(0x11, 0x44, 7000)), 1250, 1, out);  // ACK of PSN 7000 to QP 0x44
        for (std::int64_t t : {1300, 1350, 1400}) builder.add(decode(reply(0x81, 0x22, 0)), t, 1, out); // CNPs to 0x22
        builder.add(decode(reply(0x81, 0x44, 0)), 1500, 1, out);
        builder.finish(out);
        builder.add(decode(reply(0x81, 0x44, 0)), 9'000'000, 1, out); // after the records were written
        QCOMPARE(out.size(), std::size_t(2));
        for (std::size_t i = 0; i < out.size(); ++i) QCOMPARE(out.cnps[i], out.srcPort[i] == 50000 ? 3u : 2u);
        QCOMPARE(builder.stats().cnpsByPair, 0u);
        QCOMPARE(builder.stats().cnps, 5u);
    }

    void idleAndActiveTimeoutsCutRecords() {
        FlowBuilderOptions o;
        o.idleTimeoutNs = 10'000;
        o.activeTimeoutNs = 100'000;
        FlowTable out;
        PacketFlowBuilder builder(o);
        std::uint32_t psn = 0;
        // 0..5 µs, a 20 µs silence, then 25..215 µs: records [0,5], [25,120] (active cut at 125), [125,215].
        for (std::int64_t t : {0, 5'000}) builder.add(decode(roceFrame(0x07, 1, psn++)), t, 1, out);
        for (std::int64_t t = 25'000; t <= 215'000; t += 5'000) builder.add(decode(roceFrame(0x07, 1, psn++)), t, 1, out);
        builder.finish(out);
        out.sortByStart();
        QCOMPARE(out.size(), std::size_t(3));
        QCOMPARE(out.startNs[0], 0);
        QCOMPARE(out.end(0), 5'000);
        QCOMPARE(out.startNs[1], 25'000);
        QCOMPARE(out.end(1), 120'000);
        QCOMPARE(out.startNs[2], 125'000);
        QCOMPARE(out.end(2), 215'000);
        QCOMPARE(out.retransmits[2], 0u);
    }

    void otherQpsAndPortsAreOtherFlows() {
        FlowTable out;
        PacketFlowBuilder builder;
        builder.add(decode(roceFrame(0x07, 1, 0)), 0, 1, out);
        builder.add(decode(roceFrame(0x07, 2, 0)), 10, 1, out);
        builder.add(decode(ethernet(0x0800, ipv4(kA, kB, 6, Bytes(20, 0x50)))), 20, 1, out);
        builder.finish(out);
        QCOMPARE(out.size(), std::size_t(3));
        QCOMPARE(builder.stats().roceData, 2u);
        QCOMPARE(builder.stats().otherPackets, 1u);
    }

    // ---- readPcap: malformed input -------------------------------------------------------------------------

    void looksLikePcapKnowsEveryMagic() {
        const std::vector<Bytes> yes = {{0xd4, 0xc3, 0xb2, 0xa1}, {0xa1, 0xb2, 0xc3, 0xd4}, {0x4d, 0x3c, 0xb2, 0xa1},
                                        {0xa1, 0xb2, 0x3c, 0x4d},
                                        {0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a}};
        for (const Bytes& b : yes) QVERIFY(looksLikePcap(b.data(), b.size()));
        const std::string csv = "start_ns,end_ns";
        QVERIFY(!looksLikePcap(reinterpret_cast<const std::uint8_t*>(csv.data()), csv.size()));
        const Bytes ngBad = {0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 1, 2, 3, 4};
        QVERIFY(!looksLikePcap(ngBad.data(), ngBad.size()));
    }

    void aTruncatedFileHeaderIsRefusedNamingTheFile() {
        const std::string file = path("short.pcap");
        writeBytes(file, pcapFile(kLinkEthernet, {}).substr(0, 10));
        QCOMPARE(readError(file), file + ": cannot read it as a pcap or pcapng capture (libpcap: truncated dump "
                                         "file; tried to read 24 file header bytes, only got 6)");
    }

    void garbageIsRefusedNamingTheFile() {
        const std::string file = path("garbage.pcap");
        writeBytes(file, "start_ns,end_ns,src_ip\n1,2,3\n");
        QCOMPARE(readError(file), file + ": cannot read it as a pcap or pcapng capture (libpcap: unknown file format)");
    }

    void anUnknownLinkTypeIsRefusedByName() {
        const std::string file = path("wifi.pcap");
        writeBytes(file, pcapFile(105, {{0, Bytes(20, 0)}})); // 802.11
        QCOMPARE(readError(file), file + ": link type 105 (IEEE802_11) is not supported; expected Ethernet, raw IP "
                                         "or Linux cooked capture");
    }

    void aTruncatedPacketRecordEndsTheReadWithTheFileAndPacketNumber() {
        const std::string file = path("cut-record.pcap");
        std::string bytes = pcapFile(kLinkEthernet, {{1'000, roceFrame(0x04, 1, 1)}, {2'000, roceFrame(0x04, 1, 2)}});
        bytes.resize(bytes.size() - 20);
        writeBytes(file, bytes);
        const std::size_t captured = roceFrame(0x04, 1, 2).size();
        const std::string expected = file + ": packet 2: truncated dump file; tried to read " +
                                     std::to_string(captured) + " captured bytes, only got " +
                                     std::to_string(captured - 20) + "; expected a complete packet record";
        LoadDiagnostics diag;
        PcapStats stats;
        const FlowTable t = readPcap(file, {}, diag, &stats);
        QCOMPARE(diag.skippedRows, 1u);
        QCOMPARE(diag.errors.at(0).toString(), expected);
        QCOMPARE(stats.packets, 1u);
        QCOMPARE(t.size(), std::size_t(1));
        PcapReadOptions strict;
        strict.strict = true;
        QCOMPARE(readError(file, strict), expected);
    }

    void aCutBthIsAWarningNamingThePacketAndThePacketStaysUdp() {
        const std::string file = path("cut-bth.pcap");
        const Bytes good = roceFrame(0x04, 1, 1, 1000);
        // Packet 2 holds only 6 bytes of its BTH.
        Packet cut{2'000, good, 0};
        cut.frame.resize(14 + 20 + 8 + 6);
        cut.origLen = good.size();
        writeBytes(file, pcapFile(kLinkEthernet, {{1'000, good}, cut}));
        LoadDiagnostics diag;
        PcapStats stats;
        const FlowTable t = readPcap(file, {}, diag, &stats);
        QCOMPARE(diag.warningCount, 1u);
        QCOMPARE(diag.warnings.at(0).toString(),
                 file + ": packet 2: the BTH (12 bytes after the UDP header to port 4791) is cut (48 of " +
                     std::to_string(good.size()) + " bytes captured)");
        QCOMPARE(stats.cut, 1u);
        QCOMPARE(t.size(), std::size_t(2)); // the RoCE flow (QP 1) and the cut packet's UDP flow
        QCOMPARE(stats.flows.roceData, 1u);
    }

    void aTruncatedRecordHeaderNamesThePacket() {
        const std::string file = path("cut-header.pcap");
        std::string bytes = pcapFile(kLinkEthernet, {{1'000, roceFrame(0x04, 1, 1)}});
        bytes += std::string(10, '\0');
        writeBytes(file, bytes);
        LoadDiagnostics diag;
        const FlowTable t = readPcap(file, {}, diag);
        QCOMPARE(t.size(), std::size_t(1));
        QCOMPARE(diag.errors.at(0).toString(), file + ": packet 2: truncated dump file; tried to read 16 header bytes, "
                                                      "only got 10; expected a complete packet record");
    }

    void microsecondAndBigEndianPcapsReadLikeTheNanosecondOne() {
        std::vector<Packet> packets;
        for (std::uint32_t i = 0; i < 50; ++i)
            packets.push_back({1'793'491'200'000'000'000 + std::int64_t(i) * 3'000, roceFrame(0x07, 1 + i % 3, i, 900)});
        std::vector<std::vector<std::tuple<std::int64_t, std::int64_t, std::uint64_t, std::uint64_t>>> tables;
        for (auto [micro, big] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true},
                                  std::pair{true, true}}) {
            const std::string file = path("variant.pcap");
            writeBytes(file, pcapFile(kLinkEthernet, packets, 96, micro, big));
            LoadDiagnostics diag;
            const FlowTable t = readPcap(file, {}, diag);
            QVERIFY(diag.clean());
            tables.emplace_back();
            for (std::size_t i = 0; i < t.size(); ++i)
                tables.back().emplace_back(t.startNs[i], t.end(i), t.bytes[i], t.packets[i]);
        }
        QCOMPARE(tables[0].size(), std::size_t(3));
        for (std::size_t i = 1; i < tables.size(); ++i) QVERIFY(tables[i] == tables[0]);
    }

    // pcapng goes through libpcap's reader, classic pcap through ours: the same packets give the same records.
    void aPcapngReadsLikeTheSamePcap() {
        const QString editcap = QStandardPaths::findExecutable("editcap");
        if (editcap.isEmpty()) QSKIP("editcap is not installed (it comes with tshark, see scripts/install-deps.sh)");
        std::vector<Packet> packets;
        for (std::uint32_t i = 0; i < 200; ++i)
            packets.push_back({1'793'491'200'000'000'007 + std::int64_t(i) * 1'300, roceFrame(0x07, 1 + i % 4, i, 3000)});
        const std::string pcap = path("same.pcap"), ng = path("same.pcapng");
        writeBytes(pcap, pcapFile(kLinkEthernet, packets, 96));
        QCOMPARE(QProcess::execute(editcap, {"-F", "pcapng", QString::fromStdString(pcap), QString::fromStdString(ng)}), 0);
        QVERIFY(looksLikePcap(reinterpret_cast<const std::uint8_t*>(readBytes(ng).data()), 12));
        LoadDiagnostics d1, d2;
        const FlowTable a = readPcap(pcap, {}, d1), b = readPcap(ng, {}, d2);
        QVERIFY(d1.clean() && d2.clean());
        QCOMPARE(b.size(), a.size());
        QCOMPARE(b.startNs, a.startNs);
        QVERIFY(b.durationNs == a.durationNs);
        QCOMPARE(b.bytes, a.bytes);
        QCOMPARE(b.srcPort, a.srcPort);
    }

    void progressIsReportedAndCancelStopsTheRead() {
        const std::string file = path("progress.pcap");
        writeBytes(file, pcapFile(kLinkEthernet, {{1'000, roceFrame(0x04, 1, 1)}}));
        std::vector<double> seen;
        PcapReadOptions o;
        o.progress = [&](double f) {
            seen.push_back(f);
            return true;
        };
        LoadDiagnostics diag;
        readPcap(file, o, diag);
        QVERIFY(!seen.empty());
        QCOMPARE(seen.back(), 1.0);
        o.progress = [](double) { return false; };
        QVERIFY_THROWS_EXCEPTION(Cancelled, readPcap(file, o, diag));
    }

    void aPcapReadsWithNanosecondTimesAndOriginalLengths() {
        const std::string file = path("ns.pcap");
        const Bytes f = roceFrame(0x07, 3, 10, 4096);
        writeBytes(file, pcapFile(kLinkEthernet,
                                  {{1'793'491'200'000'000'001, f}, {1'793'491'200'000'000'208, roceFrame(0x07, 3, 11, 4096)}},
                                  96));
        LoadDiagnostics diag;
        PcapStats stats;
        const FlowTable t = readPcap(file, {}, diag, &stats);
        QVERIFY(diag.clean());
        QCOMPARE(t.size(), std::size_t(1));
        QCOMPARE(t.startNs[0], 1'793'491'200'000'000'001);
        QCOMPARE(t.end(0), 1'793'491'200'000'000'208);
        QCOMPARE(t.bytes[0], std::uint64_t(2 * (f.size() - 14)));
        QCOMPARE(stats.capturedBytes, 2u * 96u);
    }

    // ---- the simulator's pcap --------------------------------------------------------------------------------

    void theSimulatorRefusesAPcapBeyondItsPacketBudget() {
        const sim::SimResult r = sim::simulate(smallConfig("tiny", 2, 1));
        sim::PcapWriteOptions o;
        o.maxPackets = 1000;
        const std::uint64_t estimate = sim::pcapPacketCount(r, o);
        QVERIFY(estimate > o.maxPackets);
        try {
            sim::writePcapCapture(r, path("budget"), o);
            QFAIL("no error");
        } catch (const std::runtime_error& e) {
            QCOMPARE(std::string(e.what()), "the capture would hold about " + std::to_string(estimate) +
                                                " packets, more than the budget of 1000 (one per 4096 bytes of RoCE "
                                                "traffic): use a smaller preset such as tiny");
        }
        QVERIFY(!QFile::exists(QString::fromStdString(path("budget") + "/capture.pcap")));
    }

    // A capture of more flows than fit in memory stops at the record limit with what to do instead.
    void tooManyFlowRecordsStopWithAMessage() {
        sim::SimConfig c = smallConfig("tiny", 3, 64);
        for (sim::JobSpec& j : c.jobs) j.steps = 2;
        const std::string dir = path("record-limit");
        sim::writePcapCapture(sim::simulate(c), dir);
        const std::string file = dir + "/capture.pcap";
        PcapReadOptions o;
        LoadDiagnostics diag;
        const std::size_t all = readPcap(file, o, diag).size();
        QVERIFY(all > 100);
        o.maxRecords = 100;
        try {
            readPcap(file, o, diag);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().file, file);
            QVERIFY2(e.issue().message.find("more than 100 flow records, more than fit in the memory available (") !=
                             std::string::npos &&
                         e.issue().message.find("--memory SIZE") != std::string::npos,
                     e.what());
        }
    }

    // Flows still open count against the limit: 70,000 tiny packets, each a flow of its own and all at one
    // instant, close no flow before the end, yet stop at the limit (a capture of 10^8 such packets would
    // otherwise hold 10^8 open flows).
    void openFlowsCountAgainstTheRecordLimit() {
        std::vector<Packet> packets;
        constexpr std::uint32_t kFlows = 70'000;
        packets.reserve(kFlows);
        for (std::uint32_t i = 0; i < kFlows; ++i)
            packets.push_back({0, roceFrame(0x07, 1, 0, 8, 0x02, kA + i, kB)});
        const std::string file = path("open-flows.pcap");
        writeBytes(file, pcapFile(kLinkEthernet, packets));
        PcapReadOptions o;
        LoadDiagnostics diag;
        QCOMPARE(readPcap(file, o, diag).size(), std::size_t(kFlows)); // no limit: every flow, closed at the end
        o.maxRecords = 1000;
        QCOMPARE(QString::fromStdString(readError(file, o)),
                 QString::fromStdString(file + ": packet 65,536: more than 1,000 flow records, more than fit in the "
                                        "memory available (0 records, 65,536 flows open, 65,536 addresses so far): " +
                                        std::string(kStagedAdvice)));
    }

    // The CLI's --idle-timeout / --message-gap reach the flow builder: a shorter idle timeout on the same pcap
    // gives more records than the default, and a bad value is a usage error.
    void theCliTimeoutOptionsChangeTheRecords() {
        sim::SimConfig c = smallConfig("tiny", 3, 64);
        for (sim::JobSpec& j : c.jobs) j.steps = 2;
        const std::string dir = path("cli-timeouts");
        sim::writePcapCapture(sim::simulate(c), dir);
        const auto recordsWith = [&](const QStringList& extra) {
            QProcess p;
            p.start(LLMPRISM_CLI, QStringList{"analyze", QString::fromStdString(dir)} + extra);
            p.waitForFinished(300'000);
            const QString out = QString::fromUtf8(p.readAllStandardOutput());
            const auto m = QRegularExpression("Records +([0-9,]+)").match(out);
            return std::pair{p.exitCode(), m.hasMatch() ? m.captured(1).remove(',').toLongLong() : -1LL};
        };
        const auto base = recordsWith({});
        const auto shortIdle = recordsWith({"--idle-timeout", "0.2", "--message-gap", "0.1"});
        QCOMPARE(base.first, 0);
        QCOMPARE(shortIdle.first, 0);
        QVERIFY(base.second > 0);
        QVERIFY2(shortIdle.second > base.second, qPrintable(QString("%1 vs %2").arg(shortIdle.second).arg(base.second)));
        QCOMPARE(recordsWith({"--idle-timeout", "soon"}).first, 2);
    }

    // tshark's InfiniBand dissector and decodePacket read every packet of the simulator's pcap alike: source
    // address (IPv4 or IPv6), UDP source port, BTH opcode, destination QP and PSN, original frame length.
    void everyPacketOfTheSimulatorsPcapDecodesAsTsharkDecodesIt() {
        const QString tshark = QStandardPaths::findExecutable("tshark");
        if (tshark.isEmpty()) QSKIP("tshark is not installed (scripts/install-deps.sh installs it)");
        sim::SimConfig c = smallConfig("two-jobs", 7, 16);
        for (sim::JobSpec& j : c.jobs) {
            j.steps = 2;
            j.startOffsetNs = 0;
        }
        c.ipv6Rate = 5000; // IPv6 management packets
        const sim::SimResult r = sim::withIpv6Nics(sim::simulate(c), 0.5); // and job 0's RoCE over IPv6
        sim::PcapWriteOptions o;
        o.seed = 7;
        o.retransmitRate = 0.2;
        o.cnpRate = 0.2;
        const std::string dir = path("oracle");
        const sim::PcapWriteStats written = sim::writePcapCapture(r, dir, o);
        qInfo() << "packets" << written.packets << "retransmitted" << written.retransmitted << "cnps" << written.cnps
                << "naks" << written.naks << "wraps" << written.psnWraps << "vlan" << written.vlanFrames << "ipv6"
                << written.ipv6Packets << "other" << written.otherPackets;
        QVERIFY(written.retransmitted > 0 && written.cnps > 0 && written.naks > 0 && written.psnWraps > 0 &&
                written.vlanFrames > 0 && written.ipv6Packets > 0 && written.otherPackets > 0);
        const std::string file = dir + "/capture.pcap";

        // Ours: libpcap + decodePacket, printed as tshark prints the fields (empty when absent).
        std::vector<std::string> ours;
        {
            char err[PCAP_ERRBUF_SIZE];
            pcap_t* p = pcap_open_offline_with_tstamp_precision(file.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
            QVERIFY(p);
            pcap_pkthdr* h;
            const u_char* d;
            std::uint64_t number = 0;
            while (pcap_next_ex(p, &h, &d) == 1) {
                DecodedPacket pk;
                const bool ip = decodePacket(d, h->caplen, h->len, pcap_datalink(p), pk);
                std::ostringstream line;
                line << ++number << '\t' << (ip && !pk.src.v6 ? pk.src.toString() : "") << '\t'
                     << (ip && pk.src.v6 ? pk.src.toString() : "") << '\t'
                     << (pk.proto == kProtoUdp ? std::to_string(pk.srcPort) : "") << '\t';
                if (pk.roce) line << unsigned(pk.opcode) << '\t' << pk.destQp << '\t' << pk.psn;
                else line << "\t\t";
                line << '\t' << h->len;
                ours.push_back(line.str());
            }
            pcap_close(p);
        }
        QCOMPARE(std::uint64_t(ours.size()), written.packets);

        QProcess proc;
        proc.start(tshark, {"-r", QString::fromStdString(file), "-T", "fields", "-e", "frame.number", "-e", "ip.src",
                            "-e", "ipv6.src", "-e", "udp.srcport", "-e", "infiniband.bth.opcode", "-e",
                            "infiniband.bth.destqp", "-e", "infiniband.bth.psn", "-e", "frame.len"});
        QVERIFY(proc.waitForFinished(600'000));
        QCOMPARE(proc.exitCode(), 0);
        std::istringstream in(proc.readAllStandardOutput().toStdString());
        std::vector<std::string> theirs;
        for (std::string line; std::getline(in, line);) {
            // tshark prints the QP in hex: to decimal, like ours.
            std::vector<std::string> f;
            std::istringstream fields(line);
            for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
            f.resize(8);
            if (!f[5].empty()) f[5] = std::to_string(std::stoul(f[5], nullptr, 0));
            std::string joined = f[0];
            for (std::size_t i = 1; i < f.size(); ++i) joined += "\t" + f[i];
            theirs.push_back(joined);
        }
        QCOMPARE(theirs.size(), ours.size());
        for (std::size_t i = 0; i < ours.size(); ++i)
            if (ours[i] != theirs[i]) QCOMPARE(ours[i], theirs[i]); // the first packet that differs, by number
    }

    void theSimulatorsPcapAnalyzesLikeTheSameCapturesFlowsCsv_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("shrink");
        QTest::addColumn<double>("ipv6Share");
        QTest::newRow("tiny") << "tiny" << 16 << 0.0;
        QTest::newRow("two-jobs, one on IPv6") << "two-jobs" << 16 << 0.5;
        QTest::newRow("anomalies") << "anomalies" << 16 << 0.0;
    }
    void theSimulatorsPcapAnalyzesLikeTheSameCapturesFlowsCsv() {
        QFETCH(QString, preset);
        QFETCH(int, shrink);
        QFETCH(double, ipv6Share);
        sim::SimResult r = sim::simulate(smallConfig(preset.toStdString().c_str(), 5, shrink));
        if (ipv6Share > 0) r = sim::withIpv6Nics(r, ipv6Share);
        const std::string csvDir = path("equiv-csv"), pcapDir = path("equiv-pcap");
        sim::writeCapture(r, csvDir);
        sim::PcapWriteOptions o;
        o.seed = 5;
        const sim::PcapWriteStats written = sim::writePcapCapture(r, pcapDir, o);
        qInfo() << "packets" << written.packets << "retransmitted" << written.retransmitted << "cnps" << written.cnps
                << "wraps" << written.psnWraps << "vlan" << written.vlanFrames << "ipv6" << written.ipv6Packets;
        QVERIFY(written.retransmitted > 0 && written.cnps > 0 && written.psnWraps > 0 && written.vlanFrames > 0 &&
                written.ipv6Packets > 0);

        const Capture fromCsv = loadCapture(csvDir);
        Capture fromPcap;
        fromPcap.source = pcapDir;
        LoadDiagnostics diag;
        PcapStats stats;
        fromPcap.flows = readPcap(pcapDir + "/capture.pcap", {}, diag, &stats);
        fromPcap.topology = readTopologyJson(pcapDir + "/topology.json");
        fromPcap.hasTopology = true;
        QVERIFY(diag.clean());
        QCOMPARE(stats.packets, written.packets);
        QCOMPARE(stats.flows.retransmits, written.retransmitted);
        QCOMPARE(stats.flows.cnps, written.cnps);
        QCOMPARE(stats.flows.roceAcks, written.acks);
        QCOMPARE(stats.flows.roceNaks, written.naks);
        std::uint64_t cnpsOnRecords = 0, retransOnRecords = 0;
        for (std::size_t i = 0; i < fromPcap.flows.size(); ++i) {
            cnpsOnRecords += fromPcap.flows.cnps[i];
            retransOnRecords += fromPcap.flows.retransmits[i];
        }
        QCOMPARE(cnpsOnRecords + stats.flows.cnpsUnattributed, written.cnps);
        QCOMPARE(retransOnRecords, written.retransmitted);
        qInfo() << "records csv" << fromCsv.flows.size() << "pcap" << fromPcap.flows.size();

        const Report a = analyzeCapture(fromCsv);
        const Report b = analyzeCapture(fromPcap);
        QVERIFY(!a.jobs.empty());
        const auto oa = outline(a), ob = outline(b);
        if (ob != oa) {
            for (const auto& l : oa) qInfo() << "flows.csv" << l.c_str();
            for (const auto& l : ob) qInfo() << "pcap     " << l.c_str();
        }
        QCOMPARE(ob, oa);
    }
};

QTEST_GUILESS_MAIN(TestPcap)
#include "tst_pcap.moc"
