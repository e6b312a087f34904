#pragma once
// Hook for .prism session files (DESIGN.md "The session file"): a session opens without re-analysis. The
// loader sends every path through isSessionFile(); readSessionFile() is the single place that turns a stored
// session into an AnalysisSession. Until the session store (core/store) is built in, it throws an InputError
// saying so, and the GUI shows it like any other input error.
#include "analysis_session.h"

#include <QString>
#include <functional>
#include <memory>

namespace prism::ui {

// A .prism file: by suffix, or by the SQLite header for a renamed file.
bool isSessionFile(const QString& path);
// Reads a stored session. `progress` as for loadCapture (return false to cancel: throws Cancelled).
std::shared_ptr<AnalysisSession> readSessionFile(const QString& path, const std::function<bool(double)>& progress);

} // namespace prism::ui
