#include "capture_loader.h"

#include "analysis/pipeline.h"
#include "io/clickhouse.h"
#include "io/file_store.h"
#include "model/units.h"
#include "model/diagnostics.h"
#include "session_file.h"

#include <QCoreApplication>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cstdlib>
#include <optional>

namespace prism::ui {

CaptureLoader::CaptureLoader(QObject* parent) : QObject(parent) { qRegisterMetaType<SessionPtr>(); }

CaptureLoader::~CaptureLoader() { cancel(); }

void CaptureLoader::cancel() {
    if (m_current) m_current->cancel = true;
}

QString CaptureLoader::describeError(const std::exception& e) {
    // Input errors name the file, line and column; spell them out for a dialog.
    if (const auto* ie = dynamic_cast<const InputError*>(&e)) {
        const InputIssue& i = ie->issue();
        const QString file = QString::fromStdString(i.file);
        const QString msg = QString::fromStdString(i.message);
        if (i.line && i.column) return tr("%1, line %2, column %3:\n%4").arg(file).arg(i.line).arg(i.column).arg(msg);
        if (i.line) return tr("%1, line %2:\n%3").arg(file).arg(i.line).arg(msg);
        return tr("%1:\n%2").arg(file, msg);
    }
    return QString::fromStdString(e.what());
}

std::uint64_t CaptureLoader::memoryBudget() {
    if (const char* env = std::getenv("LLMPRISM_MEMORY"); env && *env) {
        if (const std::uint64_t b = parseSize(env)) return b;
        throw InputError({"LLMPRISM_MEMORY", 0, 0,
                          std::string("expected a size such as 8G or 512M, found \"") + env + "\""});
    }
    return availableMemory() / 10 * 6;
}

// The app reads a capture whole when it fits the budget; one that would not is analysed in stages (the staged
// report of every job, then one job's window at a time), before the system has to kill the app for it. Files
// are judged by their size (wholeLoadEstimate), a ClickHouse table by its record count (~96 B a record whole,
// as a flows.csv row and a tenth). A capture read whole gets the files found in `found` (loadCapture does not
// look for them again).
static std::shared_ptr<StagedCapture> stagedIfLarge(const std::vector<std::string>& sources, const LoadOptions& lo,
                                                    const std::function<bool(double)>& progress,
                                                    const std::function<bool()>& cancelled,
                                                    std::optional<CaptureFiles>& found) {
    const std::uint64_t budget = CaptureLoader::memoryBudget();
    if (!budget) return nullptr;
    CaptureFiles files = findCaptureFiles(sources, lo);
    auto whole = [&] {
        found = std::move(files);
        return nullptr;
    };
    auto staged = std::make_shared<StagedCapture>();
    staged->topologyPath = files.topologyPath;
    if (!files.files.empty() && files.files.front().info.kind == SourceKind::ClickHouse) {
        const std::string& url = files.files.front().path;
        auto table = std::make_unique<ClickHouseStore>(ClickHouseUrl::parse(url), TimeWindow{lo.fromNs, lo.toNs});
        if (table->overview().records * 96 <= budget) return whole();
        if (!files.topologyPath.empty()) {
            staged->topology = readTopologyJson(files.topologyPath);
            staged->hasTopology = true;
        }
        staged->flowsPaths = {url};
        staged->store = std::move(table);
    } else {
        if (wholeLoadEstimate(files) <= budget) return whole();
        LoadOptions streamed = lo;
        streamed.maxRecords = 0; // never held whole
        auto fileStore = std::make_unique<FileStore>(FileStore::Found{}, files, streamed);
        staged->topology = fileStore->topology();
        staged->hasTopology = fileStore->hasTopology();
        for (const FlowFile& f : fileStore->files().files) staged->flowsPaths.push_back(f.path);
        staged->store = std::move(fileStore);
    }
    staged->budget = budget;
    staged->store->setInterrupt(cancelled); // Cancel stops a pass over the files or a query, not only between them
    AnalysisOptions ao;
    ao.progress = progress;
    staged->report = analyzeStore(*staged->store, staged->topology, staged->hasTopology, ao, &staged->stats, budget,
                                  &staged->jobs);
    if (!staged->hasTopology && staged->report.capture) { // as loadCapture says it
        staged->report.capture->warnings += 1;
        staged->report.capture->messages.push_back("warning: " + staged->store->source() +
                                                   ": no topology: each NIC is treated as its own host");
    }
    return staged;
}

static std::shared_ptr<AnalysisSession> makeWindow(const std::shared_ptr<StagedCapture>& staged, int job, int first,
                                                   int last, const std::function<bool(double)>& progress,
                                                   const std::function<bool()>& cancelled = {}) {
    std::lock_guard lock(staged->mutex);
    // A load made stale while it waited for the store (the user clicked on) does not fetch at all.
    if (cancelled && cancelled()) throw Cancelled();
    staged->store->setInterrupt(cancelled);
    struct Reset {
        FlowStore& store;
        ~Reset() { store.setInterrupt({}); }
    } reset{*staged->store};
    AnalysisOptions ao;
    ao.progress = progress;
    ao.packSegments = true; // held as long as the window is shown
    JobWindow w = analyzeJobWindow(*staged->store, staged->topology, staged->report, staged->jobs, std::size_t(job),
                                   first, last, ao, staged->budget);
    auto session = std::make_shared<AnalysisSession>();
    session->source = QString::fromStdString(staged->store->source());
    Capture& c = session->capture;
    c.source = staged->store->source();
    c.flowsPaths = staged->flowsPaths;
    c.flowsPath = c.flowsPaths.empty() ? std::string() : c.flowsPaths.front();
    c.topologyPath = staged->topologyPath;
    c.topology = staged->topology;
    c.hasTopology = staged->hasTopology;
    c.diagnostics = staged->store->diagnostics();
    c.flows = std::move(w.records);
    Analysis& a = session->analysis;
    a.report = staged->report;
    a.report.jobs[std::size_t(job)] = std::move(w.info);
    a.jobs.resize(a.report.jobs.size());
    a.jobs[std::size_t(job)] = std::move(w.analysed);
    // Every job's NICs as ids of the window's endpoint table (the views colour the topology by job); only the
    // window's job has records.
    for (std::size_t k = 0; k < staged->jobs.size(); ++k) {
        if (int(k) == job) {
            a.recognition.jobs.push_back(std::move(w.job));
            continue;
        }
        const StagedJob& sj = staged->jobs[k];
        RecognizedJob rj = sj.job;
        auto map = [&](EndpointId e) { return c.flows.endpoints.intern(sj.endpoints.at(e)); };
        for (EndpointId& e : rj.nics) e = map(e);
        for (EndpointId& e : rj.unknownNics) e = map(e);
        for (RecognizedJob::Node& n : rj.nodes) n.endpoint = map(n.endpoint);
        a.recognition.jobs.push_back(std::move(rj));
    }
    a.recognition.notes = staged->report.notes;
    session->staged = staged;
    session->windowJob = job;
    session->windowFirst = w.firstStep;
    session->windowLast = w.lastStep;
    session->buildLod(std::vector<int>{job});
    return session;
}

std::shared_ptr<AnalysisSession> CaptureLoader::windowSession(const std::shared_ptr<StagedCapture>& staged, int job, int first, int last,
                                        const std::function<bool(double)>& progress) {
    return makeWindow(staged, job, first, last, progress);
}

// The first window of a staged capture: the first steps of its largest job (the one a whole load could not hold).
static std::shared_ptr<AnalysisSession> firstWindow(const std::shared_ptr<StagedCapture>& staged,
                                                    const std::function<bool(double)>& progress,
                                                    const std::function<bool()>& cancelled = {}) {
    if (staged->jobs.empty()) {
        auto session = std::make_shared<AnalysisSession>();
        session->analysis.report = staged->report;
        session->capture.topology = staged->topology;
        session->capture.hasTopology = staged->hasTopology;
        session->capture.diagnostics = staged->store->diagnostics();
        session->staged = staged;
        return session;
    }
    std::size_t job = 0;
    for (std::size_t k = 1; k < staged->jobs.size(); ++k)
        if (staged->jobs[k].records > staged->jobs[job].records) job = k;
    const auto [first, last] = windowSteps(staged->report.jobs[job], staged->jobs[job], 0, staged->budget);
    return makeWindow(staged, int(job), first, last, progress, cancelled);
}

// A capture analysed whole for the views, its segments packed. One from files lets go of the columns only the
// analysis reads as soon as it is done with them, and of the records once analysed, keeping what reading them
// again takes (AnalysisSession::recordsReleased: Save Session, Compare With); a ClickHouse table keeps them (a
// table may change under its reader).
static void analyseWhole(AnalysisSession& session, const std::vector<std::string>& paths, const LoadOptions& lo,
                         AnalysisOptions ao) {
    ao.packSegments = true; // the views hold every job's segments as long as the session is open
    if (std::any_of(paths.begin(), paths.end(), [](const std::string& p) { return ClickHouseUrl::looksLikeUrl(p); })) {
        session.analysis = runAnalysis(session.capture, ao);
        return;
    }
    session.recordsFingerprint = session.capture.flows.fingerprint();
    session.analysis = runAnalysisReleasing(session.capture, ao);
    session.capture.flows.releaseRecords();
    session.recordsReleased = true;
    session.capturePaths = paths;
    session.loadOptions = lo;
    session.loadOptions.progress = {};
}

SessionPtr CaptureLoader::loadNow(const QString& path, bool strict) { return loadNow(QStringList{path}, strict); }

SessionPtr CaptureLoader::loadNow(const QStringList& paths, bool strict) {
    const QString path = paths.value(0);
    if (paths.size() == 1 && isSessionFile(path)) {
        auto session = readSessionFile(path, {});
        session->buildLod(std::vector<int>{0}); // the job shown first; the others when they are shown
        return session;
    }
    auto session = std::make_shared<AnalysisSession>();
    session->source = path;
    session->sources = paths;
    LoadOptions lo;
    lo.strict = strict;
    lo.maxRecords = maxRecordsInMemory();
    std::vector<std::string> all;
    for (const QString& p : paths) all.push_back(p.toStdString());
    std::optional<CaptureFiles> found;
    if (auto staged = stagedIfLarge(all, lo, {}, {}, found)) {
        auto window = firstWindow(staged, {});
        window->source = path;
        window->sources = paths;
        return window;
    }
    session->capture = found ? loadCapture(std::move(*found), lo) : loadCapture(all, lo);
    analyseWhole(*session, all, lo, {});
    session->buildLod(std::vector<int>{0}); // the job shown first; the others when they are shown
    return session;
}

int CaptureLoader::load(const QString& path, bool strict) { return load(QStringList{path}, strict); }

int CaptureLoader::start(const QString& path, const Work& work) {
    cancel(); // a newer load makes the older one stale
    auto job = std::make_shared<Job>();
    job->id = m_nextId++;
    m_current = job;
    m_busy = true;
    emit started(job->id, path);

    QPointer<CaptureLoader> self(this);
    // Results come back through queued calls guarded by the QPointer and checked against the current job. They
    // are posted to the application (which outlives every loader), not to the loader: a loader deleted between
    // the worker's look at the pointer and the post would be posted to after it was freed.
    auto post = [self, job](auto fn) {
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, job, fn]() {
                if (!self || self->m_current != job) return; // stale
                fn(self.data());
            },
            Qt::QueuedConnection);
    };
    (void)QtConcurrent::run([job, path, work, post]() {
        auto report = [job, post](double f, const char* stage) {
            if (job->cancel) return false;
            if (!stage) return true; // a look at the cancel flag only
            QString s = QString::fromUtf8(stage);
            post([id = job->id, f, s](CaptureLoader* l) { emit l->progress(id, f, s); });
            return true;
        };
        try {
            SessionPtr done = work(report);
            if (job->cancel) throw Cancelled();
            post([id = job->id, done](CaptureLoader* l) {
                l->m_busy = false;
                emit l->finished(id, done);
            });
        } catch (const Cancelled&) {
            post([id = job->id](CaptureLoader* l) {
                l->m_busy = false;
                emit l->cancelled(id);
            });
        } catch (const std::exception& e) {
            QString msg = describeError(e);
            post([id = job->id, path, msg](CaptureLoader* l) {
                l->m_busy = false;
                emit l->failed(id, path, msg);
            });
        }
    });
    return job->id;
}

