#include "analysis/pipeline.h"

namespace prism {

Report analyzeCapture(const Capture& capture, const AnalysisOptions& options) {
    Report report;
    report.capture = summarize(capture);
    if (options.progress && !options.progress(1.0)) throw Cancelled();
    return report;
}

} // namespace prism
