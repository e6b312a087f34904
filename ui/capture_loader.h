#pragma once
// Loads and analyses a capture on a worker thread. Each load gets an id; starting a new load makes
// the older one stale (it is cancelled and its result dropped), so only the newest load reports back.
#include "analysis_session.h"

#include <QObject>
#include <atomic>
#include <exception>
#include <functional>
#include <memory>

namespace prism::ui {

class CaptureLoader : public QObject {
    Q_OBJECT
public:
    explicit CaptureLoader(QObject* parent = nullptr);
    ~CaptureLoader() override;

    // Starts loading `path` (capture folder or file); returns the load's id.
    int load(const QString& path, bool strict = false);
    // Several files (or folders) at once, merged into one capture (flow data of any kinds, a topology.json).
    int load(const QStringList& paths, bool strict = false);
    void cancel();
    bool isBusy() const { return m_busy; }
    // Loads synchronously on the calling thread (for --screenshot and tests); throws like loadCapture.
    // A .prism session file goes through readSessionFile() (session_file.h) instead of the analysis.
    static SessionPtr loadNow(const QString& path, bool strict = false);
    // Several files (flow data of any kinds and a topology.json) as one capture, as load(QStringList) takes them.
    static SessionPtr loadNow(const QStringList& paths, bool strict = false);
    // Another window of a capture analysed in stages (session->staged): job `job`'s steps from `firstStep` on, as
    // many as the budget holds (windowSteps), fetched and analysed in the background; finished() gives a
    // session sharing the staged capture. -1 when `session` is not staged.
    int loadWindow(const SessionPtr& session, int job, int firstStep);
    // The memory a capture may take before it is analysed in stages: LLMPRISM_MEMORY (a size: 8G, 512M) when
    // set, else 60% of the memory available (0: unknown, never in stages).
    static std::uint64_t memoryBudget();
    // The window session of steps [first, last] of `job` (analyzeJobWindow), on the calling thread (not shared
    // yet: the caller may still set its source).
    static std::shared_ptr<AnalysisSession> windowSession(const std::shared_ptr<StagedCapture>& staged, int job, int first, int last,
                                    const std::function<bool(double)>& progress = {});
    // A message for a dialog: input errors spelled out as "file, line L, column C:" and what was expected.
    static QString describeError(const std::exception& e);

signals:
    void started(int id, const QString& path);
    void progress(int id, double fraction, const QString& stage);
    void finished(int id, prism::ui::SessionPtr session);
    void failed(int id, const QString& path, const QString& message);
    void cancelled(int id);

private:
    using Progress = std::function<bool(double, const char*)>; // fraction, stage; false: cancelled
    using Work = std::function<SessionPtr(const Progress&)>;
    // Runs `work` on a worker thread as a new load (the older one made stale): its session comes back as
    // finished(), Cancelled as cancelled(), any other exception as failed(path, message).
    int start(const QString& path, const Work& work);

    struct Job {
        int id = 0;
        std::atomic<bool> cancel{false};
    };
    std::shared_ptr<Job> m_current;
    std::atomic<int> m_nextId{1};
    bool m_busy = false;
};

} // namespace prism::ui
