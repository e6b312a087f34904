// A hostfile with addresses as a topology: CSV lines `ip,host[,switch[,gpus]]` (docs/FORMATS.md "Topology from a
// hostfile"). What a cluster usually has where it has no topology.json: the NICs' addresses and their hosts.
#include "io/topology_csv.h"

#include "model/diagnostics.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace prism {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// The parts of `s` between `sep`s, trimmed.
std::vector<std::string_view> splitOn(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    for (;;) {
        const auto at = s.find(sep);
        out.push_back(trim(s.substr(0, at)));
        if (at == std::string_view::npos) return out;
        s.remove_prefix(at + 1);
    }
}

std::vector<std::string_view> fieldsOf(std::string_view line) { return splitOn(line, ','); }

std::optional<int> numberOf(std::string_view s) {
    int v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
    return v;
}

// "3", "0-1" (a range) or "0;2" (a list): the GPUs a NIC serves.
std::optional<std::vector<int>> gpusOf(std::string_view s) {
    std::vector<int> out;
    if (const auto dash = s.find('-'); dash != std::string_view::npos) {
        const auto a = numberOf(trim(s.substr(0, dash))), b = numberOf(trim(s.substr(dash + 1)));
        if (!a || !b || *b < *a || *b - *a > 64) return std::nullopt;
        for (int g = *a; g <= *b; ++g) out.push_back(g);
        return out;
    }
    for (std::string_view part : splitOn(s, ';')) {
        const auto g = numberOf(part);
        if (!g) return std::nullopt;
        out.push_back(*g);
    }
    return out;
}

// Column positions: by the header's names where the first line is one, else ip, host, switch, gpus in order.
struct Columns {
    std::size_t ip = 0, host = 1;
    std::optional<std::size_t> sw = 2, gpus = 3;
};

} // namespace

bool looksLikeTopologyCsv(std::string_view text) {
    for (std::size_t at = 0; at < text.size();) {
        const auto nl = text.find('\n', at);
        const std::string_view line = trim(text.substr(at, nl == std::string_view::npos ? nl : nl - at));
        at = nl == std::string_view::npos ? text.size() : nl + 1;
        if (line.empty() || line.front() == '#') continue;
        const auto f = fieldsOf(line);
        const bool header = std::any_of(f.begin(), f.end(), [](std::string_view x) {
            return x.size() == 2 && std::tolower(static_cast<unsigned char>(x[0])) == 'i' &&
                   std::tolower(static_cast<unsigned char>(x[1])) == 'p';
        });
        return f.size() >= 2 && (IpAddr::parse(f[0]) || header);
    }
    return false;
}

Topology readTopologyCsv(const std::string& path, std::string_view text) {
    Topology t;
    Columns col;
    std::map<std::string, std::size_t, std::less<>> switchIndex;
    std::map<std::string, int, std::less<>> hostIndex;
    std::unordered_map<IpAddr, std::uint64_t, IpAddrHash> lineOfIp;
    std::uint64_t lineNo = 0;
    bool first = true;
    for (std::size_t at = 0; at < text.size();) {
        const auto nl = text.find('\n', at);
        const std::string_view line = trim(text.substr(at, nl == std::string_view::npos ? nl : nl - at));
        at = nl == std::string_view::npos ? text.size() : nl + 1;
        ++lineNo;
        if (line.empty() || line.front() == '#') continue;
        const auto f = fieldsOf(line);
        if (first && !IpAddr::parse(f[0])) { // a header: columns by name
            first = false;
            std::optional<std::size_t> ip, host, sw, gpus;
            for (std::size_t i = 0; i < f.size(); ++i) {
                std::string name(f[i]);
                std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
                if (name == "ip") ip = i;
                else if (name == "host") host = i;
                else if (name == "switch") sw = i;
                else if (name == "gpus" || name == "gpu") gpus = i;
                else
                    throw InputError({path, lineNo, std::uint32_t(i + 1),
                                      "unknown column \"" + name + "\": expected ip, host, switch, gpus"});
            }
            if (!ip || !host) throw InputError({path, lineNo, 0, "the header names no \"ip\" or no \"host\" column"});
            col = {*ip, *host, sw, gpus};
            continue;
        }
        first = false;
        auto field = [&](std::size_t i) { return i < f.size() ? f[i] : std::string_view(); };
        if (f.size() > 4)
            throw InputError({path, lineNo, 5, "too many fields: expected ip,host[,switch[,gpus]]"});
        const auto ip = IpAddr::parse(field(col.ip));
        if (!ip)
            throw InputError({path, lineNo, std::uint32_t(col.ip + 1),
                              "\"" + std::string(field(col.ip)) + "\" is not an IP address: expected ip,host[,switch[,gpus]]"});
        const std::string_view hostName = field(col.host);
        if (hostName.empty()) throw InputError({path, lineNo, std::uint32_t(col.host + 1), "a host name is missing"});
        if (const auto [it, added] = lineOfIp.try_emplace(*ip, lineNo); !added)
            throw InputError({path, lineNo, std::uint32_t(col.ip + 1),
                              "NIC " + ip->toString() + " is listed twice (first on line " +
                                  std::to_string(it->second) + ")"});
        const auto [h, newHost] = hostIndex.try_emplace(std::string(hostName), int(t.hosts.size()));
        if (newHost) t.hosts.push_back({std::string(hostName), {}});
        const int host = h->second;
        Nic nic;
        nic.ip = *ip;
        nic.rail = int(t.hosts[std::size_t(host)].nics.size()); // the host's n-th NIC
        nic.gpus = {nic.rail};
        if (col.sw && !field(*col.sw).empty()) {
            nic.switchName = std::string(field(*col.sw));
            if (switchIndex.try_emplace(nic.switchName, t.switches.size()).second)
                t.switches.push_back({nic.switchName, "leaf", {}});
        }
        if (col.gpus && !field(*col.gpus).empty()) {
            const auto gpus = gpusOf(field(*col.gpus));
            if (!gpus || gpus->empty())
                throw InputError({path, lineNo, std::uint32_t(*col.gpus + 1),
                                  "\"" + std::string(field(*col.gpus)) +
                                      "\" is no GPU list: expected an index (3), a range (0-1) or a list (0;2)"});
            nic.gpus = *gpus;
        }
        t.hosts[std::size_t(host)].nics.push_back(int(t.nics.size()));
        t.nics.push_back(std::move(nic));
    }
    if (t.nics.empty()) throw InputError({path, 0, 0, "no NIC listed: expected lines ip,host[,switch[,gpus]]"});
    t.index();
    return t;
}

} // namespace prism
