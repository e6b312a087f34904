#include "capture_loader.h"

#include "analysis/pipeline.h"
#include "io/file_store.h"
#include "model/units.h"
#include "model/diagnostics.h"
#include "session_file.h"

#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

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

// The app reads a capture whole: one that would not fit in memory is refused with what it needs, before the
// system has to kill the app for it.
static void checkItFits(const std::vector<std::string>& sources, const LoadOptions& lo) {
    const CaptureFiles files = findCaptureFiles(sources, lo);
    const std::uint64_t avail = availableMemory(), need = wholeLoadEstimate(files);
    if (avail && need > avail / 10 * 9)
        throw InputError({files.source, 0, 0,
                          "this capture needs about " + formatBytes(need) + " of memory to open, and " +
                              formatBytes(avail) + " is available. Analyse it in stages with `llmprism-cli analyze " +
                              files.source + " --memory SIZE` (docs/ENGINE.md \"Staged analysis\")"});
}

SessionPtr CaptureLoader::loadNow(const QString& path, bool strict) {
    if (isSessionFile(path)) {
        auto session = readSessionFile(path, {});
        session->buildLod(std::vector<int>{0}); // the job shown first; the others when they are shown
        return session;
    }
    auto session = std::make_shared<AnalysisSession>();
    session->source = path;
    LoadOptions lo;
    lo.strict = strict;
    lo.maxRecords = maxRecordsInMemory();
    checkItFits({path.toStdString()}, lo);
    session->capture = loadCapture(path.toStdString(), lo);
    session->analysis = runAnalysis(session->capture);
    session->buildLod();
    return session;
}

int CaptureLoader::load(const QString& path, bool strict) { return load(QStringList{path}, strict); }

int CaptureLoader::load(const QStringList& paths, bool strict) {
    const QString path = paths.value(0);
    cancel(); // a newer load makes the older one stale
    auto job = std::make_shared<Job>();
    job->id = m_nextId++;
    m_current = job;
    m_busy = true;
    emit started(job->id, path);

    QPointer<CaptureLoader> self(this);
    // Results come back through queued calls guarded by the QPointer and checked against the current job.
    auto post = [self, job](auto fn) {
        QMetaObject::invokeMethod(
            self.data(),
            [self, job, fn]() {
                if (!self || self->m_current != job) return; // stale
                fn(self.data());
            },
            Qt::QueuedConnection);
    };
    (void)QtConcurrent::run([job, path, paths, strict, post]() {
        auto report = [job, post](double f, const char* stage) {
            if (job->cancel) return false;
            QString s = QString::fromUtf8(stage);
            post([id = job->id, f, s](CaptureLoader* l) { emit l->progress(id, f, s); });
            return true;
        };
        try {
            if (paths.size() == 1 && isSessionFile(path)) {
                auto opened = readSessionFile(path, [report](double f) { return report(0.95 * f, "Reading session"); });
                // The job shown first only: the others are indexed when first shown, so that a session opens
                // to its first paint in well under a second.
                opened->buildLod(std::vector<int>{0},
                                 [report](double f) { return report(0.95 + 0.05 * f, "Indexing"); });
                SessionPtr done = opened;
                post([id = job->id, done](CaptureLoader* l) {
                    l->m_busy = false;
                    emit l->finished(id, done);
                });
                return;
            }
            auto session = std::make_shared<AnalysisSession>();
            session->source = path;
            session->sources = paths;
            LoadOptions lo;
            lo.strict = strict;
            lo.maxRecords = maxRecordsInMemory();
            lo.progress = [report](double f) { return report(0.8 * f, "Reading flows"); };
            std::vector<std::string> all;
            for (const QString& p : paths) all.push_back(p.toStdString());
            checkItFits(all, lo);
            session->capture = loadCapture(all, lo);
            AnalysisOptions ao;
            ao.progress = [report](double f) { return report(0.8 + 0.17 * f, "Analysing"); };
            session->analysis = runAnalysis(session->capture, ao);
            session->buildLod([report](double f) { return report(0.97 + 0.03 * f, "Indexing"); });
            if (job->cancel) throw Cancelled();
            SessionPtr done = session;
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

} // namespace prism::ui
