// simulate(): the jobs' traffic (JobRun: 1F1B pipelines, DP collectives, the production styles and the
// injected anomalies), the exporter that records it (Emitter) and the noise around it. The config's checks,
// cluster and sizing are cluster.cpp.
#include "sim/simulator.h"

#include "model/diagnostics.h"
#include "sim/placement.h"
#include "sim/random.h"
#include "sim/trace_import.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace prism::sim {

namespace {

// Independent random streams, so that e.g. the noise never shifts the jobs' jitter.
enum Stream : std::uint64_t { kJobStream = 1, kLossStream, kSkewStream, kPortStream, kNoiseStream };

constexpr std::int64_t kUnknown = std::numeric_limits<std::int64_t>::min();

// NCCL communicators with connections (QPs) of their own between the same two ranks.
enum Comm : std::uint64_t { kMainComm = 0, kEmbeddingComm, kExpertComm };
enum class Collective { AllReduce, ReduceScatter, AllGather };

// Appends `x` unless it is there already: where one NIC serves several GPUs it is listed once.
template <typename T> void addOnce(std::vector<T>& v, T x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(std::move(x));
}

// Puts records into the table the way an exporter reports them: split by the active timeout, some lost,
// stamped with the clock of the leaf that exports them.
class Emitter {
public:
    Emitter(const SimConfig& c, const Topology& topo, FlowTable& table)
        : m_c(c), m_topo(topo), m_table(table), m_loss(streamSeed(c.seed, kLossStream)),
          m_nicEndpoint(topo.nics.size(), kNoEndpoint), m_nicSkew(topo.nics.size(), 0) {
        Rng skew(streamSeed(c.seed, kSkewStream));
        std::vector<std::int64_t> leafSkew(topo.switches.size());
        for (std::int64_t& s : leafSkew) s = skew.integer(-c.maxSkewNs, c.maxSkewNs);
        for (std::size_t n = 0; n < topo.nics.size(); ++n) {
            int sw = topo.nics[n].switchIndex;
            m_nicSkew[n] = sw >= 0 ? leafSkew[sw] : 0;
        }
    }

    void roce(int srcNic, int dstNic, std::uint16_t srcPort, std::int64_t start, std::int64_t end,
              std::uint64_t bytes) {
        emit(nicEndpoint(srcNic), nicEndpoint(dstNic), srcPort, kRoceV2Port, kProtoUdp, start, end, bytes, 4096,
             m_nicSkew[srcNic]);
    }

    // Non-RoCE traffic; stampNic is the topology NIC whose leaf exports the record (-1: none, no skew).
    void other(const IpAddr& src, const IpAddr& dst, std::uint16_t srcPort, std::uint16_t dstPort,
               std::uint8_t proto, std::int64_t start, std::int64_t end, std::uint64_t bytes, int stampNic) {
        emit(m_table.endpoints.intern(src), m_table.endpoints.intern(dst), srcPort, dstPort, proto, start, end, bytes,
             1448, stampNic >= 0 ? m_nicSkew[stampNic] : 0);
    }

private:
    static constexpr EndpointId kNoEndpoint = std::numeric_limits<EndpointId>::max();

    EndpointId nicEndpoint(int nic) {
        EndpointId& id = m_nicEndpoint[nic];
        if (id == kNoEndpoint) id = m_table.endpoints.intern(m_topo.nics[nic].ip);
        return id;
    }

    void emit(EndpointId s, EndpointId d, std::uint16_t sport, std::uint16_t dport, std::uint8_t proto,
              std::int64_t start, std::int64_t end, std::uint64_t bytes, std::uint64_t mtu, std::int64_t skew) {
        const std::int64_t timeout = m_c.activeTimeoutNs;
        const std::int64_t len = std::max<std::int64_t>(end - start, 0);
        const std::int64_t pieces = len > timeout ? (len + timeout - 1) / timeout : 1;
        std::uint64_t left = bytes;
        for (std::int64_t k = 0; k < pieces; ++k) {
            const bool last = k == pieces - 1;
            const std::int64_t ps = start + k * timeout;
            const std::int64_t pe = last ? start + len : ps + timeout - 1;
            std::uint64_t b = last ? left : std::uint64_t(double(bytes) * double(timeout) / double(len));
            b = std::min(b, left);
            left -= b;
            // One draw per record, whatever the rate, so the loss pattern depends on the seed only.
            if (m_loss.chance(m_c.lossRate) || b == 0) continue;
            m_table.append(ps + skew, pe + skew, s, d, sport, dport, proto, b, (b + mtu - 1) / mtu);
        }
    }

    const SimConfig& m_c;
    const Topology& m_topo;
    FlowTable& m_table;
    Rng m_loss;
    std::vector<EndpointId> m_nicEndpoint;
    std::vector<std::int64_t> m_nicSkew;
};

// One job over all its steps: the 1F1B pipelines of its DP replicas, then the DP ring all-reduce (and the
// production styles of JobSpec around them).
class JobRun {
public:
    // `avoidPorts`: UDP source ports this job must not draw (those of the run it restarts), or null.
    JobRun(const SimConfig& c, int index, Emitter& em, const std::set<std::uint16_t>* avoidPorts = nullptr)
        : m_c(c), m_j(c.jobs[index]), m_index(index), m_em(em), m_rng(streamSeed(c.seed, kJobStream, index)),
          m_ports(streamSeed(c.seed, kPortStream, index)), m_avoidPorts(avoidPorts),
          m_bytesPerNs(c.linkGbps / 8.0 / c.gpusPerNic), // GPUs sharing a NIC share its bandwidth
          m_nvBytesPerNs(c.nvlinkGbps / 8.0), m_nicsPerHost(nicsPerHost(c)) {
        for (int r = 0; r < m_j.gpuCount(); ++r) m_nicOfRank.push_back(nicOfRank(c, m_j, r));
        const int m = m_j.microBatches;
        const int pp = m_j.pp, v = m_j.virtualStages;
        m_ops.resize(m_j.pp);
        m_lastOpStart.assign(std::size_t(m_j.pp) * m_j.dp, 0);
        for (int p = 0; p < m_j.pp; ++p) {
            if (v > 1) {
                // Megatron's interleaved 1F1B: virtual micro-batch k is micro-batch (k / (pp·v))·pp + k mod pp on
                // chunk (k mod pp·v) / pp going forward, on the chunks in reverse order going backward.
                const int total = m * v, group = pp * v;
                const int warm = std::min((pp - p - 1) * 2 + (v - 1) * pp, total);
                auto fwd = [&](int k) { return Op{true, (k / group) * pp + k % pp, (k % group) / pp}; };
                auto bwd = [&](int k) { return Op{false, (k / group) * pp + k % pp, v - 1 - (k % group) / pp}; };
                for (int i = 0; i < warm; ++i) m_ops[p].push_back(fwd(i));
                for (int i = 0; i < total - warm; ++i) {
                    m_ops[p].push_back(fwd(warm + i));
                    m_ops[p].push_back(bwd(i));
                }
                for (int i = total - warm; i < total; ++i) m_ops[p].push_back(bwd(i));
                continue;
            }
            // 1F1B: warm-up forwards, then one forward one backward, then the cool-down backwards.
            const int warm = std::min(m_j.pp - p - 1, m);
            for (int i = 0; i < warm; ++i) m_ops[p].push_back({true, i});
            for (int i = 0; i < m - warm; ++i) {
                m_ops[p].push_back({true, warm + i});
                m_ops[p].push_back({false, i});
            }
            for (int i = m - warm; i < m; ++i) m_ops[p].push_back({false, i});
        }
        for (const AnomalySpec& a : c.anomalies) {
            if (a.job != index) continue;
            if (a.recorded) continue; // in the recorded times already
            if (a.kind == "slow_rank") {
                int r = rankOf(c, m_j, a.host, a.gpu);
                m_slowRanks.push_back({a, (r / m_j.tp) % m_j.dp, r / (m_j.tp * m_j.dp)});
            } else if (a.kind == "slow_link") {
                m_slowLinks.push_back({a, nicOf(c, a.host, a.gpu)});
            } else if (a.kind == "slow_step") {
                m_slowSteps.push_back(a);
            }
        }
    }

