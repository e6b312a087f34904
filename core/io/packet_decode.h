#pragma once
// Packets to flow records: the decoder of one captured frame (Ethernet, 802.1Q / QinQ, IPv4 / IPv6,
// UDP / TCP, RoCEv2 BTH with RETH / AETH / immediate, ACK, NAK, CNP) and the builder that aggregates
// decoded packets into flow records with idle and active timeouts. Used by the pcap reader and by the
// sFlow decoder (sampled raw headers, each packet weighted by the sampling rate). Qt-free.
#include "model/flow_table.h"
#include "model/ip.h"

#include <cstddef>
#include <cstdint>

namespace prism {

// libpcap link types the decoder understands (DLT_ values).
inline constexpr int kLinkEthernet = 1;   // DLT_EN10MB
inline constexpr int kLinkRaw = 101;      // DLT_RAW (IPv4 or IPv6 without a link header)
inline constexpr int kLinkLinuxSll = 113; // DLT_LINUX_SLL (tcpdump -i any)
inline constexpr int kLinkRawDlt = 12;    // DLT_RAW as libpcap reports LINKTYPE_RAW on Linux
inline constexpr int kLinkIpv4 = 228;     // LINKTYPE_IPV4
inline constexpr int kLinkIpv6 = 229;     // LINKTYPE_IPV6
inline constexpr int kLinkLinuxSll2 = 276; // LINKTYPE_LINUX_SLL2 (tcpdump -i any, libpcap >= 1.10)

// True when decodePacket understands the link type.
bool linkTypeSupported(int linkType);

struct DecodedPacket {
    IpAddr src;
    IpAddr dst;
    std::uint16_t srcPort = 0;
    std::uint16_t dstPort = 0;
    std::uint8_t proto = 0;       // IP protocol number
    std::uint32_t wireBytes = 0;  // the IP packet's length on the wire (from the original frame length)
    bool ecnCe = false;           // IP ECN field = CE (11)
    // Transport payload as captured (may be cut short by the snap length): the UDP payload for flow exports.
    const std::uint8_t* payload = nullptr;
    std::size_t payloadLen = 0;
    // RoCEv2 (UDP to 4791 with a BTH that fits the capture)
    bool roce = false;
    std::uint8_t opcode = 0;      // BTH opcode
    std::uint32_t destQp = 0;     // BTH destination QP (24 bits)
    std::uint32_t psn = 0;        // BTH PSN (24 bits)
    bool ack = false;             // an acknowledge packet (RC/XRC/UC ACK opcodes, AETH syndrome ACK)
    bool nak = false;             // AETH syndrome NAK
    bool cnp = false;             // congestion notification packet (opcode 0x81)
    // Extended transport headers the opcode says follow the BTH (RC / UC / XRC opcodes)
    bool reth = false;            // RDMA extended transport header (WRITE first / only, READ request)
    bool aeth = false;            // ACK extended transport header (ACK, READ responses first / last / only)
    bool immDt = false;           // immediate data (SEND / WRITE ... with immediate)
    bool vlan = false;            // the frame had at least one 802.1Q / 802.1ad tag
    bool fragment = false;        // an IP fragment other than the first: no transport header
    bool midMessage = false;      // a RoCE FIRST or MIDDLE packet: more of the same message follows
    // What the snap length (or a malformed packet) cut short, for the reader's warnings; null when nothing was.
    const char* cut = nullptr;

    // A RoCE packet that carries data (not an ACK, NAK or CNP).
    bool roceData() const { return roce && !ack && !nak && !cnp; }
};

// Decodes one frame of link type `linkType` (kLink*): `capLen` bytes captured of a frame `origLen` long.
// Returns false when it is not an IPv4/IPv6 packet or its IP header is cut (then `cut` says what); a packet
// whose transport or BTH header is cut keeps what was read (ports 0, roce false) and says so in `cut`.
bool decodePacket(const std::uint8_t* data, std::size_t capLen, std::size_t origLen, int linkType,
                  DecodedPacket& out);

struct FlowBuilderOptions {
    std::int64_t idleTimeoutNs = 0;   // a flow silent this long is closed (0: the documented default)
    std::int64_t activeTimeoutNs = 0; // a flow open this long is closed and reopened (0: the default)
    // RoCE: a QP whose last packet ended a message (SEND / WRITE last or only, READ response last or only) and
    // that stays silent this long has finished its transfer (0: the default). Mid-message, the idle timeout
    // applies. A value at or above the idle timeout turns this off.
    std::int64_t messageGapNs = 0;
};

// Aggregates packets (in capture order) into flow records: RoCEv2 per (src, dst, UDP source port,
// destination QP), other traffic per 5-tuple. Counts retransmissions (PSN going back), CNPs and ECN-CE marks
// per flow into the FlowTable's optional congestion columns.
struct PacketFlowStats {
    std::uint64_t roceData = 0;         // RoCE data packets (into RoCE flow records)
    std::uint64_t roceAcks = 0;         // ACK packets (no record: counted here only)
    std::uint64_t roceNaks = 0;         // NAK packets (no record)
    std::uint64_t cnps = 0;             // CNPs (no record: counted on the flow they throttle)
    std::uint64_t cnpsByPair = 0;       // CNPs whose QP no ACK had named: counted on the pair's latest flow
    std::uint64_t cnpsUnattributed = 0; // CNPs before any data flow of their pair
    std::uint64_t retransmits = 0;      // data packets whose PSN did not advance
    std::uint64_t otherPackets = 0;     // non-RoCE packets (into 5-tuple records)
    std::uint64_t records = 0;          // flow records written
};

class PacketFlowBuilder {
public:
    explicit PacketFlowBuilder(FlowBuilderOptions options = {});
    ~PacketFlowBuilder();
    PacketFlowBuilder(const PacketFlowBuilder&) = delete;
    PacketFlowBuilder& operator=(const PacketFlowBuilder&) = delete;

    // weight: how many packets this one stands for (the sampling rate for sFlow; 1 for a full capture).
    // Give the same `out` to every call: a CNP may be counted on a record already written to it.
    // Packets should come in time order (a few out of order are tolerated: a flow keeps its min / max time).
    void add(const DecodedPacket& packet, std::int64_t timeNs, std::uint64_t weight, FlowTable& out);
    // Closes every open flow into `out`.
    void finish(FlowTable& out);
    // The options with defaults filled in.
    const FlowBuilderOptions& options() const;
    const PacketFlowStats& stats() const;
    // Flows open now (each becomes a record when it closes): what the builder holds besides `out`.
    std::size_t openFlows() const;

    // Defaults (docs/FORMATS.md, "Packet captures", says why): a flow silent for 50 µs has ended, a RoCE QP
    // silent for 1 µs after the end of a message has finished its transfer; a record is cut every 1 ms.
    static constexpr std::int64_t kDefaultIdleTimeoutNs = 50'000;
    static constexpr std::int64_t kDefaultActiveTimeoutNs = 1'000'000;
    static constexpr std::int64_t kDefaultMessageGapNs = 1'000;

private:
    struct Impl;
    Impl* m_impl;
};

} // namespace prism
