#pragma once
// Cluster + LLM-training traffic simulator with ground truth: the test oracle of the whole engine.
// It models a rail-optimized cluster (one NIC per GPU or per GPU pair, one leaf per host group and rail), jobs with
// TP/PP/DP in Megatron rank order, a 1F1B pipeline schedule with real dependencies, ring all-reduce in
// buckets, NCCL-like channels (several QPs per connection), an exporter (active timeout, loss, per-leaf
// clock skew), non-RoCE noise, and injected anomalies. Everything is deterministic by seed.
#include "model/flow_table.h"
#include "model/report.h"
#include "model/topology.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace prism::sim {

struct RecordedOps; // sim/trace_import.h

struct AnomalySpec {
    std::string kind;         // slow_rank | slow_link | slow_step (| slow_stage, dp_imbalance: recorded only)
    int job = 0;              // index into SimConfig::jobs
    int host = 0;             // cluster host index (slow_rank, slow_link); must hold one of the job's GPUs
    int gpu = 0;              // GPU on that host; for slow_link its NIC is the slow one
    int firstStep = 0;        // step range of the job, inclusive
    int lastStep = 0;
    double factor = 2.0;      // slow_rank: compute time x factor; slow_link: bandwidth / factor
    std::int64_t pauseNs = 0; // slow_step: extra pause before each step of the range (firstStep >= 1)
    // Truth only: the anomaly is in a recorded job's own compute times (JobSpec::recorded), found there by the
    // trace import; nothing is injected. slow_rank names (host, gpu), slow_stage its `stage`.
    bool recorded = false;
    bool optional = false; // truth: the network cannot be expected to show it (Finding::optional)
    int stage = -1;
    double savesMsPerStep = -1.0, savesShare = -1.0; // the import's what-if (Finding::savesMsPerStep)
};

struct JobSpec {
    std::string name;
    int tp = 8, pp = 1, dp = 1;
    std::vector<int> hosts; // cluster host indices, in rank order (rank r lives on hosts[r / gpusPerHostUsed])
    int firstGpu = 0;       // the job uses GPUs firstGpu .. firstGpu + tp*pp*dp/hosts.size() - 1 of each host
    int microBatches = 8;
    int steps = 20;
    std::int64_t startOffsetNs = 0; // from the capture start, or from the end of startAfterJob
    int startAfterJob = -1;         // index of an earlier job this one follows (only then may they share GPUs)

    std::int64_t forwardNs = 3'000'000;                 // forward compute of one micro-batch on one stage
    double backwardRatio = 2.0;                         // backward = ratio x forward
    std::int64_t optimizerNs = 5'000'000;               // gap between the DP sync end and the next step
    std::uint64_t activationBytes = std::uint64_t(16) << 20; // one micro-batch at a stage boundary (split over TP)
    std::uint64_t gradientBytes = std::uint64_t(48) << 20;   // gradients of one (stage, TP rank), all-reduced
    int buckets = 2;                                    // all-reduce buckets per step
    int channels = 2;                                   // NCCL channels: parallel QPs per connection
    double computeJitter = 0.02;                        // lognormal sigma of compute times

    // Periodic stalls (checkpoints, evaluation): a job-wide pause before steps N, 2N, ... of about
    // checkpointPauseNs (uniform in +-25%); truth: one periodic_stall anomaly. 0: none.
    int checkpointEvery = 0;
    std::int64_t checkpointPauseNs = 0;
    // The job crashes after its `steps` full steps: it dies partway through one more (flows, no truth step).
    bool crashes = false;
    // This job is a restart of startAfterJob (which crashed): the same GPUs, new connections (new QPs and
    // UDP source ports); truth restart_of names that job.
    bool restart = false;

