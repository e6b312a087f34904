#pragma once
// Hook for .prism session files (docs/SESSION_FORMAT.md): a session opens without re-analysis. The
// loader sends every path through isSessionFile(); readSessionFile() is the single place that turns a stored
// session into an AnalysisSession (core/store openSession: no re-analysis; errors are InputErrors the GUI
// shows like any other input error).
#include "analysis_session.h"

#include <QString>
#include <functional>
#include <memory>

namespace prism::ui {

// A .prism file: by suffix, or by the SQLite header for a renamed file.
bool isSessionFile(const QString& path);
// Reads a stored session. `progress` as for loadCapture (return false to cancel: throws Cancelled).
std::shared_ptr<AnalysisSession> readSessionFile(const QString& path, const std::function<bool(double)>& progress);
// Writes `session` with `notes` to `path` (atomically; core/store saveSession). The source checksums come
// from the session file it was opened from, else from the capture files. Throws like saveSession.
void writeSessionFile(const QString& path, const AnalysisSession& session, const std::vector<Note>& notes,
                      const std::function<bool(double)>& progress = {});

} // namespace prism::ui
