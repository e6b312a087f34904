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
#include "analysis/bocd.h"
#include "analysis/parallelism.h"
#include "analysis/stats.h"
#include "analysis/recognition.h"
#include "model/report.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace prism {

struct StepParams {
    BocdParams bocd;                        // on the interval series; cpThreshold 0.95 (the paper's)
    bool alignClocks = true;                // estimate per-leaf exporter clock offsets from sync starts
    std::int64_t maxClockOffsetNs = 500'000; // a larger estimated offset is not skew: ignored
    std::int64_t minBoundaryGapNs = 50'000; // a step boundary is a quiet gap at least this long
    double regularBand = 1.35;              // an interval within [P / band, P * band] of the median P is regular
    std::size_t maxCandidates = 64;         // cut counts tried per series (the sharpest drops in gap size)
    double drainedShare = 0.5;              // no DP: share of PP links (and head links) at rest in a drain
    std::int64_t exchangeWindowNs = 20'000; // a member's sends of one expert all-to-all start this close
};

// Per-record lookups for one job, shared by steps, timeline and diagnosis: the job-local index of an
// endpoint (position in RecognizedJob::nics), the kind of a NIC pair, the PP stage and DP group of a NIC and
// the leaf switch it hangs off. Pair kinds are a dense matrix for jobs up to 4096 NICs, else a hash map.
class JobIndex {
public:
    JobIndex(const FlowTable& flows, const Topology& topology, const RecognizedJob& job,
             const ParallelismResult& parallelism);
    int local(EndpointId e) const { return e < m_local.size() ? m_local[e] : -1; }
    std::size_t size() const { return m_nics.size(); }
    EndpointId endpoint(int local) const { return m_nics[std::size_t(local)]; }
    PairKind kind(int a, int b) const; // locals; PP when the pair was never classified
    int stage(int local) const { return m_stage[std::size_t(local)]; }     // 0 when pp = 1
    int dpGroup(int local) const { return m_group[std::size_t(local)]; }   // -1 when in no DP group
    int leaf(int local) const { return m_leaf[std::size_t(local)]; }       // topology switch index, or -1
    int host(int local) const { return m_host[std::size_t(local)]; }       // topology host index, or -1

private:
    std::vector<int> m_local;
    std::vector<EndpointId> m_nics;
    std::vector<int> m_stage, m_group, m_leaf, m_host;
    std::vector<std::uint8_t> m_dense; // n x n, 0 unknown, 1 DP, 2 PP
    std::unordered_map<std::uint64_t, PairKind> m_sparse;
};

// Expert-parallel groups: the components of the pairs of DP peers (one DP group) with traffic both ways, as an
// expert all-to-all has (a ring collective's hops go one way). Per job-local NIC its group (the local index
// of one member), or -1 for a NIC in no such pair.
std::vector<int> expertGroups(const FlowTable& flows, const RecognizedJob& job, const JobIndex& ix);

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


// Chooses where to cut a sorted sequence of activity pieces [start, end] (non-overlapping, ascending) into
// bursts: among the cut sets made of the c largest quiet gaps (c where the gap size drops), the one whose burst
// ends are most regular: score (regular intervals - 1) x median interval^lengthExponent, regular meaning within
// params.regularBand of the median. 1 (time covered) suits series with an inner rhythm (PP traffic), 0.5
// (count first) suits sync bursts and keeps every step between periodic pauses. With activeSpans an interval
// runs from the first activity after a cut to the next cut (the quiet gap left out), so a pause, which
// stretches one gap, leaves its step regular. With clearGapWins (sync bursts, which have no inner rhythm), a
// weak separation (< 2x between the last gap cut and the next) gives way to a far sharper one at a larger
// count (>= 100x: the gaps between bursts against those inside them), so that steps of three different
// lengths, none of them a majority, are still all cut. Returns the indices i of pieces after which a cut
// falls, ascending. Exposed for tests.
std::vector<std::size_t> chooseCuts(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                                    const StepParams& params = {}, double lengthExponent = 1.0,
                                    bool activeSpans = false, bool clearGapWins = false);

// The coarser rhythm over sync bursts when DP traffic runs all through the step (ZeRO-3 parameter gathers per
// layer group; expert all-to-all where it cannot be told from the ring): pieces are bursts, each from the first
// activity after the previous burst to its end. Candidates are the c longest quiet gaps (where the gap size
// drops); the coarsest whose steps hold 3 or more pieces (median) and where steps of about that count hold
// three quarters of all pieces is the step rhythm (a step repeats its passes: anomalies change its times, not
// its count). It is returned when the intervals between piece ends inside its steps spread (mean absolute
// deviation >= 15% of the median: the passes' paces differ), or when the burst opening each step holds more
// than twice the usual interval of activity (a pause adds quiet, not activity); else nothing: the pieces are
// the steps (a pure-DP job with periodic pauses has even counts, alike intervals and ordinary bursts after
// its pauses). Steps cut apart by quiet inside them (a slow GPU among expert-parallel peers) are put back
// together first (mergeFragments). No division holds the pieces evenly: nothing. Exposed for parallelism
// inference and tests.
std::vector<std::size_t> chooseCoarseCuts(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                                          const StepParams& params = {});

// One record on a pipeline link (a NIC pair of adjacent stages) for the drain test: its times, the link (any
// dense id, one per unordered NIC pair), its direction (+1 forward: from the lower stage; -1 backward) and
// whether the link is the pipeline's head (stage 0 to stage 1).
struct LinkRecord {
    std::int64_t s, e;
    std::uint32_t link;
    std::int32_t dir;
    bool head;
};

// Where a pipeline is drained. A pipeline schedule (1F1B, GPipe) keeps micro-batches in flight from the
// step's first activation to its last gradient: on a link, activations sent minus gradients returned (counted
// in transfers: the records of one transfer's channels and active-timeout pieces are one) is above its
// resting level inside a step and back at it between steps. Deep links also rest while the pipeline fills
// and drains, but in 1F1B with pp >= 3 the head link never rests inside a step (stage 0 runs pp - 1
// forwards ahead). The resting level of a link is its lowest depth so far; a gap where at least
// params.drainedShare of all links and of the head links rest is a drain, and re-levels the others (a lost
// transfer shifts its link's count). No orientation is guessed: taken the wrong way round, the lowest depth
// is the most loaded moment. `pieces`: the union of the records' intervals (as for chooseCuts), with every
// record inside one; `recs` sorted by start. Exposed for parallelism inference and tests.
struct DrainScan {
    std::vector<double> share; // per gap between pieces: the smaller of the two shares of links at rest
    double endShare = 0;       // the same after the last piece (below drainedShare: the capture ends mid-step)
    bool startsMidStep = false; // gradients returned for activations sent before the capture, before any drain
};
DrainScan scanDrains(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                     const std::vector<LinkRecord>& recs, const StepParams& params = {});

// Cuts for a series of PP activity: the gaps where the pipeline is drained (scanDrains share >= drainedShare,
// at least minBoundaryGapNs), then among them chooseCuts with exponent 1 on active spans (a drain inside a
// step, as pp = 2 with a slow stage 0 has, is shorter than the step's). Without any drained gap it falls
// back to chooseCuts on every gap. Returns piece indices as chooseCuts does. Exposed for tests.
// scan, when given, gets the scanDrains result it used.
std::vector<std::size_t> choosePipelineCuts(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                                            const std::vector<LinkRecord>& recs, const StepParams& params = {},
                                            DrainScan* scan = nullptr);

} // namespace prism
