#pragma once
// Stage 3: step division. A training step ends when its gradient synchronization ends (docs/FORMATS.md,
// truth.json), so the boundaries come from the job's DP communication bursts:
//   1. per DP group, its records are cut into sync bursts at the quiet gaps that make the burst rhythm most
//      regular (one burst per step);
//   2. bursts of all groups are gathered into sync rounds (a group syncs once per round; rounds are apart by
//      the inter-step quiet time); a step ends at the latest burst end of its round — the max over the DP
//      groups, so one lost record or one early group does not move it;
//   3. exporter clocks are aligned first: members of one stage start their sync together, so the median lag
//      of a leaf switch's NICs behind their peers is that leaf's clock offset (±20 µs skew would otherwise
//      be a 1% error on a short step);
//   4. BOCD (Adams & MacKay, threshold 0.95) runs on the series of intervals between sync rounds: its change
//      points split the job into rhythm regimes, used by diagnosis and shown to the user.
// Jobs without DP traffic (dp = 1) use their PP traffic instead: a step ends where the pipeline is drained
// (every activation sent since the last step has had its gradient back, on the PP links), and among those
// quiet gaps the rhythm chooses as above. Step 0 starts at the job's first record; traffic after the last
// sync end, or after the last drain (a capture that ends mid-step), is not a step.
// The choosers (where a group's activity is cut into bursts) and StepParams are in rhythm.h, the pipeline drain
// test in drains.h, the job's lookups (JobIndex) in job_index.h.
#include "analysis/parallelism.h"
#include "analysis/recognition.h"
#include "analysis/rhythm.h"
#include "model/report.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace prism {

class JobIndex;

enum class StepSource : std::uint8_t { None, DataParallel, Pipeline };
const char* stepSourceName(StepSource source);

struct StepDivision {
    StepSource source = StepSource::None;
    std::vector<StepInfo> steps; // index 0.., in aligned time; step k starts where step k-1 ends
    // Per step, aligned: the first record of the job in the step, and the first and last sync record.
    std::vector<std::int64_t> firstActivityNs;
    std::vector<std::int64_t> syncStartNs;
    std::vector<std::int64_t> syncEndNs;
    std::vector<std::size_t> changePoints; // step indices where BOCD sees a new rhythm (ascending)
    std::vector<double> changeProbability; // per step: BOCD change probability (0 for step 0 and 1)
    bool firstStepCut = false;             // step 0 may have begun before the capture (its start is a guess)
    bool lastStepCut = false;              // traffic continues after the last sync end: a partial step, dropped
    std::int64_t medianStepNs = 0;         // over steps 1.. (step 0 starts at the first record, not a sync end)
    // Per EndpointId: what to subtract from a record's times when that endpoint sent it (the exporter that
    // stamps a record is on the sender's side). Empty when no alignment was done.
    std::vector<std::int64_t> clockOffsetNs;
    std::vector<std::string> notes;
    // Indices in `notes` of the notes on a cut first step and a cut last step, -1 when none (a job analysed
    // window by window keeps them only from the windows at its own edges).
    int firstCutNote = -1, lastCutNote = -1;

    // Expert all-to-all told apart from the ring sync: in a DP group with one-way pairs (a ring's hops) and
    // pairs with traffic both ways (expert exchanges, EP smaller than DP), the ring's sync bursts of each such
    // group, aligned, each from minBoundaryGapNs before its first record to its last record's end; and its
    // both-ways pairs (endpoints ascending within a pair, pairs ascending). Empty for other jobs (with EP = DP
    // every pair of a group goes both ways). Derived while analysing; sessions do not store it.
    struct ExpertPair {
        EndpointId a, b;
        std::uint32_t windows; // index into syncWindowsNs
        auto operator<=>(const ExpertPair&) const = default;
    };
    std::vector<ExpertPair> expertPairs;
    // Per job NIC (JobIndex's local index) its expert group, as expertGroups() gives it (job_index.h), from the DP
    // peers the steps' pass over the records gathered: diagnosis needs no pass of its own. Empty where no steps were
    // divided. Derived while analysing; sessions do not store it.
    std::vector<int> expertGroups;
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> syncWindowsNs;

    std::int64_t offsetOf(EndpointId e) const { return e < clockOffsetNs.size() ? clockOffsetNs[e] : 0; }
    // Whether a record between src and dst that starts at alignedStartNs is an expert exchange: on a both-ways
    // pair above, outside its group's sync bursts.
    bool isExchange(EndpointId src, EndpointId dst, std::int64_t alignedStartNs) const;
};

// captureFirstNs: the first record of the whole capture, to tell whether step 0 may have been cut.
// `index`: the job's JobIndex when the caller has one (the pipeline builds it once per job), else built here.
StepDivision divideSteps(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
                         const ParallelismResult& parallelism, const StepParams& params = {},
                         std::int64_t captureFirstNs = 0, const JobIndex* index = nullptr);

} // namespace prism