    JobInfo run(std::int64_t startNs, const Topology& topo, const std::function<void()>& stepDone) {
        JobInfo info;
        info.id = m_j.name;
        info.name = m_j.name;
        info.tp = m_j.tp;
        info.pp = m_j.pp;
        info.dp = m_j.dp;
        if (m_j.restart) info.restartOf = m_c.jobs[std::size_t(m_j.startAfterJob)].name;
        describe(info, topo);

        std::int64_t t = startNs;
        std::int64_t prevEnd = kUnknown;
        std::vector<std::int64_t> lastBackward(std::size_t(m_j.pp) * m_j.dp);
        for (int k = 0; k < m_j.steps; ++k) {
            if (k > 0) t += pauseBefore(k);
            m_stepLastPp = kUnknown;
            m_stepLastDp = kUnknown;
            const std::int64_t syncEnd = runStep(k, t, lastBackward);
            // docs/FORMATS.md (truth.json): a step ends with its last DP flow; without visible DP traffic, with its
            // last PP flow.
            const std::int64_t stepEnd = m_stepLastDp != kUnknown ? m_stepLastDp : m_stepLastPp;
            if (stepEnd == kUnknown) throw std::logic_error(jobLabel(m_j, m_index) + ": a step without network flows");
            info.steps.push_back({k, k == 0 ? m_firstFlow : prevEnd, stepEnd, false});
            prevEnd = stepEnd;
            m_endNs = syncEnd;
            t = syncEnd + (m_j.recorded ? m_j.recorded->optimizerNs[std::size_t(k)]
                                        : std::int64_t(double(m_j.optimizerNs) * m_rng.lognormal(m_j.computeJitter)));
            if (stepDone) stepDone();
        }
        if (m_j.crashes) {
            // One more step dies partway through its pipeline: what was sent before the crash is on the wire.
            m_crashAt = t + std::llround(double(m_lastPipelineNs) * m_rng.uniform(0.3, 0.7));
            runStep(m_j.steps, t, lastBackward);
            m_endNs = m_crashAt;
        }
        info.startNs = m_firstFlow;
        info.endNs = m_lastFlow;
        return info;
    }

    // When the job's last step is really over (its last collective done, or its crash), for jobs that follow it.
    std::int64_t endNs() const { return m_endNs; }

    // Every UDP source port the job's connections used.
    std::set<std::uint16_t> usedPorts() const {
        std::set<std::uint16_t> out;
        for (const auto& [key, c] : m_conns) out.insert(c.ports.begin(), c.ports.begin() + m_j.channels);
        return out;
    }

private:
    struct Op {
        bool forward;
        int microBatch;
        int chunk = 0; // model chunk (interleaved pipeline)
    };
    struct Conn {
        std::array<std::uint16_t, kMaxChannels> ports{};
        std::int64_t busyUntil = kUnknown;
    };
    struct SlowRank {
        AnomalySpec spec;
        int d, p;
    };
    struct SlowLink {
        AnomalySpec spec;
        int nic;
    };

    int rank(int t, int d, int p) const { return t + m_j.tp * (d + m_j.dp * p); }
    int nic(int t, int d, int p) const { return m_nicOfRank[std::size_t(rank(t, d, p))]; }
    int hostOf(int nic) const { return nic / m_nicsPerHost; }
    static bool inRange(const AnomalySpec& a, int step) { return step >= a.firstStep && step <= a.lastStep; }

