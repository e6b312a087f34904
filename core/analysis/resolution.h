#pragma once
// Time resolution check (docs/ENGINE.md "Time resolution"): are the flow records fine enough in time for the
// training steps they contain? Collectors often give whole-second stamps (nfdump before 1.7.5) or records as
// long as an active timeout (60 s by default in many exporters); steps last a fraction of that. When records
// are too coarse the report says so plainly: what was found, what could not be, which exporter setting fixes it.
#include "model/flow_table.h"
#include "model/report.h"

#include <cstdint>

namespace prism {

struct TimeResolution {
    std::size_t records = 0;             // RoCE records measured (all records when there is no RoCE traffic)
    std::int64_t stampGranularityNs = 0; // 1e9: every start is a whole second; 1e6 whole ms; 1e3 whole µs; 1
    std::int64_t typicalSpanNs = 0;      // median record duration
    bool fixedSpan = false;              // most records last about typicalSpanNs: an exporter's active timeout
};

TimeResolution measureResolution(const FlowTable& flows);

// Adds a note to `report` (and to each job concerned) when the records are too coarse for the steps: stamp
// granularity or typical record span at least a quarter of a job's median step, or no steps found while the
// stamps or spans are coarse (10 ms or more). Nothing when the records are fine.
void checkResolution(const FlowTable& flows, Report& report);

} // namespace prism
