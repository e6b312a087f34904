// Named scenarios for samples, tests and benchmarks. The seed varies jitter, loss, skew, placement details
// and anomaly places; the shapes and sizes of a preset stay the same.
#include "sim/random.h"
#include "sim/simulator.h"

#include <numeric>

namespace prism::sim {

namespace {

constexpr std::uint64_t kPresetStream = 100;
constexpr std::int64_t kMs = 1'000'000;
constexpr std::uint64_t kMiB = std::uint64_t(1) << 20;

std::vector<int> hostRange(int from, int count) {
    std::vector<int> v(static_cast<std::size_t>(count));
    std::iota(v.begin(), v.end(), from);
    return v;
}

void shuffle(std::vector<int>& v, Rng& rng) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[std::size_t(rng.integer(0, std::int64_t(i) - 1))]);
}

JobSpec job(std::string name, int tp, int pp, int dp, std::vector<int> hosts, int microBatches, int steps,
            std::int64_t forwardNs) {
    JobSpec j;
    j.name = std::move(name);
    j.tp = tp;
    j.pp = pp;
    j.dp = dp;
    j.hosts = std::move(hosts);
    j.microBatches = microBatches;
    j.steps = steps;
    j.forwardNs = forwardNs;
    return j;
}

// A GPU of the job picked by the seed: (host, gpu) for an anomaly.
std::pair<int, int> pickGpu(const JobSpec& j, Rng& rng, int avoidHost = -1) {
    const int g = j.gpuCount() / int(j.hosts.size());
    int host = avoidHost;
    while (host == avoidHost) host = j.hosts[std::size_t(rng.integer(0, std::int64_t(j.hosts.size()) - 1))];
    return {host, j.firstGpu + int(rng.integer(0, g - 1))};
}

// Job 0 `a` gets a slow rank (5 steps from `rankStep`, `rankFactor`), a 4x slow link on another host (5 steps
// from `linkStep`) and a 150 ms pause before step 24; the seed shifts them all by 0-2 steps and picks the GPUs.
std::vector<AnomalySpec> threeAnomalies(const JobSpec& a, Rng& rng, int rankStep, double rankFactor, int linkStep) {
    const int shift = int(rng.integer(0, 2));
    auto [rankHost, rankGpu] = pickGpu(a, rng);
    auto [linkHost, linkGpu] = pickGpu(a, rng, rankHost);
    AnomalySpec slowRank{"slow_rank", 0, rankHost, rankGpu, rankStep + shift, rankStep + 4 + shift, rankFactor, 0};
    AnomalySpec slowLink{"slow_link", 0, linkHost, linkGpu, linkStep + shift, linkStep + 4 + shift, 4.0, 0};
    AnomalySpec slowStep{"slow_step", 0, 0, 0, 24 + shift, 24 + shift, 0.0, 150 * kMs};
    return {slowRank, slowLink, slowStep};
}

} // namespace

std::vector<std::string> presetNames() {
    return {"tiny",      "two-jobs", "shared-hosts", "pure-dp", "pure-pp", "deep-pipeline", "anomalies",
            "pp-anomalies", "reuse",    "large", "shared-nics", "restart", "checkpoints", "long-run",
            "zero1",     "fsdp",     "moe",          "moe-ep-lt-dp", "interleaved", "interleaved-nodp", "grad-accum",
            "megatron-64", "megatron-8"};
}