    // Production styles (docs/SIMULATOR.md). Distributed optimizer (ZeRO-1/2): per step a gradient
    // reduce-scatter over DP (it ends the step), the optimizer on the shard, then the parameter all-gather that
    // opens the next step, overlapped with its first forwards. Needs dp > 1.
    bool distributedOptimizer = false;
    // ZeRO-3 / FSDP (pp = 1, dp > 1): `buckets` layer groups, each all-gathered before its forward and again
    // before its backward, its gradients reduce-scattered after its backward; the last reduce-scatter ends the step.
    bool zero3 = false;
    // Mixture of experts: expert-parallel groups of expertParallel consecutive DP ranks (dividing dp, >= 2)
    // all-to-all (dispatch and combine) inside every forward and backward micro-batch; 0: no experts.
    int expertParallel = 0;
    std::uint64_t expertBytes = std::uint64_t(4) << 20; // one rank's tokens to one peer, median (split over TP)
    // Interleaved 1F1B: model chunks per stage (Megatron's virtual pipeline; microBatches % pp == 0). The
    // last stage feeds stage 0 its next chunk, so PP traffic forms a ring.
    int virtualStages = 1;
    int accumulation = 1; // gradient accumulation: rounds of the whole pipeline per DP sync
    // The gradient sync overlapped with the backward (Megatron's overlap_grad_reduce, PyTorch DDP): each stage's
    // buckets are synced as the last micro-batch's backward produces them (bucket b of B once every member has
    // run (b + 1) / B of it), one after another on the DP communicator.
    bool overlapGradSync = false;
    // Tied embedding (pp > 1): an all-reduce of embeddingBytes between stage 0 and the last stage of each
    // pipeline after the backward, before the DP gradient sync (as in Megatron's trace).
    bool tiedEmbedding = false;
    std::uint64_t embeddingBytes = std::uint64_t(64) << 20; // per TP rank
    // The last stage computes this much longer (loss, vocabulary); truth: a slow_stage anomaly when > 1.
    double lastStageFactor = 1.0;
    // Per stage, the gradients each (stage, TP rank) syncs (a stage holding the embedding has more); empty: all
    // gradientBytes.
    std::vector<std::uint64_t> stageGradientBytes;
    // A real job's compute times (simulate --from-trace): every forward and backward takes its recorded time
    // (times any injected slow_rank factor) instead of forwardNs x jitter, and the optimizer its recorded time.
    std::shared_ptr<const RecordedOps> recorded;

    std::uint64_t gradientBytesOf(int stage) const {
        return stage < int(stageGradientBytes.size()) ? stageGradientBytes[std::size_t(stage)] : gradientBytes;
    }
    int gpuCount() const { return tp * pp * dp; }
};

struct SimConfig {
    std::string preset;
    std::uint64_t seed = 1;

    // Cluster
    int hosts = 4;
    int gpusPerHost = 8;    // GPUs per host
    int gpusPerNic = 1;     // NIC k of a host serves GPUs k*gpusPerNic.. (k + 1)*gpusPerNic - 1, on rail k
    int hostsPerGroup = 16; // hosts sharing one leaf per rail
    int spines = 2;
    double linkGbps = 200.0;
    std::int64_t linkLatencyNs = 4'000;
    double nvlinkGbps = 2'400.0; // intra-host transfers: timed, never captured
    double transferJitter = 0.01;

    // Capture and exporter
    std::int64_t captureStartNs = 1793491200000000000; // 2026-11-01T00:00:00Z
    std::int64_t tailNs = 20'000'000;                  // the capture goes on this long after the last job
    std::int64_t activeTimeoutNs = 1'000'000;          // a record longer than this is split
    double lossRate = 0.005;                           // fraction of records lost
    std::int64_t maxSkewNs = 20'000;                   // per-leaf clock offset, uniform in +-maxSkewNs

    // Non-RoCE noise, records per second
    double storageRatePerHost = 40.0;    // NFS / iSCSI over TCP to 172.16.0.x
    double managementRatePerHost = 4.0;  // ssh, NTP, DNS
    double ipv6Rate = 20.0;              // fd00::/8 management traffic, whole cluster

    std::vector<JobSpec> jobs;
    std::vector<AnomalySpec> anomalies;

    int gpuCount() const { return hosts * gpusPerHost; }
};

// A whole configuration drawn at random from the seed (simulate --random): cluster, shape, schedule, style,
// exporter and anomalies (docs/SIMULATOR.md "Random configurations"); the same seed, the same config.
SimConfig randomConfig(std::uint64_t seed);
// One line saying what a config is (its jobs' shapes and styles, the exporter, the anomalies).
std::string describeConfig(const SimConfig& config);

std::vector<std::string> presetNames();
// nullopt when the name is unknown.
std::optional<SimConfig> makePreset(const std::string& name, std::uint64_t seed);

// An anomaly written "KIND:key=value,..." (the CLI's simulate --anomaly): KIND slow_rank, slow_link or
// slow_step; keys job (index or name, default 0), host (cluster index or node-NNNN), gpu, steps (FIRST-LAST or
// one step, required), factor (slow_rank: compute ×, slow_link: bandwidth ÷; default 2), pause_ms (slow_step,
// required). Without host or gpu the seed picks one of the job's GPUs (`index` tells several apart). Throws
// std::invalid_argument quoting the spec and what was expected; validate() checks it against the job.
AnomalySpec parseAnomaly(const std::string& spec, const SimConfig& config, std::uint64_t seed, int index);

// A job's parameter changed from the command line (simulate --set): "KEY=VALUE[,KEY=VALUE...][,job=J]" with
// keys tp, pp, dp, micro_batches, steps, buckets, channels (whole numbers), forward_ms, optimizer_ms (ms),
// gradient_mib, activation_mib (MiB); job: index or name, default 0. Throws std::invalid_argument quoting the
// spec; validate() checks that the job still fits its hosts.
void applySetting(const std::string& spec, SimConfig& config);