    void describe(JobInfo& info, const Topology& topo) const {
        auto ip = [&](int n) { return topo.nics[std::size_t(n)].ip.toString(); };
        // Groups and chains are of NIC addresses: ranks sharing NICs give identical ones, listed once.
        for (int n : m_nicOfRank) addOnce(info.gpus, ip(n));
        for (int h : m_j.hosts) info.hosts.push_back(topo.hosts[std::size_t(h)].name);
        for (int p = 0; p < m_j.pp; ++p)
            for (int t = 0; t < m_j.tp; ++t) {
                std::vector<std::string> group;
                for (int d = 0; d < m_j.dp; ++d) addOnce(group, ip(nic(t, d, p)));
                addOnce(info.dpGroups, std::move(group));
            }
        // DP groups that never leave their host sync over NVLink only: the network cannot tell them from TP, and
        // the truth says what it can see (docs/FORMATS.md: intra-host parallelism is reported as TP).
        bool dpInsideHosts = m_j.dp > 1;
        for (int p = 0; p < m_j.pp && dpInsideHosts; ++p)
            for (int t = 0; t < m_j.tp && dpInsideHosts; ++t)
                for (int d = 1; d < m_j.dp; ++d)
                    dpInsideHosts = dpInsideHosts && hostOf(nic(t, d, p)) == hostOf(nic(t, 0, p));
        if (dpInsideHosts) {
            info.notes.push_back("DP " + std::to_string(m_j.dp) + " inside each host (TP " + std::to_string(m_j.tp) +
                                 "): the network sees TP " + std::to_string(m_j.tp * m_j.dp) + " x DP 1");
            info.tp *= info.dp;
            info.dp = 1;
            info.dpGroups.clear();
            for (int n : m_nicOfRank) addOnce(info.dpGroups, std::vector<std::string>{ip(n)});
        } else if (const int share = m_c.gpusPerNic / m_j.tp; share > 1 && m_j.dp % share == 0) {
            // DP ranks behind one NIC (GPUs sharing it, TP smaller than the GPUs a NIC serves) look like TP ranks.
            info.notes.push_back("DP ranks " + std::to_string(share) + " to a NIC (TP " + std::to_string(m_j.tp) +
                                 "): the network sees TP " + std::to_string(m_j.tp * share) + " x DP " +
                                 std::to_string(m_j.dp / share));
            info.tp *= share;
            info.dp /= share;
        }
        if (m_j.pp > 1)
            for (int d = 0; d < m_j.dp; ++d)
                for (int t = 0; t < m_j.tp; ++t) {
                    std::vector<std::string> chain;
                    for (int p = 0; p < m_j.pp; ++p) chain.push_back(ip(nic(t, d, p)));
                    addOnce(info.ppChains, std::move(chain));
                }
        for (const AnomalySpec& a : m_c.anomalies) {
            if (a.job != m_index) continue;
            Finding f;
            f.kind = a.kind;
            f.firstStep = a.firstStep;
            f.lastStep = a.lastStep;
            if (a.kind == "slow_rank") {
                const int r = rankOf(m_c, m_j, a.host, a.gpu);
                f.ip = ip(m_nicOfRank[std::size_t(r)]);
                // TP syncs every layer, so the whole TP group shares the slow GPU's pace. With DP inside each host
                // the network's TP group is the stage's ranks on the host, every replica (the reading above).
                for (int t = 0; t < m_j.tp; ++t) addOnce(f.group, ip(m_nicOfRank[std::size_t(r - r % m_j.tp + t)]));
                const int stage = r / (m_j.tp * m_j.dp);
                for (int d = 0; dpInsideHosts && d < m_j.dp; ++d)
                    for (int t = 0; t < m_j.tp; ++t) addOnce(f.group, ip(nic(t, d, stage)));
                f.factor = a.factor;
                f.message = "GPU compute x" + std::to_string(a.factor).substr(0, 4) +
                            (a.recorded ? " (in the recorded trace)" : "");
            } else if (a.kind == "slow_link") {
                const int n = nicOf(m_c, a.host, a.gpu);
                f.ip = ip(n);
                f.switchName = topo.nics[std::size_t(n)].switchName;
                f.factor = a.factor;
                f.message = "NIC link bandwidth / " + std::to_string(a.factor).substr(0, 4);
            } else if (a.kind == "dp_imbalance") {
                f.factor = a.factor;
                f.message = "uneven work across DP replicas: balanced, the job would save " +
                            std::to_string(int(std::lround(100 * a.savesShare))) + "% of its time";
            } else if (a.kind == "slow_stage") {
                f.stage = a.stage;
                f.factor = a.factor;
                f.message = "stage " + std::to_string(a.stage) + " computes x" + std::to_string(a.factor).substr(0, 4) +
                            " of the other stages";
            } else {
                f.message = "job paused " + std::to_string(a.pauseNs / 1'000'000) + " ms before each step";
            }
            f.savesMsPerStep = a.savesMsPerStep;
            f.savesShare = a.savesShare;
            f.optional = a.optional || (!a.recorded && !observable(a));
            info.anomalies.push_back(std::move(f));
        }
        if (m_j.lastStageFactor > 1.0) {
            Finding f;
            f.kind = "slow_stage";
            f.stage = m_j.pp - 1;
            f.firstStep = 0;
            f.lastStep = m_j.steps - 1;
            f.factor = m_j.lastStageFactor;
            f.message = "the last stage computes x" + std::to_string(m_j.lastStageFactor).substr(0, 4) +
                        " (loss and vocabulary)";
            info.anomalies.push_back(std::move(f));
        }
        if (m_j.checkpointEvery > 0) {
            Finding f;
            f.kind = "periodic_stall";
            f.periodSteps = m_j.checkpointEvery;
            for (int k = m_j.checkpointEvery; k < m_j.steps; k += m_j.checkpointEvery) f.occurrences.push_back(k);
            f.firstStep = f.occurrences.front();
            f.lastStep = f.occurrences.back();
            f.message = "job paused about " + std::to_string(m_j.checkpointPauseNs / 1'000'000) + " ms every " +
                        std::to_string(m_j.checkpointEvery) + " steps (checkpoint)";
            info.anomalies.push_back(std::move(f));
        }
    }

    // Whether the network can be expected to show an injected anomaly (else the truth marks it optional): a slow
    // GPU needs pipeline traffic to be placed (in a job without it every ring member starts its sync together:
    // ENGINE.md "Known limits") or an expert all-to-all that leaves its host (an EP block on one host exchanges
    // over NVLink), and must stand out from the job's own variation of a rank's compute per step (the per-op
    // jitter over its 2 x micro-batches x chunks ops, four sigmas, a 25% margin; at least the engine's 8%); a
    // slow link must be 1.25x or more (the engine's 1.2x, with a margin).
    bool observable(const AnomalySpec& a) const {
        if (a.kind == "slow_rank") {
            if (m_j.pp == 1 && !expertsLeaveHost(rankOf(m_c, m_j, a.host, a.gpu))) return false;
            const double ops = 2.0 * m_j.microBatches * m_j.virtualStages * m_j.accumulation;
            return a.factor - 1.0 >= 1.25 * std::max(0.08, 4.0 * m_j.computeJitter / std::sqrt(ops));
        }
        if (a.kind == "slow_link") return a.factor >= 1.25;
        return true;
    }

    // Whether rank r's TP group sends expert all-to-all traffic over the network (an EP peer on another host).
    bool expertsLeaveHost(int r) const {
        const int e = m_j.expertParallel;
        if (e < 2) return false;
        const int t = r % m_j.tp, d = (r / m_j.tp) % m_j.dp, p = r / (m_j.tp * m_j.dp);
        for (int peer = d - d % e; peer < d - d % e + e; ++peer)
            if (peer != d && hostOf(nic(t, d, p)) != hostOf(nic(t, peer, p))) return true;
        return false;
    }

    double computeFactor(int p, int d, int step) const {
        double f = 1.0;
        for (const SlowRank& s : m_slowRanks)
            if (s.p == p && s.d == d && inRange(s.spec, step)) f = std::max(f, s.spec.factor);
        return f;
    }

    double linkFactor(int n, int step) const {
        double f = 1.0;
        for (const SlowLink& s : m_slowLinks)
            if (s.nic == n && inRange(s.spec, step)) f = std::max(f, s.spec.factor);
        return f;
    }

