#pragma once
// Where a job's ranks sit in the simulated cluster: GPU -> NIC -> rank arithmetic shared by the simulation
// (simulator.cpp) and the checks and sizing of a config (cluster.cpp). Internal to core/sim.
#include "sim/simulator.h"

#include <algorithm>
#include <string>

namespace prism::sim {

inline constexpr int kMaxChannels = 16;

inline int gpusUsedPerHost(const JobSpec& j) { return j.hosts.empty() ? 0 : j.gpuCount() / int(j.hosts.size()); }

inline int nicsPerHost(const SimConfig& c) { return c.gpusPerHost / std::max(c.gpusPerNic, 1); }

// Topology NIC index of GPU `gpu` of host `host`: NIC k serves GPUs k*gpusPerNic.. of its host.
inline int nicOf(const SimConfig& c, int host, int gpu) {
    return host * nicsPerHost(c) + gpu / std::max(c.gpusPerNic, 1);
}

// Topology NIC index of the job's global rank r (ranks fill hosts in order, GPUs firstGpu.. on each).
inline int nicOfRank(const SimConfig& c, const JobSpec& j, int r) {
    int g = gpusUsedPerHost(j);
    return nicOf(c, j.hosts[r / g], j.firstGpu + r % g);
}

// Job rank of (host, gpu), or -1 when that GPU is not the job's.
inline int rankOf(const SimConfig& c, const JobSpec& j, int host, int gpu) {
    int g = gpusUsedPerHost(j);
    auto it = std::find(j.hosts.begin(), j.hosts.end(), host);
    if (it == j.hosts.end() || gpu < j.firstGpu || gpu >= j.firstGpu + g || gpu >= c.gpusPerHost) return -1;
    return int(it - j.hosts.begin()) * g + (gpu - j.firstGpu);
}

inline std::string jobLabel(const JobSpec& j, std::size_t i) {
    return "job " + (j.name.empty() ? std::to_string(i) : "\"" + j.name + "\"");
}

} // namespace prism::sim
