#include "capture_loader.h"

#include "analysis/pipeline.h"

#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace prism::ui {

CaptureLoader::CaptureLoader(QObject* parent) : QObject(parent) { qRegisterMetaType<SessionPtr>(); }

CaptureLoader::~CaptureLoader() { cancel(); }

void CaptureLoader::cancel() {
    if (m_current) m_current->cancel = true;
}

SessionPtr CaptureLoader::loadNow(const QString& path, bool strict) {
    auto session = std::make_shared<AnalysisSession>();
    session->source = path;
    LoadOptions lo;
    lo.strict = strict;
    session->capture = loadCapture(path.toStdString(), lo);
    session->analysis = runAnalysis(session->capture);
    return session;
}

int CaptureLoader::load(const QString& path, bool strict) {
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
    (void)QtConcurrent::run([job, path, strict, post]() {
        auto report = [job, post](double f, const char* stage) {
            if (job->cancel) return false;
            QString s = QString::fromUtf8(stage);
            post([id = job->id, f, s](CaptureLoader* l) { emit l->progress(id, f, s); });
            return true;
        };
        try {
            auto session = std::make_shared<AnalysisSession>();
            session->source = path;
            LoadOptions lo;
            lo.strict = strict;
            lo.progress = [report](double f) { return report(0.8 * f, "Reading flows"); };
            session->capture = loadCapture(path.toStdString(), lo);
            AnalysisOptions ao;
            ao.progress = [report](double f) { return report(0.8 + 0.2 * f, "Analysing"); };
            session->analysis = runAnalysis(session->capture, ao);
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
            QString msg = QString::fromStdString(e.what());
            post([id = job->id, path, msg](CaptureLoader* l) {
                l->m_busy = false;
                emit l->failed(id, path, msg);
            });
        }
    });
    return job->id;
}

} // namespace prism::ui
