#pragma once
// What one load produces: the capture and the analysis report, shared read-only by every view.
#include "analysis/pipeline.h"
#include "io/capture.h"

#include <QMetaType>
#include <QString>
#include <memory>

namespace prism::ui {

struct AnalysisSession {
    QString source;
    Capture capture;
    Analysis analysis; // analysis.report is what the CLI would write
    const Report& report() const { return analysis.report; }
};

using SessionPtr = std::shared_ptr<const AnalysisSession>;

} // namespace prism::ui

Q_DECLARE_METATYPE(prism::ui::SessionPtr)
