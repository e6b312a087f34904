#pragma once
// Stage 3's pipeline drain test: where a job without DP traffic ends its steps (its pipelines drained), and
// the cuts chosen among those gaps. Parallelism inference uses it too, to orient the pipelines.
#include "analysis/rhythm.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <utility>
#include <vector>

namespace prism {

// Records of one direction of a link that start before the previous one ended (the other channels) or within
// kTransferJoinNs of its end (the next active-timeout piece) are one transfer. So is a record that starts one
// piece after a piece as long as the cut pieces seen so far: the exporter lost the piece between (one channel
// carrying a transfer of 40 pieces at 2% loss splits half of them, and every split read as one more transfer).
constexpr std::int64_t kTransferJoinNs = 5'000;
class TransferJoin {
public:
    // Whether the record [s, e] (e >= s, records in start order) starts a new transfer; extends the current one.
    bool startsNew(std::int64_t s, std::int64_t e) {
        bool fresh = m_end == kNone || s > m_end + kTransferJoinNs;
        if (!fresh && s >= m_end - kTransferJoinNs) m_cutNs = m_lastNs; // the record before was cut here
        else if (fresh && m_end != kNone && m_cutNs > 0 && near(m_lastNs, m_cutNs) && near(s - m_end, m_cutNs))
            fresh = false;
        if (m_end == kNone || e >= m_end) m_lastNs = e - s;
        m_end = m_end == kNone ? e : std::max(m_end, e);
        return fresh;
    }
    std::int64_t end() const { return m_end; } // of the current transfer

private:
    static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();
    static bool near(std::int64_t x, std::int64_t piece) {
        return std::abs(x - piece) <= piece / 20 + kTransferJoinNs;
    }
    std::int64_t m_end = kNone;
    std::int64_t m_lastNs = 0; // how long the record ending at m_end lasted
    std::int64_t m_cutNs = 0;  // how long the last record cut by the exporter lasted (0: none seen)
};

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
// transfer shifts its link's count; what a link carries next tells a lost activation from a lost gradient,
// drains.cpp). No orientation is guessed: taken the wrong way round, the lowest depth
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
// back to chooseCuts on every gap. Returns piece indices as chooseCuts does. Exposed for divideSteps and tests.
// scan, when given, gets the scanDrains result it used.
std::vector<std::size_t> choosePipelineCuts(const std::vector<std::pair<std::int64_t, std::int64_t>>& pieces,
                                            const std::vector<LinkRecord>& recs, const StepParams& params = {},
                                            DrainScan* scan = nullptr);

} // namespace prism
