#pragma once
// Time resolution check (docs/ENGINE.md "Time resolution"): are the flow records fine enough in time for the
// training steps they contain? Collectors often give whole-second stamps (nfdump before 1.7.5) or records as
// long as an active timeout (60 s by default in many exporters); steps last a fraction of that. When records
// are too coarse the report says so plainly: what was found, what could not be, which exporter setting fixes it.
#include "model/flow_store.h" // TimeResolution, measureResolution
#include "model/report.h"

#include <cstdint>

namespace prism {

// Adds a note to `report` (and to each job concerned) when the records are too coarse for the steps: stamp
// granularity or typical record span at least a quarter of a job's median step, or no steps found while the
// stamps or spans are coarse (10 ms or more). Nothing when the records are fine.
void checkResolution(const FlowTable& flows, Report& report);
// The same from a resolution already measured (a store's).
void checkResolution(const TimeResolution& resolution, Report& report);

} // namespace prism
