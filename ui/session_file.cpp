#include "session_file.h"

#include "model/diagnostics.h"
#include "store/session.h"

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
    std::function<bool(double)> reading;
    if (progress && !session.recordsHeld()) { // reading the capture again: the first 30%
        reading = [progress](double f) { return progress(0.3 * f); };
        options.progress = [progress](double f) { return progress(0.3 + 0.7 * f); };
    }
    const std::shared_ptr<const Capture> capture = session.withRecords(reading);
    saveSession(path.toStdString(), *capture, session.analysis, notes, options);
}

} // namespace prism::ui
