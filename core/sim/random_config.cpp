// simulate --random SEED: a whole training configuration drawn at random (docs/SIMULATOR.md "Random
// configurations"), for the accuracy sweep: the engine is measured on the space of jobs, not on the presets it was
// tuned on. Phases: the cluster and the shape, the schedule and its sizes, the style (optimizer sharding, experts,
// embeddings), the exporter, then anomalies of any strength and length.
#include "sim/random.h"
#include "sim/simulator.h"

#include <algorithm>
#include <cmath>

namespace prism::sim {

namespace {

constexpr std::uint64_t kRandomStream = 200;
constexpr std::int64_t kMs = 1'000'000;
constexpr int kMaxGpus = 256;
constexpr std::uint64_t kMaxRecords = 1'500'000;

double logUniform(Rng& rng, double lo, double hi) { return std::exp(rng.uniform(std::log(lo), std::log(hi))); }

template <typename T> T pick(Rng& rng, const std::vector<T>& v) {
    return v[std::size_t(rng.integer(0, std::int64_t(v.size()) - 1))];
}

std::vector<int> divisorsOf(int n) {
    std::vector<int> out;
    for (int d = 1; d <= n; ++d)
        if (n % d == 0) out.push_back(d);
    return out;
}

// The cluster and the job's shape: GPUs and NICs per host, TP inside a host, PP 1-16, DP 1-64, at most kMaxGpus.
void drawShape(Rng& rng, SimConfig& c, JobSpec& j) {
    c.gpusPerHost = rng.chance(0.8) ? 8 : 4;
    c.gpusPerNic = rng.chance(0.8) ? 1 : 2;
    for (;;) {
        j.tp = pick(rng, std::vector<int>{1, 2, 4, 8});
        j.pp = rng.chance(0.25) ? 1 : int(std::lround(logUniform(rng, 2, 16)));
        j.dp = rng.chance(0.2) ? 1 : int(std::lround(logUniform(rng, 2, 64)));
        if (j.tp > c.gpusPerHost || j.gpuCount() > kMaxGpus || (j.pp == 1 && j.dp == 1)) continue;
        // GPUs the job takes on each host: whole TP groups, the job spread over at least two hosts.
        std::vector<int> per;
        for (int g : divisorsOf(c.gpusPerHost))
            // A host holds whole stages (a pipeline's neighbours on other hosts, as schedulers place them).
            // Whole NICs too: the GPUs behind a NIC are the job's or not (the network cannot tell which of them
            // a job uses).
            if (g % j.tp == 0 && g % c.gpusPerNic == 0 && (j.tp * j.dp) % g == 0 && j.gpuCount() / g >= 2)
                per.push_back(g);
        if (per.empty()) continue;
        const int g = rng.chance(0.7) ? *std::max_element(per.begin(), per.end()) : pick(rng, per);
        const int hosts = j.gpuCount() / g;
        c.hosts = hosts;
        j.hosts.clear();
        for (int h = 0; h < hosts; ++h) j.hosts.push_back(h);
        const int align = std::max(j.tp, c.gpusPerNic);
        j.firstGpu = int(rng.integer(0, (c.gpusPerHost - g) / align)) * align;
        return;
    }
}

// Micro-batches, compute, jitter and the sizes that give the drawn communication share.
void drawSchedule(Rng& rng, const SimConfig& c, JobSpec& j) {
    j.virtualStages = j.pp >= 2 && rng.chance(0.25) ? int(rng.integer(2, 4)) : 1;
    j.microBatches = int(rng.integer(std::max(1, j.pp), 64));
    if (j.virtualStages > 1) j.microBatches = std::max(j.pp, j.microBatches / j.pp * j.pp);
    j.forwardNs = std::llround(logUniform(rng, 0.5e6, 2e9) / j.microBatches * 8); // per step: ~4 ms .. 16 s of forwards
    j.forwardNs = std::clamp<std::int64_t>(j.forwardNs, 500'000, 2'000'000'000);
    j.backwardRatio = rng.uniform(1.5, 2.5);
    j.computeJitter = rng.chance(0.2) ? 0.0 : rng.uniform(0.0, 0.3);
    j.optimizerNs = std::llround(double(j.forwardNs) * rng.uniform(0.5, 4.0));
    const double bytesPerNs = c.linkGbps / 8.0 / c.gpusPerNic;
    // Communication against compute: an activation's transfer against a forward, the gradient sync against the
    // step's compute.
    const double ppShare = logUniform(rng, 0.005, 0.3), dpShare = logUniform(rng, 0.01, 0.4);
    j.activationBytes = std::max<std::uint64_t>(
        4096 * std::uint64_t(j.tp), std::uint64_t(ppShare * double(j.forwardNs) * bytesPerNs * j.tp));
    const double stepCompute = double(j.forwardNs) * (1 + j.backwardRatio) * j.microBatches;
    const double ringFactor = j.dp > 1 ? 2.0 * (j.dp - 1) / j.dp : 1.0;
    j.gradientBytes = std::max<std::uint64_t>(1 << 20, std::uint64_t(dpShare * stepCompute * bytesPerNs / ringFactor));
    j.buckets = int(rng.integer(1, 4));
    j.channels = int(rng.integer(1, 4));
    j.steps = int(rng.integer(12, 40));
}

// Optimizer sharding (ZeRO 0-3), experts, tied embeddings, gradient accumulation, a heavier last stage.
void drawStyle(Rng& rng, JobSpec& j) {
    const int zero = j.dp >= 2 ? int(rng.integer(0, 3)) : 0;
    j.distributedOptimizer = zero == 1 || zero == 2;
    j.zero3 = zero == 3 && j.pp == 1 && j.virtualStages == 1;
    if (zero == 3 && !j.zero3) j.distributedOptimizer = true;
    if (!j.zero3 && j.dp >= 2 && rng.chance(0.2)) {
        std::vector<int> ep;
        for (int e : divisorsOf(j.dp))
            if (e >= 2) ep.push_back(e);
        j.expertParallel = pick(rng, ep);
        j.expertBytes = std::max<std::uint64_t>(4096, j.activationBytes / 2);
    }
    j.tiedEmbedding = j.pp >= 2 && rng.chance(0.3);
    j.embeddingBytes = std::max<std::uint64_t>(1 << 20, j.gradientBytes / 4);
    // Gradient accumulation over flushed pipeline rounds: only where DP traffic reaches the network (a DP group
    // leaves its host: the hosts hold whole stages, tp x dp GPUs of which a host has g); without it a round's
    // drain and a step's look alike (docs/ENGINE.md "Known limits").
    const bool dpOnNetwork = j.tp * j.dp > j.gpuCount() / int(j.hosts.size());
    j.accumulation = !j.zero3 && dpOnNetwork && rng.chance(0.1) ? int(rng.integer(2, 3)) : 1;
    j.overlapGradSync = !j.zero3 && j.dp >= 2 && rng.chance(0.4);
    j.lastStageFactor = j.pp >= 3 && rng.chance(0.15) ? rng.uniform(1.3, 2.0) : 1.0;
}

// The exporter: clock skew up to 1 ms between leaves, up to 2% of the records lost, an active timeout.
void drawExporter(Rng& rng, SimConfig& c) {
    c.maxSkewNs = rng.chance(0.2) ? 0 : std::llround(logUniform(rng, 1e3, 1e6));
    c.lossRate = rng.chance(0.3) ? 0.0 : rng.uniform(0.0, 0.02);
    c.activeTimeoutNs = pick(rng, std::vector<std::int64_t>{1 * kMs, 5 * kMs, 50 * kMs, 1000 * kMs});
}

// Up to two anomalies of any strength (1.05x-3x) and length (one step to the whole run); one in five draws is a
// straggler slowed 2-3x all through the job, which its peers wait for most of each step.
void drawAnomalies(Rng& rng, SimConfig& c) {
    const JobSpec& j = c.jobs[0];
    const int g = j.gpuCount() / int(j.hosts.size());
    auto gpu = [&] {
        return std::pair(j.hosts[std::size_t(rng.integer(0, std::int64_t(j.hosts.size()) - 1))],
                         j.firstGpu + int(rng.integer(0, g - 1)));
    };
    if (rng.chance(0.2)) {
        auto [host, at] = gpu();
        c.anomalies.push_back({"slow_rank", 0, host, at, 0, j.steps - 1, rng.uniform(2.0, 3.0), 0});
        return;
    }
    const int n = rng.chance(0.3) ? 0 : int(rng.integer(1, 2));
    for (int i = 0; i < n; ++i) {
        const bool whole = rng.chance(0.2);
        const int first = whole ? 0 : int(rng.integer(2, j.steps - 3));
        const int last = whole ? j.steps - 1 : std::min(j.steps - 2, first + int(rng.integer(0, 5)));
        auto [host, at] = gpu();
        const double kind = rng.uniform();
        if (kind < 0.45)
            c.anomalies.push_back({"slow_rank", 0, host, at, first, last, logUniform(rng, 1.05, 3.0), 0});
        else if (kind < 0.8)
            c.anomalies.push_back({"slow_link", 0, host, at, first, last, logUniform(rng, 1.05, 3.0), 0});
        else if (!whole)
            c.anomalies.push_back({"slow_step", 0, 0, 0, std::max(1, first), std::max(1, first), 0.0,
                                   std::llround(double(j.forwardNs) * j.microBatches * logUniform(rng, 0.3, 3.0))});
    }
}

} // namespace

SimConfig randomConfig(std::uint64_t seed) {
    Rng rng(streamSeed(seed, kRandomStream));
    for (;;) {
        SimConfig c;
        c.preset = "random";
        c.seed = seed;
        JobSpec j;
        j.name = "job-a";
        drawShape(rng, c, j);
        drawSchedule(rng, c, j);
        drawStyle(rng, j);
        j.startOffsetNs = rng.integer(0, 5 * kMs);
        c.jobs = {j};
        drawExporter(rng, c);
        // Keep a draw analysable on a laptop: fewer steps first, then another draw.
        while (estimateRoceRecords(c) > kMaxRecords && c.jobs[0].steps > 8) c.jobs[0].steps -= 4;
        if (estimateRoceRecords(c) > kMaxRecords) continue;
        drawAnomalies(rng, c);
        try {
            validate(c);
        } catch (const std::invalid_argument&) {
            continue;
        }
        // Replicas whose drawn work differs enough make the job wait at every sync: truth of its own
        // (dp_imbalance), measured by running the job again with each op at its replicas' mean.
        labelOwnWork(c);
        return c;
    }
}

std::string describeConfig(const SimConfig& c) {
    std::string out;
    for (const JobSpec& j : c.jobs) {
        out += j.name + ": TP " + std::to_string(j.tp) + " x PP " + std::to_string(j.pp) + " x DP " +
               std::to_string(j.dp) + " on " + std::to_string(j.hosts.size()) + " hosts of " +
               std::to_string(c.gpusPerHost) + " GPUs (" + std::to_string(c.gpusPerNic) + " a NIC), " +
               std::to_string(j.microBatches) + " micro-batches, forward " +
               std::to_string(double(j.forwardNs) / 1e6).substr(0, 6) + " ms, jitter " +
               std::to_string(j.computeJitter).substr(0, 4) + ", " + std::to_string(j.steps) + " steps";
        if (j.virtualStages > 1) out += ", " + std::to_string(j.virtualStages) + " chunks a stage";
        if (j.distributedOptimizer) out += ", distributed optimizer";
        if (j.zero3) out += ", ZeRO-3";
        if (j.expertParallel) out += ", EP " + std::to_string(j.expertParallel);
        if (j.tiedEmbedding) out += ", tied embedding";
        if (j.accumulation > 1) out += ", accumulation " + std::to_string(j.accumulation);
        if (j.overlapGradSync) out += ", sync overlapped with the backward";
        if (j.lastStageFactor > 1) out += ", last stage x" + std::to_string(j.lastStageFactor).substr(0, 4);
        out += ", " + std::to_string(j.buckets) + " buckets, " + std::to_string(j.channels) + " channels; ";
    }
    out += "skew " + std::to_string(c.maxSkewNs / 1000) + " us, loss " + std::to_string(c.lossRate * 100).substr(0, 4) +
           "%, active timeout " + std::to_string(c.activeTimeoutNs / kMs) + " ms";
    for (const AnomalySpec& a : c.anomalies)
        out += "; " + a.kind + " steps " + std::to_string(a.firstStep) + "-" + std::to_string(a.lastStep) +
               (a.kind == "slow_step" ? " pause " + std::to_string(a.pauseNs / kMs) + " ms"
                                      : " x" + std::to_string(a.factor).substr(0, 4));
    return out;
}

} // namespace prism::sim
