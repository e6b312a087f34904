// readPcap: libpcap reads the records (pcap and pcapng, nanosecond time stamps); each packet is decoded and
// goes to the packet flow builder, or to the flow export decoder when it is an IPFIX / NetFlow v9 / sFlow
// datagram.
#include "io/pcap_reader.h"

#include "io/capture.h" // kStagedAdvice
#include "io/text_input.h"
#include "model/units.h"
#include "util/dynamic_library.h"

#include <pcap/pcap.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

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

// libpcap, loaded when a capture file is first read (util/dynamic_library.h): the commands that read none do not
// load it, and the libraries it pulls in (D-Bus, systemd's, libgcrypt...), at start.
struct Pcap {
    decltype(&pcap_fopen_offline_with_tstamp_precision) open;
    decltype(&pcap_close) close;
    decltype(&pcap_datalink) datalink;
    decltype(&pcap_datalink_val_to_name) datalinkName;
    decltype(&pcap_is_swapped) isSwapped;
    decltype(&pcap_next_ex) next;
    decltype(&pcap_geterr) geterr;
};

// (Throws std::runtime_error, saying what to install, where it cannot be loaded; tried again at the next call.)
const Pcap& libpcap() {
    static const Pcap api = [] {
        const RequiredLibrary pcap({"libpcap.so.0.8", "libpcap.so.1"}, "reading pcap or pcapng needs libpcap",
                                   "libpcap0.8 (libpcap0.8t64 on Debian 13)");
        Pcap p{};
        pcap.bind("pcap_fopen_offline_with_tstamp_precision", p.open);
        pcap.bind("pcap_close", p.close);
        pcap.bind("pcap_datalink", p.datalink);
        pcap.bind("pcap_datalink_val_to_name", p.datalinkName);
        pcap.bind("pcap_is_swapped", p.isSwapped);
        pcap.bind("pcap_next_ex", p.next);
        pcap.bind("pcap_geterr", p.geterr);
        return p;
    }();
    return api;
}

struct PcapCloser {
    void operator()(pcap_t* p) const { libpcap().close(p); }
};

constexpr std::uint32_t kMaxCaplen = 262144; // libpcap's MAXIMUM_SNAPLEN

inline std::uint32_t readU32(const std::uint8_t* p, bool swapped) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return swapped ? __builtin_bswap32(v) : v;
}

// Reads a file in large chunks into one reused buffer (which stays in cache, unlike a memory map of the whole
// file): `at`..`end` is what is buffered and not consumed yet.
class ChunkReader {
public:
    // `fileSize`: the buffer starts at the file's size when that is smaller (0: unknown); want() grows it.
    ChunkReader(int fd, std::uint64_t fileSize)
        : m_fd(fd), m_buf(readBufferSize(fileSize ? fileSize : UINT64_MAX, kSize)) {}
    const std::uint8_t* at = nullptr;
    const std::uint8_t* end = nullptr;
    std::uint64_t consumed = 0; // file offset of `at`
    // Makes at least n bytes available at `at` unless the file ends first; returns what is available.
    std::size_t want(std::size_t n) {
        std::size_t have = std::size_t(end - at);
        if (have >= n) return have;
        if (have) std::memmove(m_buf.data(), at, have); // to the front first (`at` is null before the first read):
        if (n > m_buf.size()) m_buf.resize(n);          // resizing moves the buffer `at` points into
        at = m_buf.data();
        while (have < m_buf.size()) {
            const ssize_t r = ::read(m_fd, m_buf.data() + have, m_buf.size() - have);
            if (r <= 0) break;
            have += std::size_t(r);
        }
        end = at + have;
        return have;
    }
    void skip(std::size_t n) {
        at += n;
        consumed += n;
    }

private:
    static constexpr std::size_t kSize = std::size_t(4) << 20;
    int m_fd;
    std::vector<std::uint8_t> m_buf;
};

