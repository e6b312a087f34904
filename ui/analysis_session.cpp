#include "analysis_session.h"

#include "model/diagnostics.h"

namespace prism::ui {

void AnalysisSession::buildLod(const std::function<bool(double)>& progress) {
    lod.clear();
    const auto& tls = analysis.timelines;
    for (std::size_t j = 0; j < tls.size(); ++j) {
        auto index = std::make_shared<TimelineIndex>();
        index->build(tls[j]);
        lod.push_back(std::move(index));
        if (progress && !progress(double(j + 1) / double(tls.size()))) throw Cancelled();
    }
}

} // namespace prism::ui
