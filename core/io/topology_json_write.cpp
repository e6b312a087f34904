// writeTopologyJson: the topology.json format of docs/FORMATS.md, written atomically (temp file + rename).
#include "io/capture.h"

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace prism {

void writeTopologyJson(const Topology& topology, const std::string& path) {
    // ordered_json keeps the keys in the order docs/FORMATS.md shows them, which is easier to read by eye.
    using json = nlohmann::ordered_json;
    json hosts = json::array();
    for (const Host& h : topology.hosts) {
        json nics = json::array();
        for (int n : h.nics) {
            const Nic& nic = topology.nics.at(std::size_t(n));
            json o;
            o["ip"] = nic.ip.toString();
            // The common one-GPU NIC uses "gpu"; a shared (or GPU-less) NIC lists them all.
            if (nic.gpus.size() == 1)
                o["gpu"] = nic.gpus.front();
            else
                o["gpus"] = nic.gpus;
            o["rail"] = nic.rail;
            if (!nic.switchName.empty()) o["switch"] = nic.switchName; // a hostfile may name none
            nics.push_back(std::move(o));
        }
        json host;
        host["name"] = h.name;
        host["nics"] = std::move(nics);
        hosts.push_back(std::move(host));
    }
    json switches = json::array();
    for (const Switch& s : topology.switches) {
        json o;
        o["name"] = s.name;
        o["tier"] = s.tier;
        o["uplinks"] = s.uplinks;
        switches.push_back(std::move(o));
    }
    json doc;
    doc["hosts"] = std::move(hosts);
    doc["switches"] = std::move(switches);

    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
        out << doc.dump(1) << '\n';
        out.flush();
        if (!out) {
            out.close();
            std::remove(tmp.c_str());
            throw std::runtime_error(path + ": write failed (disk full?)");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot replace the file");
    }
}

} // namespace prism
