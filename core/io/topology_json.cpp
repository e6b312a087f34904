// topology.json reader (docs/FORMATS.md): hosts[].nics[] and switches[], checked field by field so that each
// error names the JSON path (hosts[3].nics[1].ip), what was found and what was expected.
#include "io/capture.h"
#include "io/topology_csv.h"
#include "io/text_input.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unordered_map>

namespace prism {
namespace {

using nlohmann::json;

class TopologyParser {
public:
    explicit TopologyParser(const std::string& path) : m_path(path) {}

    Topology parse(const json& root) {
        if (!root.is_object()) fail("", "expected a JSON object with \"hosts\" and \"switches\"", root);
        const json* hosts = member(root, "", "hosts", "an array of hosts");
        if (!hosts->is_array()) fail("hosts", "expected an array of hosts", *hosts);
        for (std::size_t h = 0; h < hosts->size(); ++h) host((*hosts)[h], "hosts[" + std::to_string(h) + "]");
        if (auto it = root.find("switches"); it != root.end() && !it->is_null()) {
            if (!it->is_array()) fail("switches", "expected an array of switches", *it);
            for (std::size_t s = 0; s < it->size(); ++s) sw((*it)[s], "switches[" + std::to_string(s) + "]");
        }
        m_topo.index();
        return std::move(m_topo);
    }

private:
    [[noreturn]] void fail(const std::string& where, const std::string& what) {
        throw InputError({m_path, 0, 0, (where.empty() ? std::string("top level") : where) + ": " + what});
    }

    [[noreturn]] void fail(const std::string& where, const std::string& expected, const json& found) {
        fail(where, expected + ", found " + describe(found));
    }

    static std::string describe(const json& v) {
        if (v.is_object()) return "an object";
        if (v.is_array()) return "an array";
        std::string text = v.dump();
        if (text.size() > 40) text = text.substr(0, 37) + "...";
        return std::string(v.type_name()) + " " + text;
    }

    const json* member(const json& obj, const std::string& where, const char* key, const char* expected) {
        auto it = obj.find(key);
        if (it == obj.end()) fail(where, std::string("missing field \"") + key + "\" (expected " + expected + ")");
        return &*it;
    }

    static std::string join(const std::string& where, const std::string& key) {
        return where.empty() ? key : where + "." + key;
    }

    std::string string(const json& obj, const std::string& where, const char* key, bool required) {
        auto it = obj.find(key);
        if (it == obj.end() || (!required && it->is_null())) {
            if (required) fail(where, std::string("missing field \"") + key + "\" (expected a string)");
            return {};
        }
        if (!it->is_string()) fail(join(where, key), "expected a string", *it);
        return it->get<std::string>();
    }

