// Anomalies given on the command line ("KIND:key=value,..."), placed on a preset.
#include "sim/random.h"
#include "sim/simulator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace prism::sim {

namespace {

constexpr std::uint64_t kOverrideStream = 300;

[[noreturn]] void bad(const std::string& spec, const std::string& what) {
    throw std::invalid_argument("anomaly \"" + spec + "\": " + what);
}

int toInt(const std::string& spec, const std::string& key, const std::string& v) {
    int out = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || p != v.data() + v.size() || out < 0)
        bad(spec, key + " expects a non-negative integer, found \"" + v + "\"");
    return out;
}

double toNumber(const std::string& spec, const std::string& key, const std::string& v) {
    double out = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(out) || out <= 0)
        bad(spec, key + " expects a positive number, found \"" + v + "\"");
    return out;
}

} // namespace

AnomalySpec parseAnomaly(const std::string& spec, const SimConfig& config, std::uint64_t seed, int index) {
    AnomalySpec a;
    const auto colon = spec.find(':');
    a.kind = spec.substr(0, colon);
    if (a.kind != "slow_rank" && a.kind != "slow_link" && a.kind != "slow_step")
        bad(spec, "unknown kind \"" + a.kind + "\" (expected slow_rank, slow_link or slow_step)");
    int host = -1, gpu = -1;
    bool steps = false, pause = false;
    std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string item = rest.substr(0, comma);
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
        const auto eq = item.find('=');
        if (eq == std::string::npos) bad(spec, "\"" + item + "\" is not key=value");
        const std::string key = item.substr(0, eq), v = item.substr(eq + 1);
        if (key == "job") {
            a.job = -1;
            for (std::size_t j = 0; j < config.jobs.size(); ++j)
                if (config.jobs[j].name == v) a.job = int(j);
            if (a.job < 0) a.job = toInt(spec, key, v);
            if (a.job >= int(config.jobs.size()))
                bad(spec, "the preset has " + std::to_string(config.jobs.size()) + " jobs, no job " + v);
        } else if (key == "host") {
            // A cluster host index, or its name (node-0001 is host 0).
            host = v.rfind("node-", 0) == 0 ? toInt(spec, key, v.substr(5)) - 1 : toInt(spec, key, v);
            if (host < 0 || host >= config.hosts)
                bad(spec, "host " + v + " is not in the preset's cluster of " + std::to_string(config.hosts) +
                              " hosts");
        } else if (key == "gpu") {
            gpu = toInt(spec, key, v);
        } else if (key == "steps") {
            const auto dash = v.find('-');
            a.firstStep = toInt(spec, key, v.substr(0, dash));
            a.lastStep = dash == std::string::npos ? a.firstStep : toInt(spec, key, v.substr(dash + 1));
            steps = true;
        } else if (key == "factor") {
            a.factor = toNumber(spec, key, v);
        } else if (key == "pause_ms") {
            a.pauseNs = std::llround(toNumber(spec, key, v) * 1e6);
            pause = true;
        } else {
            bad(spec, "unknown key \"" + key + "\" (expected job, host, gpu, steps, factor, pause_ms)");
        }
    }
    if (!steps) bad(spec, "steps=FIRST-LAST is required");
    if (a.kind == "slow_step") {
        if (!pause) bad(spec, "pause_ms is required for slow_step");
        if (host >= 0 || gpu >= 0) bad(spec, "a slow_step is job-wide: no host or gpu");
        return a;
    }
    if (pause) bad(spec, "pause_ms is for slow_step only");
    // Where the anomaly is not given, the seed picks it among the job's GPUs (the same seed, the same GPU).
    const JobSpec& j = config.jobs.at(std::size_t(a.job));
    Rng rng(streamSeed(seed, kOverrideStream, std::uint64_t(index)));
    if (host < 0) host = j.hosts[std::size_t(rng.integer(0, std::int64_t(j.hosts.size()) - 1))];
    if (gpu < 0) gpu = j.firstGpu + int(rng.integer(0, j.gpuCount() / std::int64_t(j.hosts.size()) - 1));
    a.host = host;
    a.gpu = gpu;
    return a; // validate() checks the rest against the job (its GPUs, its steps)
}

