// flows.csv writer (llmprism-cli convert): any flow table out in our own format.
#include "io/capture.h"

#include <cerrno>
#include <cstring>
#include <zlib.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace prism {
namespace {

template <typename T> void put(std::string& out, T value) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, value);
    out.append(tmp, r.ptr);
}

} // namespace

void writeFlowsCsv(const FlowTable& flows, const std::string& path, const std::vector<std::string>& comment,
                   const std::vector<std::uint32_t>* order) {
    // Level 1: three times faster than the default on the large preset for a file only ~25% bigger.
    const bool gzip = path.ends_with(".gz");
    const std::string tmp = path + ".tmp";
    gzFile gz = nullptr;
    std::FILE* file = nullptr;
    if (gzip)
        gz = gzopen(tmp.c_str(), "wb1");
    else
        file = std::fopen(tmp.c_str(), "wb");
    if (!gz && !file) throw std::runtime_error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
    if (gz) gzbuffer(gz, 1 << 20);
    bool ok = true;
    std::string out;
    auto flush = [&] {
        if (out.empty()) return;
        ok = ok && (gz ? gzwrite(gz, out.data(), unsigned(out.size())) == int(out.size())
                       : std::fwrite(out.data(), 1, out.size(), file) == out.size());
        out.clear();
    };
    for (const std::string& line : comment) {
        // One comment line per line of text: a newline inside would start a row.
        std::size_t pos = 0;
        do {
            std::size_t nl = line.find('\n', pos);
            out += "# " + line.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos) + '\n';
            pos = nl == std::string::npos ? nl : nl + 1;
        } while (pos != std::string::npos);
    }
    const bool congestion = flows.hasCongestion();
    out += "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets";
    out += congestion ? ",retransmits,cnps,ecn_ce\n" : "\n";
    std::vector<std::string> ips(flows.endpoints.size());
    for (std::size_t i = 0; i < ips.size(); ++i) ips[i] = flows.endpoints.at(EndpointId(i)).toString();
    const std::size_t rows = order ? order->size() : flows.size();
    for (std::size_t row = 0; row < rows; ++row) {
        const std::size_t i = order ? (*order)[row] : row;
        put(out, flows.startNs[i]);
        out += ',';
        put(out, flows.end(i));
        out += ',';
        out += ips[flows.src[i]];
        out += ',';
        out += ips[flows.dst[i]];
        out += ',';
        put(out, flows.srcPort[i]);
        out += ',';
        put(out, flows.dstPort[i]);
        out += ',';
        put(out, unsigned(flows.proto[i]));
        out += ',';
        put(out, flows.bytes[i]);
        out += ',';
        put(out, flows.packets[i]);
        if (congestion) {
            out += ',';
            put(out, flows.retransmits[i]);
            out += ',';
            put(out, flows.cnps[i]);
            out += ',';
            put(out, flows.ecnCe[i]);
        }
        out += '\n';
        if (out.size() >= (std::size_t(1) << 20)) flush();
    }
    flush();
    ok = (gz ? gzclose(gz) == Z_OK : std::fclose(file) == 0) && ok;
    std::error_code ec;
    if (!ok) {
        std::filesystem::remove(tmp, ec);
        throw std::runtime_error(path + ": write failed (disk full?)");
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        throw std::runtime_error(path + ": cannot replace the file");
    }
}

} // namespace prism