    std::int64_t pauseBefore(int step) {
        std::int64_t pause = 0;
        for (const AnomalySpec& a : m_slowSteps)
            if (inRange(a, step)) pause += a.pauseNs;
        if (m_j.checkpointEvery > 0 && step % m_j.checkpointEvery == 0)
            pause += std::llround(double(m_j.checkpointPauseNs) * m_rng.uniform(0.75, 1.25));
        return pause;
    }

    // The connection from rank a to rank b in a communicator (ranks on GPUs sharing a NIC have connections of
    // their own).
    Conn& conn(int a, int b, Comm comm) {
        const std::uint64_t key = (std::uint64_t(comm) << 60) | (std::uint64_t(a) << 30) | std::uint64_t(b);
        auto [it, inserted] = m_conns.try_emplace(key);
        if (inserted) {
            // One QP per channel, each with its own UDP source port for the life of the job.
            for (int c = 0; c < m_j.channels; ++c) {
                std::uint16_t port = 0;
                do {
                    port = std::uint16_t(m_ports.integer(49152, 65535));
                } while (std::find(it->second.ports.begin(), it->second.ports.begin() + c, port) !=
                             it->second.ports.begin() + c ||
                         (m_avoidPorts && m_avoidPorts->count(port)));
                it->second.ports[std::size_t(c)] = port;
            }
        }
        return it->second;
    }

    // Time to move `bytes` from NIC a to NIC b, before jitter: NVLink inside a host, else the slower link.
    double wireNs(int a, int b, std::uint64_t bytes, int step) const {
        if (hostOf(a) == hostOf(b)) return 1'000.0 + double(bytes) / m_nvBytesPerNs;
        const double slow = std::max(linkFactor(a, step), linkFactor(b, step));
        return double(m_c.linkLatencyNs) + double(bytes) * slow / m_bytesPerNs;
    }

    void noteFlow(std::int64_t start, std::int64_t end, bool dp) {
        m_firstFlow = std::min(m_firstFlow, start);
        m_lastFlow = std::max(m_lastFlow, end);
        std::int64_t& last = dp ? m_stepLastDp : m_stepLastPp;
        last = std::max(last, end);
    }

    // Emits one record per channel for a transfer [start, start + dur] from rank ra to rank rb; returns when the
    // last channel is done. After a crash nothing more is sent.
    std::int64_t emitTransfer(int ra, int rb, std::uint64_t bytes, std::int64_t start, double dur, bool dp,
                              Comm comm = kMainComm) {
        if (start >= m_crashAt) return start + std::llround(dur);
        const int a = m_nicOfRank[std::size_t(ra)], b = m_nicOfRank[std::size_t(rb)];
        Conn& c = conn(ra, rb, comm);
        const int channels = m_j.channels;
        std::int64_t done = start;
        for (int ch = 0; ch < channels; ++ch) {
            const std::uint64_t share =
                bytes / std::uint64_t(channels) + (ch == 0 ? bytes % std::uint64_t(channels) : 0);
            // Channels run in parallel and finish a little apart.
            const std::int64_t end =
                start + std::max<std::int64_t>(1, std::llround(dur * (1.0 - 0.01 * m_rng.uniform())));
            m_em.roce(a, b, c.ports[std::size_t(ch)], start, end, share);
            noteFlow(start, end, dp);
            done = std::max(done, end);
        }
        c.busyUntil = done;
        return done;
    }

    // A point-to-point PP transfer from rank ra to rank rb ready at `ready`; returns its arrival time.
    std::int64_t send(int ra, int rb, std::uint64_t bytes, std::int64_t ready, int step) {
        const int a = m_nicOfRank[std::size_t(ra)], b = m_nicOfRank[std::size_t(rb)];
        const double dur = wireNs(a, b, bytes, step) * m_rng.lognormal(m_c.transferJitter);
        if (hostOf(a) == hostOf(b)) return ready + std::llround(dur); // NVLink: never on the network
        const std::int64_t start = std::max(ready, conn(ra, rb, kMainComm).busyUntil); // one message at a time per QP
        return emitTransfer(ra, rb, bytes, start, dur, false);
    }

    // Step k from t in the job's style; returns when its last collective is done.
    std::int64_t runStep(int k, std::int64_t t, std::vector<std::int64_t>& lastBackward) {
        return m_j.zero3 ? fsdpStep(k, t) : pipelineStep(k, t, lastBackward);
    }

    // One step of a pipelined job from t: [the parameter all-gather,] the pipelines of every DP replica
    // (`accumulation` rounds), [the tied-embedding all-reduce,] the DP gradient sync. Returns the sync's end.
    std::int64_t pipelineStep(int k, std::int64_t t, std::vector<std::int64_t>& lastBackward) {
        if (m_j.distributedOptimizer) t = allGather(k, t);
        const std::int64_t computeStart = t;
        // Replicas run on their own clocks, except where expert-parallel all-to-alls bind them; with gradient
        // accumulation each starts its next round once its pipeline has drained.
        const int block = std::max(m_j.expertParallel, 1);
        for (int round = 0; round < m_j.accumulation; ++round)
            for (int d = 0; d < m_j.dp; d += block) {
                std::int64_t from = t;
                for (int p = 0; round > 0 && p < m_j.pp; ++p)
                    for (int i = d; i < d + block; ++i)
                        from = std::max(from, lastBackward[std::size_t(p) * m_j.dp + i]);
                pipeline(d, block, k, from, lastBackward);
            }
        if (m_j.tiedEmbedding) embeddingAllReduce(k, lastBackward);
        std::int64_t syncEnd = *std::max_element(lastBackward.begin(), lastBackward.end());
        m_lastPipelineNs = syncEnd - computeStart;
        if (m_j.dp > 1) {
            const Collective sync = m_j.distributedOptimizer ? Collective::ReduceScatter : Collective::AllReduce;
            // A ring starts when its slowest member is ready: each stage syncs after its own last backward, or
            // overlapped, each bucket once every member's last backward has produced it.
            std::vector<std::int64_t> readyOf(std::size_t(m_j.pp), kUnknown);
            for (int p = 0; p < m_j.pp; ++p)
                for (int d = 0; d < m_j.dp; ++d)
                    readyOf[std::size_t(p)] = std::max(readyOf[std::size_t(p)], lastBackward[std::size_t(p) * m_j.dp + d]);
            recordWait(k, lastBackward, readyOf);
            for (int p = 0; p < m_j.pp; ++p) {
                const std::int64_t ready = readyOf[std::size_t(p)];
                std::vector<std::int64_t> bucketReady;
                for (int b = 0; m_j.overlapGradSync && b < m_j.buckets; ++b) {
                    std::int64_t at = kUnknown;
                    for (int d = 0; d < m_j.dp; ++d) {
                        const std::int64_t s0 = m_lastOpStart[std::size_t(p) * m_j.dp + d];
                        const std::int64_t e0 = lastBackward[std::size_t(p) * m_j.dp + d];
                        at = std::max(at, s0 + (e0 - s0) * (b + 1) / m_j.buckets);
                    }
                    bucketReady.push_back(b + 1 == m_j.buckets ? ready : at);
                }
                for (int tt = 0; tt < m_j.tp; ++tt)
                    syncEnd = std::max(syncEnd, ring(p, tt, bucketReady.empty() ? ready : bucketReady[0], k, sync,
                                                     m_j.gradientBytesOf(p), m_j.buckets, nullptr,
                                                     bucketReady.empty() ? nullptr : &bucketReady));
            }
        }
        return syncEnd;
    }