void applySetting(const std::string& spec, SimConfig& config) {
    auto fail = [&](const std::string& what) { throw std::invalid_argument("setting \"" + spec + "\": " + what); };
    // The job first (job=J may come anywhere), then the values in order.
    std::vector<std::pair<std::string, std::string>> items;
    int job = 0;
    std::string rest = spec;
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string item = rest.substr(0, comma);
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
        const auto eq = item.find('=');
        if (eq == std::string::npos || eq == 0) fail("\"" + item + "\" is not key=value");
        const std::string key = item.substr(0, eq), v = item.substr(eq + 1);
        if (key != "job") {
            items.push_back({key, v});
            continue;
        }
        job = -1;
        for (std::size_t j = 0; j < config.jobs.size(); ++j)
            if (config.jobs[j].name == v) job = int(j);
        if (job < 0) {
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), job);
            if (ec != std::errc() || p != v.data() + v.size() || job < 0 || job >= int(config.jobs.size()))
                fail("the preset has " + std::to_string(config.jobs.size()) + " jobs, no job " + v);
        }
    }
    if (items.empty()) fail("expected KEY=VALUE");
    JobSpec& j = config.jobs.at(std::size_t(job));
    static const std::vector<std::string> keys = {"tp",           "pp",           "dp",          "micro_batches",
                                                  "steps",        "buckets",      "channels",    "forward_ms",
                                                  "optimizer_ms", "gradient_mib", "activation_mib", "expert_mib",
                                                  "ep", "last_stage", "jitter", "chunks",
                                                  "tied_embedding", "active_timeout_ms"};
    for (const auto& item : items) {
        const auto& [key, v] = item; // the lambdas below capture `item` (clang before 16 cannot capture a binding)
        if (std::find(keys.begin(), keys.end(), key) == keys.end())
            fail("unknown key \"" + key + "\" (expected job, tp, pp, dp, micro_batches, steps, buckets, channels, " +
                 "forward_ms, optimizer_ms, gradient_mib, activation_mib, expert_mib, ep, last_stage, jitter, chunks, " +
                 "tied_embedding, active_timeout_ms)");
        double x = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(x) || x <= 0)
            fail(key + " expects a positive number, found \"" + v + "\"");
        auto whole = [&] {
            if (x != std::floor(x) || x > 1e6)
                fail(item.first + " expects a whole number, found \"" + item.second + "\"");
            return int(x);
        };
        auto mib = [&] { return std::uint64_t(std::llround(x * double(1 << 20))); };
        auto nanos = [&] { return std::int64_t(std::llround(x * 1e6)); };
        if (key == "tp") j.tp = whole();
        else if (key == "pp") j.pp = whole();
        else if (key == "dp") j.dp = whole();
        else if (key == "micro_batches") j.microBatches = whole();
        else if (key == "steps") j.steps = whole();
        else if (key == "buckets") j.buckets = whole();
        else if (key == "channels") j.channels = whole();
        else if (key == "forward_ms") j.forwardNs = nanos();
        else if (key == "optimizer_ms") j.optimizerNs = nanos();
        else if (key == "gradient_mib") j.gradientBytes = mib();
        else if (key == "expert_mib") j.expertBytes = mib();
        else if (key == "ep") j.expertParallel = whole();
        else if (key == "last_stage") j.lastStageFactor = x;
        else if (key == "jitter") j.computeJitter = x;
        else if (key == "chunks") j.virtualStages = whole();
        else if (key == "tied_embedding") j.tiedEmbedding = whole() != 0;
        else if (key == "active_timeout_ms") config.activeTimeoutNs = nanos(); // the capture's, not the job's
        else j.activationBytes = mib();
    }
}

} // namespace prism::sim
