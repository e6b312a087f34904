#include "session_file.h"

#include "io/capture.h"
#include "model/capture.h"
#include "model/diagnostics.h"
#include "store/session.h"

#include <stdexcept>

#include <QFile>
#include <QFileInfo>

namespace prism::ui {

bool isSessionFile(const QString& path) {
    // By suffix or by the SQLite header, so that a foreign or damaged file named .prism (or any SQLite file)
    // gets openSession's clear error instead of being read as flows.
    QFileInfo info(path);
    if (!info.isFile()) return false;
    if (info.suffix().compare("prism", Qt::CaseInsensitive) == 0) return true;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return false;
    return f.read(16) == QByteArray("SQLite format 3\0", 16);
}

std::shared_ptr<AnalysisSession> readSessionFile(const QString& path, const std::function<bool(double)>& progress) {
    OpenOptions options;
    options.progress = progress;
    options.packSegments = true; // the views hold them as long as the session is open
    Session stored = openSession(path.toStdString(), options);
    auto session = std::make_shared<AnalysisSession>();
    session->source = path;
    session->sessionPath = path;
    session->capture = std::move(stored.capture);
    session->analysis = std::move(stored.analysis);
    session->notes = std::move(stored.notes);
    session->meta = std::move(stored.meta);
    return session;
}

void writeSessionFile(const QString& path, const AnalysisSession& session, const std::vector<Note>& notes,
                      const std::function<bool(double)>& progress) {
    SaveOptions options;
    options.progress = progress;
    if (session.meta) { // the capture files may be gone: keep what the session recorded about them
        options.flowsChecksum = session.meta->flows;
        options.topologyChecksum = session.meta->topology;
    }
    if (!session.flowsPartial) {
        saveSession(path.toStdString(), session.capture, session.analysis, notes, options);
        return;
    }
    // The views hold the records without the columns only the analysis read: the files are read again, and must
    // be the ones analysed (a session holds its capture's records and their analysis together).
    LoadOptions lo = session.loadOptions;
    if (progress) {
        lo.progress = [progress](double f) { return progress(0.3 * f); };
        options.progress = [progress](double f) { return progress(0.3 + 0.7 * f); };
    }
    Capture again = loadCapture(session.capturePaths, lo);
    const CaptureSummary now = summarize(again);
    const CaptureSummary& then = *session.analysis.report.capture;
    if (now.records != then.records || now.roceRecords != then.roceRecords || now.roceBytes != then.roceBytes ||
        now.otherBytes != then.otherBytes || now.firstNs != then.firstNs || now.lastNs != then.lastNs ||
        again.flows.endpoints.size() != session.capture.flows.endpoints.size())
        throw std::runtime_error(
            (again.flowsPaths.empty()
                 ? again.flowsPath.empty() ? again.source : again.flowsPath
                 : again.flowsPaths.front() + (again.flowsPaths.size() > 1
                                                   ? " (and " + std::to_string(again.flowsPaths.size() - 1) + " more)"
                                                   : "")) +
            ": the capture changed since it was opened (" + std::to_string(then.records) + " records then, " +
            std::to_string(now.records) +
            " now): open it again to analyse what it holds now, then save that as a session");
    again.source = session.capture.source; // as it was named when opened
    saveSession(path.toStdString(), again, session.analysis, notes, options);
}

} // namespace prism::ui
