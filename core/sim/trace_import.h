#pragma once
// A real training job's per-rank operation timings as the simulator's schedule (simulate --from-trace,
// docs/SIMULATOR.md "Real traces"): the Chrome/Perfetto trace form of docs/FORMATS.md "Real training traces" is
// read into RecordedOps (every forward and backward of every micro-batch, per step, DP rank and PP stage), and a
// SimConfig is built around it: the cluster, the job's shape, the transfer sizes its communication times imply,
// and the truth the trace itself shows (a rank or stage that computes longer than its peers, with what fixing it
// saves, measured by running the same job again with that work at its peers' pace).
#include "sim/simulator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace prism::sim {

// Compute times of a recorded job, the simulator's input in place of forwardNs x jitter. Indexed by step (0..,
// in the trace's order), DP rank, PP stage, model chunk, micro-batch and pass. TP ranks (and context-parallel
// ranks) of one (DP rank, stage) compute in lockstep: one value stands for all of them.
struct RecordedOps {
    int dp = 1, pp = 1, chunks = 1, microBatches = 1, steps = 0;
    std::vector<std::string> stepNames; // the trace's own step numbers (it may sample steps of a longer run)
    std::vector<std::int64_t> computeNs;
    std::vector<std::int64_t> optimizerNs; // per step: the optimizer's time after the gradient sync

    std::size_t index(int step, int d, int p, int chunk, int mb, bool backward) const {
        return ((((std::size_t(step) * dp + d) * pp + p) * chunks + chunk) * microBatches + mb) * 2 + (backward ? 1 : 0);
    }
    std::int64_t compute(int step, int d, int p, int chunk, int mb, bool backward) const {
        return computeNs[index(step, d, p, chunk, mb, backward)];
    }
    std::int64_t& compute(int step, int d, int p, int chunk, int mb, bool backward) {
        return computeNs[index(step, d, p, chunk, mb, backward)];
    }
    // The work of (step, d, p): its forwards and backwards summed.
    std::int64_t work(int step, int d, int p) const;
};

struct TraceOptions {
    std::string metaPath;  // the job's meta YAML (dp_size, pp_size, tp_size, dsp_size, vpp_size); "" = look next to it
    int gpusPerHost = 0;   // 0: one model-parallel group (tp x dsp GPUs) per host, the rest across the network
    std::uint64_t seed = 1;
    bool whatIf = true;    // measure what fixing each labelled anomaly saves (one more simulation each)
};

struct TraceImport {
    SimConfig config;
    std::vector<std::string> notes; // what was read and assumed, for truth.json and the user
};

// Reads the trace (JSON, plain or gzip) and its meta. Throws InputError naming the file, the line where it can,
// and what was expected.
TraceImport importTrace(const std::string& tracePath, const TraceOptions& options);

// The meta file that goes with a trace: `meta-X.yaml` next to `timeline-X.json[.gz]`, else "" .
std::string siblingMetaPath(const std::string& tracePath);

} // namespace prism::sim