    // The distributed optimizer's parameter all-gather at t, opening a step: returns when the forwards can start
    // (every ring's first bucket is in; the rest arrives while the first forwards run, as in Megatron's trace).
    std::int64_t allGather(int k, std::int64_t t) {
        std::int64_t firstIn = t;
        for (int p = 0; p < m_j.pp; ++p)
            for (int tt = 0; tt < m_j.tp; ++tt) {
                std::int64_t first = t;
                ring(p, tt, t, k, Collective::AllGather, m_j.gradientBytesOf(p), m_j.buckets, &first);
                firstIn = std::max(firstIn, first);
            }
        return firstIn;
    }

    // Tied embedding: stage 0 and the last stage of each pipeline all-reduce the embedding gradients (a
    // two-member ring on a communicator of their own) once both are done with the backward; their DP sync waits.
    void embeddingAllReduce(int step, std::vector<std::int64_t>& lastBackward) {
        const int last = m_j.pp - 1;
        for (int d = 0; d < m_j.dp; ++d) {
            std::int64_t& first = lastBackward[std::size_t(d)];
            std::int64_t& final = lastBackward[std::size_t(last) * m_j.dp + d];
            const std::int64_t ready = std::max(first, final) + m_rng.integer(0, 2'000);
            std::int64_t end = ready;
            for (int tt = 0; tt < m_j.tp; ++tt) {
                const int a = rank(tt, d, 0), b = rank(tt, d, last);
                // Each side sends its half twice (reduce, then share): embeddingBytes in all, both ways at once.
                const double dur = wireNs(nic(tt, d, 0), nic(tt, d, last), m_j.embeddingBytes, step) *
                                   m_rng.lognormal(m_c.transferJitter);
                if (hostOf(nic(tt, d, 0)) == hostOf(nic(tt, d, last))) {
                    end = std::max<std::int64_t>(end, ready + std::llround(dur));
                    continue;
                }
                end = std::max(end, emitTransfer(a, b, m_j.embeddingBytes, ready, dur, false, kEmbeddingComm));
                end = std::max(end, emitTransfer(b, a, m_j.embeddingBytes, ready, dur, false, kEmbeddingComm));
            }
            first = final = end;
        }
    }

    // Expert-parallel dispatch and combine inside one forward or backward of stage p, which the replicas d0 ..
    // d0 + n - 1 of an EP block start together at `start` and compute for dur[i] each: a member sends its tokens
    // when its own compute reaches the exchange (a quarter into the op, then 65%), each TP rank to the same stage
    // and TP rank of every other member (a share that varies per micro-batch and peer: uneven token routing), and
    // no member goes past an exchange before every peer's tokens arrived (an all-to-all is a blocking collective):
    // a slow member's sends come last and the others wait for it there. Returns each member's end.
    std::vector<std::int64_t> expertOp(int p, int d0, int n, std::int64_t start, int step,
                                       const std::vector<double>& dur) {
        std::int64_t released = start; // every member past the last exchange
        double done = 0;               // the share of the op computed by then
        for (double share : {0.25, 0.65}) {
            std::int64_t arrived = released;
            for (int i = 0; i < n; ++i)
                arrived = std::max(arrived, sendTokens(p, d0 + i,
                                                       released + std::llround(dur[std::size_t(i)] * (share - done)),
                                                       step));
            released = arrived;
            done = share;
        }
        std::vector<std::int64_t> ends(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) ends[std::size_t(i)] = released + std::llround(dur[std::size_t(i)] * (1.0 - done));
        return ends;
    }

    // Replica d's tokens to the other members of its EP block at `when`, from each TP rank of stage p; returns
    // when the last one arrived (NVLink peers on its host: `when`, their time is the compute's).
    std::int64_t sendTokens(int p, int d, std::int64_t when, int step) {
        const int e = m_j.expertParallel;
        const int block = d - d % e;
        std::int64_t arrived = when;
        for (int tt = 0; tt < m_j.tp; ++tt)
            for (int peer = block; peer < block + e; ++peer) {
                if (peer == d || hostOf(nic(tt, d, p)) == hostOf(nic(tt, peer, p))) continue;
                const auto bytes = std::max<std::uint64_t>(
                    1, std::uint64_t(double(m_j.expertBytes / std::uint64_t(m_j.tp)) * m_rng.lognormal(0.35)));
                const double dur =
                    wireNs(nic(tt, d, p), nic(tt, peer, p), bytes, step) * m_rng.lognormal(m_c.transferJitter);
                arrived = std::max(arrived, emitTransfer(rank(tt, d, p), rank(tt, peer, p), bytes, when, dur, false,
                                                         kExpertComm));
            }
        return arrived;
    }

    // One ZeRO-3 / FSDP step (pp = 1) from t0, the micro-batches computed as one batch: per layer group an
    // all-gather before its forward and again before its backward (the next group's prefetched while one
    // computes), a reduce-scatter of its gradients after its backward. The collectives of the DP communicator
    // run one at a time. Returns the last reduce-scatter's end.
    std::int64_t fsdpStep(int k, std::int64_t t0) {
        const int dp = m_j.dp, groups = m_j.buckets;
        const std::uint64_t bytes = std::max<std::uint64_t>(1, m_j.gradientBytes / std::uint64_t(groups));
        const double forward = double(m_j.forwardNs) * m_j.microBatches / groups;
        std::vector<std::int64_t> free(std::size_t(dp), t0);
        std::int64_t commFree = t0;
        auto collective = [&](Collective kind, std::int64_t ready) {
            const std::int64_t start = std::max(ready, commFree);
            std::int64_t end = start;
            for (int tt = 0; tt < m_j.tp; ++tt) end = std::max(end, ring(0, tt, start, k, kind, bytes, 1));
            return commFree = end;
        };
        // Every replica computes one layer group once its parameters are in; returns (slowest start, last end).
        auto compute = [&](std::int64_t gathered, double ns) {
            std::int64_t started = kUnknown, done = kUnknown;
            for (int d = 0; d < dp; ++d) {
                const std::int64_t s = std::max(free[std::size_t(d)], gathered);
                const double jitter = m_rng.lognormal(m_j.computeJitter);
                free[std::size_t(d)] = s + std::llround(ns * computeFactor(0, d, k) * jitter);
                started = std::max(started, s);
                done = std::max(done, free[std::size_t(d)]);
            }
            return std::make_pair(started, done);
        };
        std::int64_t gathered = collective(Collective::AllGather, t0);
        for (int g = 0; g < groups; ++g) // the last prefetch gathers the last group again for its backward
            gathered = collective(Collective::AllGather, compute(gathered, forward).first);
        std::int64_t end = gathered;
        for (int g = groups - 1; g >= 0; --g) {
            const auto [started, done] = compute(gathered, forward * m_j.backwardRatio);
            if (g > 0) gathered = collective(Collective::AllGather, started);
            end = collective(Collective::ReduceScatter, done);
        }
        m_lastPipelineNs = end - t0;
        return end;
    }

    // The pipelines of DP replicas d0 .. d0 + n - 1 over one step from t0: one replica on its own (n = 1), or an
    // expert-parallel block (n = EP) whose members start each forward and backward together, as the
    // all-to-all inside it makes them wait for one another.
    void pipeline(int d0, int n, int step, std::int64_t t0, std::vector<std::int64_t>& lastBackward) {
        const int pp = m_j.pp;
        const int m = m_j.microBatches;
        const int v = m_j.virtualStages;
        const int stages = pp * v; // chunk c of stage p is virtual stage c * pp + p
        const std::size_t cells = std::size_t(stages) * m; // per replica
        const std::uint64_t bytes = std::max<std::uint64_t>(1, m_j.activationBytes / std::uint64_t(m_j.tp));
        std::vector<std::int64_t> actArrive(cells * n, kUnknown);
        std::vector<std::int64_t> gradArrive(cells * n, kUnknown);
        std::vector<std::size_t> next(std::size_t(pp), 0); // the block's members advance together
        std::vector<std::int64_t> stageFree(std::size_t(pp) * n, t0);
        std::vector<double> factor(std::size_t(pp) * n);
        for (int i = 0; i < n; ++i)
            for (int p = 0; p < pp; ++p) {
                double& f = factor[std::size_t(i) * pp + p];
                f = computeFactor(p, d0 + i, step);
                if (p == pp - 1 && m_j.lastStageFactor != 1.0) f *= m_j.lastStageFactor;
            }
        std::size_t remaining = std::size_t(pp) * 2 * m * v;
        while (remaining > 0) {
            bool progressed = false;
            for (int p = 0; p < pp; ++p) {
                const std::vector<Op>& ops = m_ops[std::size_t(p)];
                while (next[std::size_t(p)] < ops.size()) {
                    const Op op = ops[next[std::size_t(p)]];
                    const int vs = op.chunk * pp + p;
                    const std::size_t at = std::size_t(vs) * m + op.microBatch;
                    // Real dependencies: a forward waits for its activations, a backward for its gradients.
                    std::int64_t start = kUnknown;
                    bool ready = true;
                    for (int i = 0; i < n && ready; ++i) {
                        std::int64_t dep = t0;
                        if (op.forward && vs > 0) dep = actArrive[i * cells + at];
                        if (!op.forward && vs < stages - 1) dep = gradArrive[i * cells + at];
                        ready = dep != kUnknown;
                        start = std::max(start, std::max(stageFree[std::size_t(i) * pp + p], dep));
                    }
                    if (!ready) break;
                    std::vector<double> dur(static_cast<std::size_t>(n));
                    for (int i = 0; i < n; ++i)
                        dur[std::size_t(i)] = computeNs(op, step, d0 + i, p) * factor[std::size_t(i) * pp + p];
                    std::vector<std::int64_t> ends(static_cast<std::size_t>(n));
                    if (m_j.expertParallel > 1) ends = expertOp(p, d0, n, start, step, dur);
                    else
                        for (int i = 0; i < n; ++i) ends[std::size_t(i)] = start + std::llround(dur[std::size_t(i)]);
                    for (int i = 0; i < n; ++i) {
                        const int d = d0 + i;
                        const std::size_t cell = i * cells + at;
                        const std::int64_t end = ends[std::size_t(i)];
                        stageFree[std::size_t(i) * pp + p] = end;
                        if (next[std::size_t(p)] + 1 == ops.size()) m_lastOpStart[std::size_t(p) * m_j.dp + d] = start;
                        // Interleaved, the last stage feeds stage 0 its next chunk (and gradients go back around).
                        if (op.forward && vs < stages - 1) {
                            const int to = (p + 1) % pp;
                            std::int64_t arrive = end;
                            for (int t = 0; t < m_j.tp; ++t)
                                arrive = std::max(arrive, send(rank(t, d, p), rank(t, d, to), bytes, end, step));
                            actArrive[cell + std::size_t(m)] = arrive; // the next stage needs every TP rank's share
                        }
                        if (!op.forward && vs > 0) {
                            const int to = (p + pp - 1) % pp;
                            std::int64_t arrive = end;
                            for (int t = 0; t < m_j.tp; ++t)
                                arrive = std::max(arrive, send(rank(t, d, p), rank(t, d, to), bytes, end, step));
                            gradArrive[cell - std::size_t(m)] = arrive;
                        }
                    }
                    ++next[std::size_t(p)];
                    --remaining;
                    progressed = true;
                }
            }
            if (!progressed) throw std::logic_error("1F1B schedule deadlock");
        }
        for (int i = 0; i < n; ++i)
            for (int p = 0; p < pp; ++p)
                lastBackward[std::size_t(p) * m_j.dp + d0 + i] = stageFree[std::size_t(i) * pp + p];
    }

    // One forward or backward of (step, d, p) before any slowdown: recorded, or forwardNs (a chunk holds 1/v of the
    // stage's layers) with per-micro-batch jitter.
    double computeNs(const Op& op, int step, int d, int p) {
        const double ns =
            m_j.recorded ? double(m_j.recorded->compute(step, d, p, op.chunk, op.microBatch, !op.forward))
                         : double(m_j.forwardNs) * (op.forward ? 1.0 : m_j.backwardRatio) / m_j.virtualStages *
                               m_rng.lognormal(m_j.computeJitter);
        if (m_record) {
            const std::size_t at = (std::size_t(step) * m_j.dp + std::size_t(d)) * m_j.pp + std::size_t(p);
            if (m_record->computeNs.size() <= at) m_record->computeNs.resize(at + 1, 0.0);
            m_record->computeNs[at] += ns;
        }
        return ns;
    }

public:
    // Where the run notes what it drew and waited (recordRun), or null.
    void recordInto(RunRecord* record) { m_record = record; }

private:
    // What the step's DP groups (one per stage) waited at the sync for their last member: per group its
    // members' mean wait (what the sync would gain if their work were even), the median over the groups.
    void recordWait(int k, const std::vector<std::int64_t>& lastBackward, const std::vector<std::int64_t>& ready) {
        if (!m_record) return;
        std::vector<std::int64_t> perStage;
        for (int p = 0; p < m_j.pp; ++p) {
            std::int64_t sum = 0;
            for (int d = 0; d < m_j.dp; ++d) sum += ready[std::size_t(p)] - lastBackward[std::size_t(p) * m_j.dp + d];
            perStage.push_back(sum / m_j.dp);
        }
        std::nth_element(perStage.begin(), perStage.begin() + perStage.size() / 2, perStage.end());
        std::vector<std::int64_t>& waits = m_record->syncWaitNs;
        if (waits.size() <= std::size_t(k)) waits.resize(std::size_t(k) + 1, 0);
        waits[std::size_t(k)] = perStage[perStage.size() / 2];
    }

    // Ring collective of one (stage, TP rank) over its DP members, `bytes` in `buckets` one after the other;
    // returns its end (and the first bucket's in firstBucketEnd). An all-reduce takes 2(dp-1) chunk steps, a
    // reduce-scatter or an all-gather dp-1.
    std::int64_t ring(int p, int t, std::int64_t ready, int step, Collective kind, std::uint64_t bytes, int buckets,
                      std::int64_t* firstBucketEnd = nullptr, const std::vector<std::int64_t>* bucketReady = nullptr) {
        const int dp = m_j.dp;
        const int chunkSteps = kind == Collective::AllReduce ? 2 * (dp - 1) : dp - 1;
        std::vector<double> hop(std::size_t(dp), 0.0);
        std::vector<std::int64_t> memberEnd(std::size_t(dp), 0);
        const std::uint64_t perBucket = bytes / std::uint64_t(buckets);
        for (int b = 0; b < buckets; ++b) {
            const std::uint64_t bucket = perBucket + (b == buckets - 1 ? bytes % std::uint64_t(buckets) : 0);
            const std::uint64_t chunk = (bucket + std::uint64_t(dp) - 1) / std::uint64_t(dp);
            if (bucketReady) ready = std::max(ready, (*bucketReady)[std::size_t(b)]);
            double slowest = 0.0;
            for (int d = 0; d < dp; ++d) {
                hop[std::size_t(d)] = wireNs(nic(t, d, p), nic(t, (d + 1) % dp, p), chunk, step);
                slowest = std::max(slowest, hop[std::size_t(d)]);
            }
            // Synchronous ring: every chunk step lasts as long as its slowest hop.
            const std::int64_t start = ready + m_rng.integer(0, 2'000);
            double lastStart = double(start);
            for (int s = 0; s + 1 < chunkSteps; ++s) lastStart += slowest * m_rng.lognormal(m_c.transferJitter);
            std::int64_t bucketEnd = start;
            for (int d = 0; d < dp; ++d) {
                memberEnd[std::size_t(d)] =
                    std::llround(lastStart + hop[std::size_t(d)] * m_rng.lognormal(m_c.transferJitter));
                bucketEnd = std::max(bucketEnd, memberEnd[std::size_t(d)]);
            }
            // Back-to-back chunks of one bucket on one QP make one record per channel.
            for (int d = 0; d < dp; ++d) {
                if (hostOf(nic(t, d, p)) == hostOf(nic(t, (d + 1) % dp, p))) continue; // NVLink hop
                emitTransfer(rank(t, d, p), rank(t, (d + 1) % dp, p), chunk * std::uint64_t(chunkSteps), start,
                             double(memberEnd[std::size_t(d)] - start), true);
            }
            ready = bucketEnd;
            if (b == 0 && firstBucketEnd) *firstBucketEnd = bucketEnd;
        }
        return ready;
    }

    const SimConfig& m_c;
    const JobSpec& m_j;
    int m_index;
    Emitter& m_em;
    Rng m_rng;
    Rng m_ports;
    const std::set<std::uint16_t>* m_avoidPorts;
    double m_bytesPerNs;
    double m_nvBytesPerNs;
    int m_nicsPerHost;
    std::vector<int> m_nicOfRank;
    std::vector<std::vector<Op>> m_ops;
    std::vector<std::int64_t> m_lastOpStart; // per (stage, replica): when its last op of the step (a backward) began
    RunRecord* m_record = nullptr;
    std::vector<SlowRank> m_slowRanks;
    std::vector<SlowLink> m_slowLinks;
    std::vector<AnomalySpec> m_slowSteps;
    std::unordered_map<std::uint64_t, Conn> m_conns;
    std::int64_t m_stepLastPp = kUnknown;
    std::int64_t m_stepLastDp = kUnknown;
    std::int64_t m_firstFlow = std::numeric_limits<std::int64_t>::max();
    std::int64_t m_lastFlow = kUnknown;
    std::int64_t m_endNs = 0;
    std::int64_t m_lastPipelineNs = 0;                            // the last full step's compute span
    std::int64_t m_crashAt = std::numeric_limits<std::int64_t>::max(); // nothing is sent from then on
};

IpAddr parseIp(const std::string& text) {
    auto ip = IpAddr::parse(text);
    if (!ip) throw std::logic_error("bad simulator address " + text);
    return *ip;
}

// Storage, management and IPv6 traffic: real captures have it, recognition must ignore it. Never UDP/4791.
void addNoise(const SimConfig& c, const Topology& topo, Emitter& em, std::int64_t from, std::int64_t to) {
    Rng rng(streamSeed(c.seed, kNoiseStream));
    auto ephemeral = [&] { return std::uint16_t(rng.integer(32768, 60999)); };
    auto at = [&](double ratePerSecond) { return std::int64_t(rng.exponential(1e9 / ratePerSecond)); };
    const IpAddr bastion = IpAddr::v4(172, 16, 100, 1);
    const IpAddr ntp = IpAddr::v4(172, 16, 200, 1);
    const IpAddr dns = IpAddr::v4(172, 16, 200, 2);

    for (int h = 0; h < c.hosts; ++h) {
        const int nic0 = h * nicsPerHost(c);
        if (c.storageRatePerHost > 0) {
            const std::uint16_t nfsPort = std::uint16_t(rng.integer(700, 1023)); // one mount, one connection
            for (std::int64_t t = from + at(c.storageRatePerHost); t < to; t += at(c.storageRatePerHost)) {
                const int nic = nic0 + int(rng.integer(0, nicsPerHost(c) - 1));
                const IpAddr& client = topo.nics[std::size_t(nic)].ip;
                const IpAddr server = IpAddr::v4(172, 16, 0, std::uint8_t(1 + rng.integer(0, 7)));
                const bool iscsi = rng.chance(0.3);
                const std::uint16_t port = iscsi ? 3260 : 2049;
                const std::uint16_t clientPort = iscsi ? ephemeral() : nfsPort;
                const auto big = std::uint64_t(std::min(16.0 * 1048576.0, 262144.0 * rng.lognormal(1.0)));
                const auto small = std::uint64_t(rng.integer(200, 2000));
                const bool read = rng.chance(0.6);
                const std::int64_t dur = 20'000 + std::int64_t(double(big) / 3.0);
                em.other(client, server, clientPort, port, kProtoTcp, t, t + dur, read ? small : big, nic);
                em.other(server, client, port, clientPort, kProtoTcp, t + 5'000, t + dur + 5'000, read ? big : small,
                         nic);
            }
        }
        if (c.managementRatePerHost > 0) {
            for (std::int64_t t = from + at(c.managementRatePerHost); t < to; t += at(c.managementRatePerHost)) {
                const double kind = rng.uniform();
                const IpAddr& self = topo.nics[std::size_t(nic0)].ip;
                if (kind < 0.4) { // ssh from the bastion
                    const std::uint16_t port = ephemeral();
                    const std::int64_t dur = rng.integer(50'000, 800'000);
                    em.other(bastion, self, port, 22, kProtoTcp, t, t + dur, std::uint64_t(rng.integer(200, 4000)),
                             nic0);
                    em.other(self, bastion, 22, port, kProtoTcp, t + 2'000, t + dur,
                             std::uint64_t(rng.integer(200, 9000)), nic0);
                } else if (kind < 0.6) { // NTP, one packet each way
                    em.other(self, ntp, 123, 123, kProtoUdp, t, t, 90, nic0);
                    em.other(ntp, self, 123, 123, kProtoUdp, t + 150'000, t + 150'000, 90, nic0);
                } else { // DNS
                    const std::uint16_t port = ephemeral();
                    em.other(self, dns, port, 53, kProtoUdp, t, t, std::uint64_t(rng.integer(60, 90)), nic0);
                    em.other(dns, self, 53, port, kProtoUdp, t + 200'000, t + 200'000,
                             std::uint64_t(rng.integer(100, 300)), nic0);
                }
            }
        }
    }
    if (c.ipv6Rate > 0 && c.hosts > 0) {
        std::vector<IpAddr> servers;
        for (int k = 1; k <= 4; ++k) servers.push_back(parseIp("fd00:0:0:ff::" + std::to_string(k)));
        for (std::int64_t t = from + at(c.ipv6Rate); t < to; t += at(c.ipv6Rate)) {
            const int h = int(rng.integer(0, c.hosts - 1));
            const IpAddr self = parseIp("fd00:0:0:1::" + std::to_string(h + 1));
            const IpAddr& server = servers[std::size_t(rng.integer(0, 3))];
            const std::uint16_t port = ephemeral();
            const std::int64_t dur = rng.integer(20'000, 400'000);
            if (rng.chance(0.5)) { // metrics scrape (node exporter)
                em.other(server, self, port, 9100, kProtoTcp, t, t + dur, std::uint64_t(rng.integer(300, 600)),
                         h * nicsPerHost(c));
                em.other(self, server, 9100, port, kProtoTcp, t + 1'000, t + dur,
                         std::uint64_t(rng.integer(4000, 60000)), h * nicsPerHost(c));
            } else { // ssh
                em.other(server, self, port, 22, kProtoTcp, t, t + dur, std::uint64_t(rng.integer(200, 3000)),
                         h * nicsPerHost(c));
            }
        }
    }
}

} // namespace

RunRecord recordRun(const SimConfig& config) {
    SimConfig c = config;
    c.activeTimeoutNs = std::int64_t(1) << 50;
    c.lossRate = 0;
    c.storageRatePerHost = c.managementRatePerHost = c.ipv6Rate = 0;
    validate(c);
    const Topology topo = buildTopology(c);
    FlowTable table;
    Emitter em(c, topo, table);
    RunRecord record;
    JobRun run(c, 0, em);
    run.recordInto(&record);
    const JobInfo info = run.run(c.captureStartNs + c.jobs.at(0).startOffsetNs, topo, {});
    for (const StepInfo& s : info.steps) record.stepNs.push_back(double(s.durationNs()));
    return record;
}

SimResult simulate(const SimConfig& c, const std::function<bool(double)>& progress) {
    validate(c);
    SimResult res;
    res.topology = buildTopology(c);
    res.flows.reserve(std::size_t(double(estimateRoceRecords(c)) * 1.3) + 1024);
    Emitter em(c, res.topology, res.flows);

    double total = 2.0;
    for (const JobSpec& j : c.jobs) total += j.steps;
    double done = 0.0;
    auto advance = [&](double units) {
        done += units;
        if (progress && !progress(std::min(1.0, done / total))) throw Cancelled();
    };
    if (progress && !progress(0.0)) throw Cancelled();

    std::vector<std::int64_t> jobEnd(c.jobs.size(), c.captureStartNs);
    std::vector<std::set<std::uint16_t>> jobPorts(c.jobs.size());
    std::int64_t lastFlow = c.captureStartNs;
    for (std::size_t i = 0; i < c.jobs.size(); ++i) {
        const JobSpec& j = c.jobs[i];
        const std::int64_t base = j.startAfterJob >= 0 ? jobEnd[std::size_t(j.startAfterJob)] : c.captureStartNs;
        // A restart opens new QPs: whatever the port streams draw, none of the crashed run's ports comes back.
        JobRun run(c, int(i), em, j.restart ? &jobPorts[std::size_t(j.startAfterJob)] : nullptr);
        res.truth.jobs.push_back(run.run(base + j.startOffsetNs, res.topology, [&] { advance(1.0); }));
        jobEnd[i] = run.endNs();
        jobPorts[i] = run.usedPorts();
        lastFlow = std::max(lastFlow, res.truth.jobs.back().endNs);
    }
    addNoise(c, res.topology, em, c.captureStartNs, lastFlow + c.tailNs);
    advance(1.0);
    res.flows.sortByStart();
    res.truth.notes.push_back("simulated capture: preset " + (c.preset.empty() ? std::string("(custom)") : c.preset) +
                              ", seed " + std::to_string(c.seed));
    advance(1.0);
    return res;
}

} // namespace prism::sim
