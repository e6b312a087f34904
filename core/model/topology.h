#pragma once
// Cluster topology: hosts, their NICs (ip, GPUs served, rail, leaf switch), switches and uplinks.
#include "model/ip.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace prism {

struct Nic {
    IpAddr ip;
    std::vector<int> gpus; // GPU indices on the host this NIC serves (usually one)
    int rail = 0;
    std::string switchName; // leaf switch the NIC is cabled to
    int host = -1;          // index into Topology::hosts
    int switchIndex = -1;   // index into Topology::switches, -1 when the switch is not listed
};

struct Host {
    std::string name;
    std::vector<int> nics; // indices into Topology::nics
};

struct Switch {
    std::string name;
    std::string tier; // "leaf", "spine", ...
    std::vector<std::string> uplinks;
};

class Topology {
public:
    std::vector<Host> hosts;
    std::vector<Nic> nics;
    std::vector<Switch> switches;

    // Rebuilds the lookup indices and Nic::host / Nic::switchIndex; call after editing the vectors.
    void index();

    std::optional<int> nicByIp(const IpAddr& ip) const;
    std::optional<int> switchByName(const std::string& name) const;
    std::optional<int> hostByName(const std::string& name) const;
    // "node-0001:3" (host name and the NIC's GPU); "node-0001:gpus 0–1" for a NIC shared by GPUs 0 and 1
    // ("gpus 0, 2" when they are not consecutive); the IP text when the NIC is unknown.
    std::string rankLabel(const IpAddr& ip) const;
    int gpuCount() const;
    // GPUs behind a NIC address, counted from the topology: a shared NIC counts its GPUs, an address the
    // topology does not know (or a NIC listing no GPU) counts as one.
    int gpusBehind(const IpAddr& ip) const;
    bool empty() const { return hosts.empty(); }

private:
    std::unordered_map<IpAddr, int, IpAddrHash> m_nicByIp;
    std::unordered_map<std::string, int> m_switchByName;
    std::unordered_map<std::string, int> m_hostByName;
};

} // namespace prism
