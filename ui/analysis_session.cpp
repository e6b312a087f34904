#include "analysis_session.h"

#include "model/diagnostics.h"

namespace prism::ui {

void AnalysisSession::buildLod(const std::function<bool(double)>& progress) {
    std::vector<int> all(analysis.jobs.size());
    for (std::size_t j = 0; j < all.size(); ++j) all[j] = int(j);
    buildLod(all, progress);
}

void AnalysisSession::buildLod(const std::vector<int>& jobs, const std::function<bool(double)>& progress) {
    const auto& analysed = analysis.jobs;
    lod.assign(analysed.size(), nullptr);
    std::size_t done = 0;
    for (int j : jobs) {
        if (j < 0 || std::size_t(j) >= analysed.size()) continue;
        auto index = std::make_shared<TimelineIndex>();
        index->build(analysed[std::size_t(j)].timeline);
        lod[std::size_t(j)] = std::move(index);
        if (progress && !progress(double(++done) / double(jobs.size()))) throw Cancelled();
    }
}

} // namespace prism::ui
