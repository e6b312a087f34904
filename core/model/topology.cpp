#include "model/topology.h"

#include <algorithm>

namespace prism {

void Topology::index() {
    m_nicByIp.clear();
    m_switchByName.clear();
    m_hostByName.clear();
    for (int s = 0; s < int(switches.size()); ++s) m_switchByName.emplace(switches[s].name, s);
    for (int h = 0; h < int(hosts.size()); ++h) {
        m_hostByName.emplace(hosts[h].name, h);
        for (int n : hosts[h].nics) nics[n].host = h;
    }
    for (int n = 0; n < int(nics.size()); ++n) {
        m_nicByIp.emplace(nics[n].ip, n);
        auto it = m_switchByName.find(nics[n].switchName);
        nics[n].switchIndex = it == m_switchByName.end() ? -1 : it->second;
    }
}

std::optional<int> Topology::nicByIp(const IpAddr& ip) const {
    auto it = m_nicByIp.find(ip);
    if (it == m_nicByIp.end()) return std::nullopt;
    return it->second;
}

std::optional<int> Topology::switchByName(const std::string& name) const {
    auto it = m_switchByName.find(name);
    if (it == m_switchByName.end()) return std::nullopt;
    return it->second;
}

std::optional<int> Topology::hostByName(const std::string& name) const {
    auto it = m_hostByName.find(name);
    if (it == m_hostByName.end()) return std::nullopt;
    return it->second;
}

std::string Topology::rankLabel(const IpAddr& ip) const {
    auto n = nicByIp(ip);
    if (!n || nics[*n].host < 0) return ip.toString();
    const Nic& nic = nics[*n];
    std::string label = hosts[nic.host].name + ":";
    if (nic.gpus.size() <= 1) return label + (nic.gpus.empty() ? std::string("?") : std::to_string(nic.gpus.front()));
    std::vector<int> g = nic.gpus;
    std::sort(g.begin(), g.end());
    if (g.back() - g.front() + 1 == int(g.size()))
        return label + "gpus " + std::to_string(g.front()) + "–" + std::to_string(g.back());
    label += "gpus ";
    for (std::size_t i = 0; i < g.size(); ++i) label += (i ? ", " : "") + std::to_string(g[i]);
    return label;
}

int Topology::gpusBehind(const IpAddr& ip) const {
    auto n = nicByIp(ip);
    return n ? std::max(1, int(nics[std::size_t(*n)].gpus.size())) : 1;
}

int Topology::gpuCount() const {
    int total = 0;
    for (const Nic& n : nics) total += int(n.gpus.size());
    return total;
}

} // namespace prism