int CaptureLoader::load(const QStringList& paths, bool strict) {
    const QString path = paths.value(0);
    return start(path, [path, paths, strict](const Progress& report) -> SessionPtr {
        const std::function<bool()> cancelled = [report] { return !report(0, nullptr); };
        if (paths.size() == 1 && isSessionFile(path)) {
            auto opened = readSessionFile(path, [report](double f) { return report(0.95 * f, "Reading session"); });
            // The job shown first only: the others are indexed when first shown, so that a session opens
            // to its first paint in well under a second.
            opened->buildLod(std::vector<int>{0}, [report](double f) { return report(0.95 + 0.05 * f, "Indexing"); });
            return opened;
        }
        LoadOptions lo;
        lo.strict = strict;
        lo.maxRecords = maxRecordsInMemory();
        lo.progress = [report](double f) { return report(0.8 * f, "Reading flows"); };
        std::vector<std::string> all;
        for (const QString& p : paths) all.push_back(p.toStdString());
        std::optional<CaptureFiles> found;
        if (auto staged = stagedIfLarge(
                all, lo, [report](double f) { return report(0.9 * f, "Analysing in stages"); }, cancelled, found)) {
            auto window = firstWindow(
                staged, [report](double f) { return report(0.9 + 0.1 * f, "Loading a window"); }, cancelled);
            window->source = path;
            window->sources = paths;
            return window;
        }
        auto session = std::make_shared<AnalysisSession>();
        session->source = path;
        session->sources = paths;
        session->capture = found ? loadCapture(std::move(*found), lo) : loadCapture(all, lo);
        AnalysisOptions ao;
        ao.progress = [report](double f) { return report(0.8 + 0.17 * f, "Analysing"); };
        analyseWhole(*session, all, lo, ao);
        // The job shown first only, as for a session: the others are indexed when first shown.
        session->buildLod(std::vector<int>{0}, [report](double f) { return report(0.97 + 0.03 * f, "Indexing"); });
        return session;
    });
}

int CaptureLoader::loadWindow(const SessionPtr& session, int jobIndex, int firstStep) {
    if (!session || !session->staged || jobIndex < 0 || std::size_t(jobIndex) >= session->staged->jobs.size()) return -1;
    std::shared_ptr<StagedCapture> staged = session->staged;
    const QString source = session->source;
    const QStringList sources = session->sources;
    return start(source, [staged, jobIndex, firstStep, source, sources](const Progress& report) -> SessionPtr {
        const std::size_t j = std::size_t(jobIndex);
        const auto [first, last] = windowSteps(staged->report.jobs[j], staged->jobs[j], firstStep, staged->budget);
        auto window = makeWindow(
            staged, jobIndex, first, last, [report](double f) { return report(f, "Loading a window of"); },
            [report] { return !report(0, nullptr); });
        window->source = source;
        window->sources = sources;
        return window;
    });
}

} // namespace prism::ui
