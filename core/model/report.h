#pragma once
// The report vocabulary (docs/FORMATS.md "The report"), shared by analysis results and simulator ground truth
// (truth.json), so that one can be scored against the other.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace prism {

struct StepInfo {
    int index = 0;
    std::int64_t startNs = 0;
    std::int64_t endNs = 0;
    bool slow = false;
    std::int64_t durationNs() const { return endNs - startNs; }
};

// A finding (report) or an injected anomaly (truth). Fields that do not apply are empty.
struct Finding {
    std::string kind; // slow_rank | slow_link | slow_step | slow_switch
    std::string ip;
    std::string srcIp;
    std::string dstIp;
    std::string switchName;
    std::vector<std::string> group; // truth only: NIC ips that share the fate of `ip` (its TP group)
    int firstStep = 0;
    int lastStep = 0;
    double score = 0.0;
    double factor = 0.0; // truth only: slowdown factor that was injected
    std::string message;
    // Report extension: the numbers behind the finding, for the UI (name with its unit, value), e.g.
    // {"step_ms", 205.3}, {"median_step_ms", 52.1}.
    std::vector<std::pair<std::string, double>> evidence;
    // Extensions (DESIGN "later fields"): the PP stage a slow_stage finding names (-1: none); a pattern
    // finding (periodic_stall) gives its period in steps and the steps where it occurred.
    int stage = -1;
    int periodSteps = 0;
    std::vector<int> occurrences;
    // Extension (DESIGN "later fields"): what fixing it would save, a what-if with the rank, link or stage at its
    // peers' pace: per step of the finding, and as a share of the job's time in its steps. Negative: not known.
    double savesMsPerStep = -1.0;
    double savesShare = -1.0;
    // Truth only: an anomaly the network cannot be expected to show (within the job's own variation, or of a
    // kind its traffic cannot place); finding it is right, missing it is no miss (docs/EVALUATION.md).
    bool optional = false;
};

struct JobInfo {
    std::string id;   // report: "job-0"; truth: the job name
    std::string name; // optional human name
    std::vector<std::string> gpus;
    std::vector<std::string> hosts;
    int tp = 0;
    int pp = 0;
    int dp = 0;
    std::vector<std::vector<std::string>> dpGroups;
    std::vector<std::vector<std::string>> ppChains;
    std::vector<StepInfo> steps;
    std::vector<Finding> findings;  // report
    std::vector<Finding> anomalies; // truth
    std::vector<std::string> notes;
    std::string restartOf;    // extension: id of the job this one restarted (same GPUs, new connections)
    int gpuCount = 0;         // extension: GPUs counted from the topology (a shared NIC counts its GPUs); 0: unknown
    // GPUs of the job: gpuCount when known, else one per NIC address.
    int gpuTotal() const { return gpuCount > 0 ? gpuCount : int(gpus.size()); }
    std::int64_t startNs = 0; // first flow of the job (0 when unknown)
    std::int64_t endNs = 0;   // last flow of the job
};

struct CaptureSummary {
    std::string source;
    std::uint64_t records = 0;
    std::uint64_t roceRecords = 0;
    std::uint64_t otherRecords = 0;
    std::uint64_t roceBytes = 0;
    std::uint64_t otherBytes = 0;
    std::uint64_t hosts = 0;
    std::uint64_t nics = 0;
    std::uint64_t endpoints = 0;
    std::uint64_t unknownRoceEndpoints = 0; // RoCE endpoints not in the topology
    std::uint64_t roceEndpoints = 0;        // endpoints in a RoCE record (0: not known, a session of before)
    bool topologyGiven = true;              // false: no topology, each NIC its own host
    std::int64_t firstNs = 0;
    std::int64_t lastNs = 0;
    std::uint64_t skippedRows = 0;
    std::uint64_t warnings = 0;
    std::vector<std::string> messages; // first errors and warnings, for display
};

struct Report {
    std::string format = "llmprism-report";
    int version = 1;
    std::optional<CaptureSummary> capture; // extension: the capture summary
    std::vector<JobInfo> jobs;
    std::vector<std::string> notes;
};

} // namespace prism
