#pragma once
// What one load produces: the capture and the analysis report, shared read-only by every view.
#include "io/capture.h"
#include "model/report.h"

#include <QMetaType>
#include <QString>
#include <memory>

namespace prism::ui {

struct AnalysisSession {
    QString source;
    Capture capture;
    Report report;
};

using SessionPtr = std::shared_ptr<const AnalysisSession>;

} // namespace prism::ui

Q_DECLARE_METATYPE(prism::ui::SessionPtr)