// Throws std::invalid_argument saying what is wrong (a job that does not fit, GPUs shared by concurrent
// jobs, an anomaly outside its job, ...). simulate() calls it first.
void validate(const SimConfig& config);

// The cluster of a config: hosts node-0001.., NIC i = host * nicsPerHost + gpu / gpusPerNic, leaf-g<G>-r<R>,
// spine-<k>.
Topology buildTopology(const SimConfig& config);
// 10.<rail>.<host / 200>.<host % 200 + 1>
IpAddr nicAddress(int host, int rail);

// RoCE records the config should produce before loss, at nominal speed, active-timeout splits included
// (for sizing, e.g. benchmarks, without running the simulation).
std::uint64_t estimateRoceRecords(const SimConfig& config);

struct SimResult {
    FlowTable flows;   // sorted by start time, like a loaded capture
    Topology topology; // indexed
    Report truth;      // jobs in config order, with steps and anomalies
};

// Progress gets a fraction in [0,1] now and then; returning false cancels (throws prism::Cancelled).
SimResult simulate(const SimConfig& config, const std::function<bool(double)>& progress = {});

// What job 0 of `config`, run on its own, drew and waited: ground truth the capture does not carry.
struct RunRecord {
    // Per step: what its DP groups (one per stage) waited at the gradient sync for their last member, each
    // group's members' mean wait, the median over the groups (0 where the step has no sync).
    std::vector<std::int64_t> syncWaitNs;
    // Per (step k, replica d, stage p), at (k * dp + d) * pp + p: the compute drawn (or recorded) for its ops,
    // before any injected slowdown.
    std::vector<double> computeNs;
    std::vector<double> stepNs; // each step's duration, as the truth has it
};
RunRecord recordRun(const SimConfig& config);

// Truth of job 0's own work, which nothing injected (sim/own_work.cpp): replaces its dp_imbalance and chance
// straggler labels with what recordRun shows. Call it after the last change to the config (settings, anomalies).
void labelOwnWork(SimConfig& config);

// Writes DIR/flows.csv (or flows.csv.gz when gzip), DIR/topology.json, DIR/truth.json (truthToJson).
// Creates DIR. flows.csv rows in export order (sorted by end time, as exporters emit them), header
// start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets. Each file is written atomically;
// a stale flows.csv / flows.csv.gz of the other kind is removed. Throws std::runtime_error on I/O failure.
void writeCapture(const SimResult& result, const std::string& dir, bool gzip = false);

struct PcapWriteOptions {
    std::uint64_t seed = 1;               // QP numbers, first PSNs, VLAN hosts, retransmissions and CNPs
    std::uint64_t maxPackets = 12'000'000; // refuse to write more (about 1.3 GB at 112 bytes a packet)
    int ackEvery = 16;                    // the receiver ACKs every N data packets and the last of a message
    double retransmitRate = 0.02;         // RoCE records (of 8+ packets) with a go-back-N retransmission
    double cnpRate = 0.03;                // RoCE records (of 4+ packets) with ECN-CE marks and CNPs
};

struct PcapWriteStats {
    std::uint64_t packets = 0, dataPackets = 0, otherPackets = 0, acks = 0, naks = 0, cnps = 0;
    std::uint64_t retransmitted = 0; // data packets sent again (PSN going back)
    std::uint64_t psnWraps = 0;      // RoCE records whose PSNs wrap past 2^24 - 1
    std::uint64_t vlanFrames = 0, ipv6Packets = 0;
};

// The same capture with the NICs of the first ceil(share x jobs) jobs on IPv6 (10.a.b.c becomes fd10::a:b:c)
// in the topology, their RoCE records and the truth; their other traffic stays on IPv4 (a dual-stack NIC).
// The simulator itself models IPv4 NICs.
SimResult withIpv6Nics(const SimResult& result, double share);

// About how many packets writePcapCapture writes for `result` (data and ACKs; retransmissions, NAKs and CNPs
// not counted).
std::uint64_t pcapPacketCount(const SimResult& result, const PcapWriteOptions& options = {});

// Writes DIR/capture.pcap (nanosecond pcap, Ethernet, snap length 96 with the original lengths kept) instead
// of flows.csv, plus DIR/topology.json and DIR/truth.json; removes a stale flows.csv[.gz]. Each RoCE record
// becomes RDMA WRITE or SEND packets (MTU 4096) of one QP per (src, dst, source port), evenly spread over its
// time, with ACKs back and seeded retransmissions and CNPs; other records become TCP / UDP packets (MTU 1448).
// Throws std::runtime_error when the capture would exceed options.maxPackets, or on I/O failure.
PcapWriteStats writePcapCapture(const SimResult& result, const std::string& dir, const PcapWriteOptions& options = {});

} // namespace prism::sim