    int nonNegative(const json& v, const std::string& where) {
        if (v.is_number_unsigned() || v.is_number_integer()) {
            auto x = v.get<std::int64_t>();
            if (x < 0 || x > 1'000'000'000) fail(where, "expected a non-negative integer", v);
            return int(x);
        }
        fail(where, "expected a non-negative integer", v);
    }

    void host(const json& h, const std::string& where) {
        if (!h.is_object()) fail(where, "expected a host object {\"name\", \"nics\"}", h);
        Host host;
        host.name = string(h, where, "name", true);
        if (host.name.empty()) fail(join(where, "name"), "expected a non-empty host name");
        if (auto [it, inserted] = m_hostWhere.try_emplace(host.name, where); !inserted)
            fail(join(where, "name"), "duplicate host name \"" + host.name + "\" (also " + it->second + ")");
        int hostIndex = int(m_topo.hosts.size());
        const json* nics = member(h, where, "nics", "an array of NICs");
        if (!nics->is_array()) fail(join(where, "nics"), "expected an array of NICs", *nics);
        for (std::size_t n = 0; n < nics->size(); ++n) {
            host.nics.push_back(int(m_topo.nics.size()));
            nic((*nics)[n], join(where, "nics[" + std::to_string(n) + "]"), host.name, hostIndex);
        }
        m_topo.hosts.push_back(std::move(host));
    }

    void nic(const json& n, const std::string& where, const std::string& hostName, int hostIndex) {
        if (!n.is_object()) fail(where, "expected a NIC object {\"ip\", \"gpu\" or \"gpus\", \"rail\", \"switch\"}", n);
        Nic nic;
        nic.host = hostIndex;
        std::string ipText = string(n, where, "ip", true);
        auto ip = IpAddr::parse(ipText);
        if (!ip) fail(join(where, "ip"), "\"" + ipText + "\" is not an IPv4 or IPv6 address");
        nic.ip = *ip;
        std::string ipKey = ip->toString();
        if (auto [it, inserted] = m_nicWhere.try_emplace(ipKey, NicPlace{where, hostName}); !inserted)
            fail(join(where, "ip"), "duplicate NIC ip " + ipKey + ": on host \"" + hostName +
                                        "\" and already on host \"" + it->second.host + "\" (" + it->second.where +
                                        ")");

        auto gpu = n.find("gpu");
        auto gpus = n.find("gpus");
        bool hasGpu = gpu != n.end() && !gpu->is_null();
        bool hasGpus = gpus != n.end() && !gpus->is_null();
        if (hasGpu && hasGpus) fail(where, "both \"gpu\" and \"gpus\" are given (expected one of them)");
        if (!hasGpu && !hasGpus)
            fail(where, "missing field \"gpu\" (a GPU index) or \"gpus\" (an array of GPU indices)");
        if (hasGpu) {
            nic.gpus.push_back(nonNegative(*gpu, join(where, "gpu")));
        } else {
            if (!gpus->is_array()) fail(join(where, "gpus"), "expected an array of GPU indices", *gpus);
            if (gpus->empty()) fail(join(where, "gpus"), "expected at least one GPU index, found an empty array");
            for (std::size_t i = 0; i < gpus->size(); ++i)
                nic.gpus.push_back(nonNegative((*gpus)[i], join(where, "gpus[" + std::to_string(i) + "]")));
        }
        if (auto rail = n.find("rail"); rail != n.end() && !rail->is_null())
            nic.rail = nonNegative(*rail, join(where, "rail"));
        nic.switchName = string(n, where, "switch", false);
        m_topo.nics.push_back(std::move(nic));
    }

    void sw(const json& s, const std::string& where) {
        if (!s.is_object()) fail(where, "expected a switch object {\"name\", \"tier\", \"uplinks\"}", s);
        Switch out;
        out.name = string(s, where, "name", true);
        if (out.name.empty()) fail(join(where, "name"), "expected a non-empty switch name");
        if (auto [it, inserted] = m_switchWhere.try_emplace(out.name, where); !inserted)
            fail(join(where, "name"), "duplicate switch name \"" + out.name + "\" (also " + it->second + ")");
        out.tier = string(s, where, "tier", false);
        if (auto up = s.find("uplinks"); up != s.end() && !up->is_null()) {
            if (!up->is_array()) fail(join(where, "uplinks"), "expected an array of switch names", *up);
            for (std::size_t i = 0; i < up->size(); ++i) {
                const json& u = (*up)[i];
                if (!u.is_string())
                    fail(join(where, "uplinks[" + std::to_string(i) + "]"), "expected a switch name", u);
                out.uplinks.push_back(u.get<std::string>());
            }
        }
        m_topo.switches.push_back(std::move(out));
    }

    struct NicPlace {
        std::string where;
        std::string host;
    };

    const std::string& m_path;
    Topology m_topo;
    std::unordered_map<std::string, std::string> m_hostWhere;
    std::unordered_map<std::string, std::string> m_switchWhere;
    std::unordered_map<std::string, NicPlace> m_nicWhere;
};

// nlohmann's message without its "[json.exception...] parse error at line L, column C: " prefix.
std::string parseErrorText(const std::string& what) {
    std::string s = what;
    if (auto p = s.find("] "); p != std::string::npos) s = s.substr(p + 2);
    if (s.rfind("parse error", 0) == 0)
        if (auto p = s.find(": "); p != std::string::npos) s = s.substr(p + 2);
    return s;
}

} // namespace

Topology readTopologyJson(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError({path, 0, 0, std::string("cannot open the topology file: ") + std::strerror(errno)});
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw InputError({path, 0, 0, "read error"});
    // Recognised by content: our JSON, or a hostfile with addresses (ip,host[,switch[,gpus]]).
    const auto firstChar = text.find_first_not_of(" \t\r\n");
    if (firstChar != std::string::npos && text[firstChar] != '{' && looksLikeTopologyCsv(text))
        return readTopologyCsv(path, text);
    json root;
    try {
        root = json::parse(text);
    } catch (const json::parse_error& e) {
        // e.byte counts the characters read; the offending one is at e.byte - 1.
        const auto [line, column] = lineColumnAt(text, e.byte == 0 ? 0 : e.byte - 1);
        throw InputError({path, line, column, "invalid JSON: " + parseErrorText(e.what())});
    } catch (const json::out_of_range& e) { // a number too large for any type ("1e999")
        throw InputError(jsonRangeIssue(path, text, e.what(), "invalid JSON: "));
    }
    return TopologyParser(path).parse(root);
}

Topology readTopologyFiles(const std::vector<std::string>& paths) {
    Topology out;
    std::unordered_map<std::string, std::string> fileOfHost, fileOfNic; // name / address -> the file listing it
    std::unordered_map<std::string, int> switchOf;
    for (const std::string& path : paths) {
        const Topology t = readTopologyJson(path);
        for (const Switch& sw : t.switches)
            if (switchOf.try_emplace(sw.name, int(out.switches.size())).second) out.switches.push_back(sw);
        for (const Host& h : t.hosts) {
            if (const auto [it, added] = fileOfHost.try_emplace(h.name, path); !added)
                throw InputError({path, 0, 0, "host \"" + h.name + "\" is listed in " + it->second + " too"});
            Host host{h.name, {}};
            for (int n : h.nics) {
                const std::string ip = t.nics[std::size_t(n)].ip.toString();
                if (const auto [it, added] = fileOfNic.try_emplace(ip, path); !added)
                    throw InputError({path, 0, 0, "NIC " + ip + " of host \"" + h.name + "\" is listed in " +
                                                      it->second + " too"});
                host.nics.push_back(int(out.nics.size()));
                out.nics.push_back(t.nics[std::size_t(n)]);
            }
            out.hosts.push_back(std::move(host));
        }
    }
    out.index();
    return out;
}

} // namespace prism
