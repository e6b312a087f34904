#pragma once
// The per-rank timelines in the session file (internal to core/store): rows per job and rank for SQL, the
// segments as columnar blobs in chunks of whole ranks (decoded in parallel on open), the per-rank step stats
// as one blob per job. Stored rather than rebuilt: rebuilding needs the step division's clock alignment and
// costs more than reading them back.
#include "analysis/pipeline.h"
#include "analysis/timeline.h"
#include "store/sqlite_db.h"

#include <functional>
#include <string>
#include <vector>

namespace prism::store {

// The timeline of each of `jobs`.
void writeTimelines(Database& db, const std::vector<JobAnalysis>& jobs, const std::vector<std::string>& jobIds);

// `progress(done, total)` runs on the calling thread after each of its chunks and may throw to cancel. `pack`:
// each chunk's segments packed once read (OpenOptions::packSegments).
std::vector<JobTimeline> readTimelines(Database& db, const std::string& path, std::size_t jobs, std::size_t endpoints,
                                       unsigned threads, const std::function<void(std::size_t, std::size_t)>& progress,
                                       bool pack = false);

} // namespace prism::store
