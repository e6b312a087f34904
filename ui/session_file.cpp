#include "session_file.h"

#include "io/capture.h"
#include "io/file_store.h"
#include "io/flow_source.h"
#include "model/capture.h"
#include "model/diagnostics.h"
#include "model/units.h"
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

// Every host, NIC and switch as they were: a session's analysis names hosts by their index.
static bool sameTopology(const Topology& a, const Topology& b) {
    if (a.hosts.size() != b.hosts.size() || a.nics.size() != b.nics.size() || a.switches.size() != b.switches.size())
        return false;
    for (std::size_t i = 0; i < a.hosts.size(); ++i)
        if (a.hosts[i].name != b.hosts[i].name || a.hosts[i].nics != b.hosts[i].nics) return false;
    for (std::size_t i = 0; i < a.nics.size(); ++i) {
        const Nic &x = a.nics[i], &y = b.nics[i];
        if (!(x.ip == y.ip) || x.gpus != y.gpus || x.rail != y.rail || x.switchName != y.switchName || x.host != y.host)
            return false;
    }
    for (std::size_t i = 0; i < a.switches.size(); ++i)
        if (a.switches[i].name != b.switches[i].name || a.switches[i].tier != b.switches[i].tier ||
            a.switches[i].uplinks != b.switches[i].uplinks)
            return false;
    return true;
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
    // be the ones analysed (a session holds its capture's records and their analysis together: record indices,
    // endpoint ids and host indices point into them).
    LoadOptions lo = session.loadOptions;
    if (progress) {
        lo.progress = [progress](double f) { return progress(0.3 * f); };
        options.progress = [progress](double f) { return progress(0.3 + 0.7 * f); };
    }
    const CaptureFiles files = findCaptureFiles(session.capturePaths, lo);
    const std::string shown =
        files.files.empty()
            ? session.capture.source
            : files.files.front().path +
                  (files.files.size() > 1 ? " (and " + std::to_string(files.files.size() - 1) + " more)" : "");
    const std::uint64_t available = availableMemory(), need = wholeLoadEstimate(files);
    if (available && need > available)
        throw std::runtime_error(shown + ": saving reads the capture again, which needs about " + formatBytes(need) +
                                 ", more than the " + formatBytes(available) +
                                 " available now: close other programs, or write the session with `llmprism-cli "
                                 "import CAPTURE --out S.prism`");
    Capture again = loadCapture(session.capturePaths, lo);
    const FlowTable &held = session.capture.flows, &read = again.flows;
    auto same = [&] {
        if (read.size() != held.size() || read.endpoints.size() != held.endpoints.size()) return false;
        for (EndpointId e = 0; e < held.endpoints.size(); ++e)
            if (!(read.endpoints.at(e) == held.endpoints.at(e))) return false;
        if (read.startNs != held.startNs || read.endNs != held.endNs || read.src != held.src || read.dst != held.dst ||
            read.srcPort != held.srcPort)
            return false;
        for (std::size_t i = 0; i < held.size(); ++i)
            if (read.bytes[i] != held.bytes[i]) return false;
        return sameTopology(again.topology, session.capture.topology) &&
               again.hasTopology == session.capture.hasTopology;
    };
    if (!same())
        throw std::runtime_error(shown + ": the capture changed since it was opened (" + std::to_string(held.size()) +
                                 " records then, " + std::to_string(read.size()) +
                                 " now, or other records or topology): open it again to analyse what it holds now, "
                                 "then save that as a session");
    again.source = session.capture.source; // as it was named when opened
    saveSession(path.toStdString(), again, session.analysis, notes, options);
}

} // namespace prism::ui