bool isClassicMagic(std::uint32_t magic) {
    return magic == 0xa1b2c3d4u || magic == 0xd4c3b2a1u || magic == 0xa1b23c4du || magic == 0x4d3cb2a1u;
}

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
    std::uintmax_t fileSize = 0;
    {
        std::error_code ec;
        fileSize = std::filesystem::file_size(path, ec);
        if (ec) fileSize = 0;
    }
    // Our own stream with a 1 MiB buffer: libpcap reads each record with two small freads, and the default
    // 4 KiB stdio buffer made the read system calls a third of the time. A small file gets a buffer its size.
    const Pcap* loaded = nullptr;
    try {
        loaded = &libpcap();
    } catch (const std::runtime_error& e) {
        throw InputError(issue(path, e.what()));
    }
    const Pcap& pcapApi = *loaded;
    FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) throw InputError(issue(path, std::string("cannot open the file (") + std::strerror(errno) + ")"));
    // (glibc ignores the size unless given the buffer; it must outlive the stream, closed with the pcap_t.)
    const std::size_t bufferSize = readBufferSize(fileSize ? fileSize : UINT64_MAX, std::size_t(1) << 20);
    std::unique_ptr<char[]> buffer(new char[bufferSize]);
    std::setvbuf(file, buffer.get(), _IOFBF, bufferSize);
    std::unique_ptr<pcap_t, PcapCloser> pcap(pcapApi.open(file, PCAP_TSTAMP_PRECISION_NANO, errbuf));
    if (!pcap) { // libpcap closes the stream only when it succeeds
        std::fclose(file);
        throw InputError(issue(path, std::string("cannot read it as a pcap or pcapng capture (libpcap: ") + errbuf +
                                         ")"));
    }
    PcapStats stats;
    stats.linkType = pcapApi.datalink(pcap.get());
    if (!linkTypeSupported(stats.linkType)) {
        const char* name = pcapApi.datalinkName(stats.linkType);
        throw InputError(issue(path, "link type " + std::to_string(stats.linkType) + " (" +
                                         (name ? name : "unknown") +
                                         ") is not supported; expected Ethernet, raw IP or Linux cooked capture"));
    }

    FlowTable out;
    PacketFlowBuilder builder(options.flows);
    std::unique_ptr<FlowExportDecoder> exports;
    DecodedPacket packet;
    std::uint64_t number = 0;

    // One packet record: decoded, then to the export decoder or the flow builder.
    const auto handle = [&](std::int64_t t, const std::uint8_t* data, std::uint32_t caplen, std::uint32_t len) {
        if (stats.packets == 0) stats.firstNs = t;
        stats.lastNs = std::max(stats.lastNs, t);
        ++stats.packets;
        stats.capturedBytes += caplen;
        stats.wireBytes += len;
        const bool ip = decodePacket(data, caplen, len, stats.linkType, packet);
        if (packet.cut) {
            ++stats.cut;
            if (diag.warnings.size() >= LoadDiagnostics::kMaxMessages)
                ++diag.warningCount; // counted; the message would not be kept
            else
                diag.addWarning(issue(path, packetIssue(number, std::string(packet.cut) + " (" +
                                                                    std::to_string(caplen) + " of " +
                                                                    std::to_string(len) + " bytes captured)")));
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
    };
    const auto truncated = [&](const std::string& what) {
        // The capture was cut while being written, or a block is malformed.
        InputIssue bad = issue(path, packetIssue(number, what + "; expected a complete packet record"));
        if (options.strict) throw InputError(bad);
        diag.addError(bad);
    };
    const auto checkRecords = [&](std::uint64_t number) {
        // Open flows count too: each is a record to come, and a capture of many short flows within the idle
        // timeout (10^8 tiny packets of distinct flows, all at one time) holds them all open before any closes.
        if (options.maxRecords && recordsHeld(out.size(), out.endpoints.size(), builder.openFlows()) > options.maxRecords)
            throw InputError({path, 0, 0,
                              "packet " + formatCount(number) + ": more than " + formatCount(options.maxRecords) +
                                  " flow records, more than fit in the memory available (" + formatCount(out.size()) +
                                  " records, " + formatCount(builder.openFlows()) + " flows open, " +
                                  formatCount(out.endpoints.size()) + " addresses so far): " + kStagedAdvice});
    };
    const auto progress = [&](std::uint64_t position) {
        const double f = fileSize > 0 ? std::min(1.0, double(position) / double(fileSize)) : 0.0;
        if (!options.progress(f)) throw Cancelled();
    };

    std::uint8_t head[4] = {};
    if (fileSize >= 24 && ::pread(fileno(file), head, 4, 0) == 4 && isClassicMagic(readU32(head, false))) {
        // Classic pcap (libpcap checked the header): records parsed here from 4 MiB reads, three times faster
        // than pcap_next_ex's two freads a record. Same record format and error texts as libpcap.
        const bool swapped = pcapApi.isSwapped(pcap.get()) != 0;
        const std::uint32_t magic = readU32(head, false);
        const bool nano = magic == 0xa1b23c4du || magic == 0x4d3cb2a1u;
        const int fd = fileno(file); // libpcap read the header through stdio; the records are read from byte 24
        if (::lseek(fd, 24, SEEK_SET) != 24)
            throw InputError(issue(path, std::string("cannot seek in the file (") + std::strerror(errno) + ")"));
        ChunkReader in(fd, fileSize - 24);
        in.consumed = 24;
        for (;;) {
            std::size_t left = in.want(16);
            if (left == 0) break;
            ++number;
            if (left < 16) {
                truncated("truncated dump file; tried to read 16 header bytes, only got " + std::to_string(left));
                break;
            }
            const std::uint8_t* p = in.at;
            const std::uint32_t sec = readU32(p, swapped), frac = readU32(p + 4, swapped);
            const std::uint32_t caplen = readU32(p + 8, swapped), len = readU32(p + 12, swapped);
            if (caplen > kMaxCaplen) {
                truncated("invalid packet capture length " + std::to_string(caplen) + ", bigger than maximum of " +
                          std::to_string(kMaxCaplen));
                break;
            }
            left = in.want(16 + std::size_t(caplen));
            p = in.at;
            if (left - 16 < caplen) {
                truncated("truncated dump file; tried to read " + std::to_string(caplen) +
                          " captured bytes, only got " + std::to_string(left - 16));
                break;
            }
            const std::int64_t t = std::int64_t(sec) * 1'000'000'000 + std::int64_t(frac) * (nano ? 1 : 1000);
            handle(t, p + 16, caplen, len);
            in.skip(16 + std::size_t(caplen));
            if ((number & 0xffff) == 0) checkRecords(number);
            if ((number & 0xffff) == 0 && options.progress) progress(in.consumed);
        }
    } else {
        // pcapng (or a pcap that could not be mapped): libpcap reads it.
        pcap_pkthdr* header = nullptr;
        const u_char* data = nullptr;
        for (;;) {
            const int rc = pcapApi.next(pcap.get(), &header, &data);
            if (rc == PCAP_ERROR_BREAK) break; // end of file
            ++number;
            if (rc != 1) {
                const std::string why = pcapApi.geterr(pcap.get());
                if (why.find("an interface has a type") != std::string::npos) {
                    // (dumpcap -i eth0 -i any): libpcap reads one link type per file, the rest is not read.
                    InputIssue bad = issue(path, packetIssue(number, why + "; libpcap reads a pcapng of one link type "
                                                                           "only: the rest of the file is not read. "
                                                                           "Split it by interface (editcap, or tshark "
                                                                           "-r IN -Y frame.interface_id==N -w OUT) and "
                                                                           "give the parts"));
                    if (options.strict) throw InputError(bad);
                    diag.addError(bad);
                } else {
                    truncated(why);
                }
                break;
            }
            handle(std::int64_t(header->ts.tv_sec) * 1'000'000'000 + std::int64_t(header->ts.tv_usec), data,
                   header->caplen, header->len);
            if ((number & 0xffff) == 0) checkRecords(number);
            if ((number & 0xffff) == 0 && options.progress) {
                const long pos = std::ftell(file);
                progress(pos > 0 ? std::uint64_t(pos) : 0);
            }
        }
    }
    builder.finish(out);
    checkRecords(number);
    if (exports) {
        exports->finish(out);
        stats.exports = exports->stats();
        warnIfSampled(stats.exports, path, diag);
    }
    stats.flows = builder.stats();
    stats.flowOptions = builder.options();
    out.sortByStart();
    if (options.progress && !options.progress(1.0)) throw Cancelled();
    if (statsOut) *statsOut = stats;
    return out;
}

} // namespace prism
