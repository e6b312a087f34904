#pragma once
// What one load produces: the capture and the analysis report, shared read-only by every view.
#include "analysis/pipeline.h"
#include "io/capture.h"
#include "model/note.h"
#include "store/session.h"
#include "timeline_index.h"

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <functional>
#include <memory>
#include <optional>

namespace prism::ui {

struct AnalysisSession {
    QString source;      // what was opened (the first of `sources` when several files were)
    QStringList sources; // every file or folder opened together (flow files of several kinds, a topology)
    Capture capture;
    Analysis analysis; // analysis.report is what the CLI would write
    // Set when the session was read from a .prism file: that file, and the notes stored in it.
    QString sessionPath;
    std::vector<Note> notes;
    std::optional<SessionMeta> meta; // what the file says about itself (source capture, checksums, created)
    // Level-of-detail index of each job's timeline, built by the loader's worker thread (so that showing a
    // job with millions of segments does not stall the window); empty entries are built on first use.
    // Entries built later are stored by the GUI thread only (the worker hands the session over first).
    mutable std::vector<std::shared_ptr<const TimelineIndex>> lod;
    const Report& report() const { return analysis.report; }
    // Builds `lod` for every job (call before sharing the session; the indices point into `analysis`).
    void buildLod(const std::function<bool(double)>& progress = {});
    // Builds `lod` for the jobs in `jobs` only (others stay empty and are built when first shown).
    void buildLod(const std::vector<int>& jobs, const std::function<bool(double)>& progress = {});
};

using SessionPtr = std::shared_ptr<const AnalysisSession>;

} // namespace prism::ui

Q_DECLARE_METATYPE(prism::ui::SessionPtr)