std::optional<SimConfig> makePreset(const std::string& name, std::uint64_t seed) {
    SimConfig c;
    c.preset = name;
    c.seed = seed;
    Rng rng(streamSeed(seed, kPresetStream));
    auto shuffled = [&](int from, int count) {
        std::vector<int> v = hostRange(from, count);
        shuffle(v, rng);
        return v;
    };
    auto offset = [&](std::int64_t base) { return base + rng.integer(0, 5 * kMs); };

    if (name == "tiny") {
        // CI-sized: 32 GPUs, one job, ~20 steps of ~50 ms.
        c.hosts = 4;
        JobSpec a = job("job-a", 8, 2, 2, shuffled(0, 4), 4, 20, 3 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.gradientBytes = 32 * kMiB;
        c.jobs = {a};
    } else if (name == "two-jobs") {
        // Different shapes and step times; job-b starts late and ends early.
        c.hosts = 8;
        std::vector<int> hosts = shuffled(0, 8);
        JobSpec a = job("job-a", 8, 2, 2, {hosts.begin(), hosts.begin() + 4}, 4, 25, 5 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.optimizerNs = 8 * kMs;
        JobSpec b = job("job-b", 8, 1, 4, {hosts.begin() + 4, hosts.end()}, 4, 25, 4 * kMs);
        b.startOffsetNs = offset(300 * kMs);
        b.gradientBytes = 64 * kMiB;
        b.buckets = 3;
        b.channels = 3;
        c.jobs = {a, b};
    } else if (name == "shared-hosts") {
        // Two TP-4 jobs on the same four hosts: GPUs 0-3 and 4-7, so on disjoint rails.
        c.hosts = 4;
        JobSpec a = job("job-a", 4, 2, 2, shuffled(0, 4), 4, 24, 4 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        JobSpec b = job("job-b", 4, 1, 4, shuffled(0, 4), 4, 20, 6 * kMs);
        b.firstGpu = 4;
        b.startOffsetNs = offset(40 * kMs);
        b.gradientBytes = 32 * kMiB;
        c.jobs = {a, b};
    } else if (name == "pure-dp") {
        c.hosts = 8;
        c.lossRate = 0.0;
        JobSpec a = job("job-a", 8, 1, 8, shuffled(0, 8), 4, 20, 5 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.gradientBytes = 96 * kMiB;
        a.buckets = 3;
        c.jobs = {a};
    } else if (name == "pure-pp") {
        c.hosts = 4;
        JobSpec a = job("job-a", 8, 4, 1, shuffled(0, 4), 8, 20, 2 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.optimizerNs = 4 * kMs;
        c.jobs = {a};
    } else if (name == "deep-pipeline") {
        // pp=8 across two host groups, so PP and DP traffic also crosses the spines.
        c.hosts = 16;
        c.hostsPerGroup = 8;
        c.lossRate = 0.01;
        JobSpec a = job("job-a", 8, 8, 2, shuffled(0, 16), 6, 10, 3 * kMs / 2);
        a.startOffsetNs = offset(5 * kMs);
        a.activationBytes = 8 * kMiB;
        a.gradientBytes = 32 * kMiB;
        c.jobs = {a};
    } else if (name == "anomalies") {
        // job-a carries a slow rank, a slow link and a slow step (disjoint step ranges); job-b is clean.
        c.hosts = 10;
        std::vector<int> hosts = shuffled(0, 10);
        JobSpec a = job("job-a", 8, 2, 4, {hosts.begin(), hosts.begin() + 8}, 4, 30, 4 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.optimizerNs = 6 * kMs;
        a.gradientBytes = 24 * kMiB;
        JobSpec b = job("job-b", 8, 1, 2, {hosts.begin() + 8, hosts.end()}, 4, 25, 7 * kMs);
        b.startOffsetNs = offset(20 * kMs);
        c.jobs = {a, b};
        c.anomalies = threeAnomalies(a, rng, 8, 1.6, 16);
    } else if (name == "pp-anomalies") {
        // A pure pipeline (dp = 1: no DP bursts, steps from the PP rhythm) with a slow rank, a slow link and a
        // slow step (disjoint step ranges).
        c.hosts = 4;
        JobSpec a = job("job-a", 8, 4, 1, shuffled(0, 4), 8, 30, 2 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.optimizerNs = 4 * kMs;
        c.jobs = {a};
        c.anomalies = threeAnomalies(a, rng, 5, 2.0, 14);
    } else if (name == "reuse") {
        // job-a ends, then job-b (another shape) runs on the same GPUs after the platform tears one job
        // down and schedules the next (90 s: longer than the analysis job gap of 60 s).
        c.hosts = 4;
        JobSpec a = job("job-a", 8, 2, 2, shuffled(0, 4), 4, 12, 3 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        JobSpec b = job("job-b", 8, 1, 4, shuffled(0, 4), 4, 15, 5 * kMs);
        b.startAfterJob = 0;
        b.startOffsetNs = offset(90'000 * kMs);
        c.jobs = {a, b};
        c.storageRatePerHost = 8.0; // quieter storage keeps the 90 s capture small
        c.ipv6Rate = 4.0;
    } else if (name == "large") {
        // Benchmark scale: 1,280 GPUs in 5 host groups, a 1,024-GPU job and a 256-GPU job, > 5M records.
        c.hosts = 160;
        c.hostsPerGroup = 32;
        c.spines = 8;
        std::vector<int> hosts = shuffled(0, 160);
        JobSpec a = job("job-a", 8, 4, 32, {hosts.begin(), hosts.begin() + 128}, 8, 130, 4 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.optimizerNs = 10 * kMs;
        JobSpec b = job("job-b", 8, 2, 16, {hosts.begin() + 128, hosts.end()}, 8, 200, 3 * kMs);
        b.startOffsetNs = offset(500 * kMs);
        b.activationBytes = 8 * kMiB;
        c.jobs = {a, b};
    } else if (name == "shared-nics") {
        // 4 NICs of 400G per host, each shared by two GPUs: 32 GPUs the network sees as 16 NIC addresses.
        c.hosts = 4;
        c.gpusPerNic = 2;
        c.linkGbps = 400.0;
        JobSpec a = job("job-a", 8, 2, 2, shuffled(0, 4), 4, 25, 3 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.gradientBytes = 32 * kMiB;
        c.jobs = {a};
    } else if (name == "restart") {
        // job-a crashes partway through a step; the platform restarts it on the same GPUs 40 s later with new
        // connections (from its last checkpoint: the restart's steps count from 0 again).
        c.hosts = 4;
        JobSpec a = job("job-a", 8, 2, 2, shuffled(0, 4), 4, 18, 3 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.gradientBytes = 32 * kMiB;
        a.crashes = true;
        JobSpec b = a;
        b.name = "job-a-restart";
        b.crashes = false;
        b.restart = true;
        b.startAfterJob = 0;
        b.steps = 20;
        b.startOffsetNs = offset(40'000 * kMs);
        c.jobs = {a, b};
        c.storageRatePerHost = 8.0; // quieter storage keeps the 40 s capture small
        c.ipv6Rate = 4.0;
    } else if (name == "checkpoints") {
        // A checkpoint every 40 steps stalls the job for ~1.5 s (about 25 steps' worth); three of them, as a
        // pattern needs three occurrences to be told from two unrelated pauses.
        c.hosts = 4;
        JobSpec a = job("job-a", 8, 2, 2, shuffled(0, 4), 4, 130, 3 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.gradientBytes = 32 * kMiB;
        a.channels = 1;
        a.checkpointEvery = 40;
        a.checkpointPauseNs = 1'500 * kMs;
        c.jobs = {a};
        c.storageRatePerHost = 8.0;
        c.ipv6Rate = 4.0;
    } else if (name == "long-run") {
        // A day-long data-parallel job: 2,000 steps of ~45 s, a 60-120 s checkpoint every 500 steps, 4 hosts
        // x 8 GPUs on 4 shared 400G NICs per host. Intra-host parallelism is TP by convention: 8 x 1 x 4.
        // The exporter's active timeout is 1 s (a DP sync of ~2 s makes a few records per QP, not thousands)
        // and the noise is thinned to keep the capture at about a million records.
        c.hosts = 4;
        c.gpusPerNic = 2;
        c.linkGbps = 400.0;
        c.activeTimeoutNs = 1'000 * kMs;
        c.storageRatePerHost = 0.5;
        c.managementRatePerHost = 0.05;
        c.ipv6Rate = 0.2;
        JobSpec a = job("job-a", 8, 1, 4, shuffled(0, 4), 16, 2'000, 900 * kMs);
        a.startOffsetNs = offset(5'000 * kMs);
        a.optimizerNs = 400 * kMs;
        a.computeJitter = 0.05; // steps vary by about 1%, as in training logs
        a.gradientBytes = std::uint64_t(24) << 30; // fp32 gradients of ~6B parameters per TP rank
        a.buckets = 4;
        a.checkpointEvery = 500;
        a.checkpointPauseNs = 90'000 * kMs;
        c.jobs = {a};
    } else if (name == "zero1") {
        // Distributed optimizer (ZeRO-1/2): a gradient reduce-scatter ends each step, the parameter all-gather
        // after the optimizer opens the next one: two DP bursts per step.
        c.hosts = 8;
        JobSpec a = job("job-a", 8, 2, 4, shuffled(0, 8), 8, 25, 3 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.gradientBytes = 32 * kMiB;
        a.distributedOptimizer = true;
        c.jobs = {a};
    } else if (name == "fsdp") {
        // ZeRO-3 / FSDP over 4 hosts: 8 layer groups gathered before their forward and backward, their gradients
        // reduce-scattered after their backward; a group's gather takes about half its forward.
        c.hosts = 4;
        JobSpec a = job("job-a", 8, 1, 4, shuffled(0, 4), 4, 20, 4 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.gradientBytes = 256 * kMiB;
        a.buckets = 8;
        a.zero3 = true;
        c.jobs = {a};
    } else if (name == "moe" || name == "moe-ep-lt-dp") {
        // Mixture of experts: all-to-all among the DP peers of an EP group inside every forward and backward
        // (EP = DP = 4, or EP = 2 < DP = 4: two EP groups per DP group).
        c.hosts = 8;
        JobSpec a = job("job-a", 8, 2, 4, shuffled(0, 8), 4, 20, 3 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.gradientBytes = 32 * kMiB;
        a.channels = 1;
        a.expertParallel = name == "moe" ? 4 : 2;
        c.jobs = {a};
    } else if (name == "interleaved" || name == "interleaved-nodp") {
        // Interleaved 1F1B, two model chunks per stage: stage 3 feeds stage 0 its second chunk, PP is a ring.
        const bool dp = name == "interleaved";
        c.hosts = dp ? 8 : 4;
        JobSpec a = job("job-a", 8, 4, dp ? 2 : 1, shuffled(0, c.hosts), 8, dp ? 20 : 24, 2 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.optimizerNs = 4 * kMs;
        a.activationBytes = 8 * kMiB;
        a.gradientBytes = 32 * kMiB;
        a.virtualStages = 2;
        c.jobs = {a};
    } else if (name == "grad-accum") {
        // Gradient accumulation: three pipeline rounds (each flushed) per DP sync.
        c.hosts = 4;
        JobSpec a = job("job-a", 8, 2, 2, shuffled(0, 4), 4, 20, 2 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.gradientBytes = 32 * kMiB;
        a.accumulation = 3;
        c.jobs = {a};
    } else if (name == "megatron-64") {
        // Modelled on a production Megatron-LM job (issue 12): 64 GPUs, TP 4 x PP 4 x DP 4, 32 micro-batches,
        // distributed optimizer, tied embedding, per-micro-batch jitter, one worker slowed 1.5x for 5 steps.
        c.hosts = 8;
        JobSpec a = job("job-a", 4, 4, 4, shuffled(0, 8), 32, 30, 2 * kMs);
        a.startOffsetNs = offset(5 * kMs);
        a.computeJitter = 0.1; // per micro-batch; the trace shows 0.1-0.3 with unpacked sequence lengths
        a.activationBytes = 8 * kMiB;
        a.gradientBytes = 64 * kMiB;
        a.distributedOptimizer = true;
        a.tiedEmbedding = true;
        c.jobs = {a};
        const int shift = int(rng.integer(0, 10));
        auto [host, gpu] = pickGpu(a, rng);
        c.anomalies = {{"slow_rank", 0, host, gpu, 8 + shift, 12 + shift, 1.5, 0}};
    } else if (name == "megatron-8") {
        // Modelled on a production Megatron-LM job (issue 12): 8 GPUs, PP 4 x DP 2 (TP 1, one GPU on each of 8
        // hosts so every stage boundary and DP pair crosses the network), 16 micro-batches, distributed
        // optimizer, tied embedding, the last stage (loss, vocabulary) 1.6x longer, as in Megatron's trace.
        c.hosts = 8;
        JobSpec a = job("job-a", 1, 4, 2, shuffled(0, 8), 16, 30, 8 * kMs);
        a.firstGpu = int(rng.integer(0, 7));
        a.startOffsetNs = offset(5 * kMs);
        a.computeJitter = 0.1; // per micro-batch; the trace shows 0.1-0.3 with unpacked sequence lengths
        a.optimizerNs = 10 * kMs;
        a.gradientBytes = 256 * kMiB;
        a.embeddingBytes = 256 * kMiB;
        a.distributedOptimizer = true;
        a.tiedEmbedding = true;
        a.lastStageFactor = 1.6;
        c.jobs = {a};
    } else {
        return std::nullopt;
    }
    return c;
}

} // namespace prism::sim
