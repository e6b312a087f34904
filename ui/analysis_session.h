#pragma once
// What one load produces: the capture and the analysis report, shared read-only by every view.
#include "analysis/pipeline.h"
#include "analysis/staged.h"
#include "io/capture.h"
#include "model/flow_store.h"
#include "model/note.h"
#include "store/session.h"
#include "timeline_index.h"

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

namespace prism::ui {

// A capture larger than the memory budget, analysed in stages (docs/GUI.md "Captures larger than memory"): the
// store it is read from (its files, or a ClickHouse table), every job's staged entry (all steps and findings),
// and what fetching one job's window again needs. The sessions of its windows share it; one load at a time uses
// the store (`mutex`).
struct StagedCapture {
    std::unique_ptr<FlowStore> store;
    Topology topology;
    bool hasTopology = false;
    std::string topologyPath;
    std::vector<std::string> flowsPaths; // what the store reads: the flow files, or the table's URL
    Report report;               // the staged analysis: every job, every step
    std::vector<StagedJob> jobs; // per report job
    std::uint64_t budget = 0;    // bytes a window may take (kStagedBytesPerRecord a record)
    StagedStats stats;
    std::mutex mutex;
};

struct AnalysisSession {
    QString source;      // what was opened (the first of `sources` when several files were)
    QStringList sources; // every file or folder opened together (flow files of several kinds, a topology)
    Capture capture;
    // A capture analysed whole from files holds no flow records once analysed (its endpoints stay): the views
    // read the analysis. Saving it as a session, or comparing its links, reads the files again with these
    // options (readRecordsAgain) and checks they are the ones analysed: the same fingerprint (docs/GUI.md
    // "Memory").
    bool recordsReleased = false;
    std::vector<std::string> capturePaths;
    LoadOptions loadOptions;
    std::uint64_t recordsFingerprint = 0; // FlowTable::fingerprint of the records analysed
    // The capture with its records: this one's own when held, else read again and checked (throws
    // std::runtime_error naming the flow file when it changed, or when it would not fit in the memory available;
    // InputError when it cannot be read). `progress` as loadCapture's.
    std::shared_ptr<const Capture> withRecords(const std::function<bool(double)>& progress = {}) const;
    bool recordsHeld() const { return !recordsReleased; }
    Analysis analysis; // analysis.report is what the CLI would write
    // Set when the session was read from a .prism file: that file, and the notes stored in it.
    QString sessionPath;
    std::vector<Note> notes;
    std::optional<SessionMeta> meta; // what the file says about itself (source capture, checksums, created)
    // Level-of-detail index of each job's timeline, built by the loader's worker thread (so that showing a
    // job with millions of segments does not stall the window); empty entries are built on first use.
    // Entries built later are stored by the GUI thread only (the worker hands the session over first).
    mutable std::vector<std::shared_ptr<const TimelineIndex>> lod;
    // Set for a capture analysed in stages: the report holds every job as the staged analysis found it, except
    // `windowJob`, whose entry, records and timeline are those of its steps [windowFirst, windowLast] (the
    // window loaded; the other jobs have no timeline until one of theirs is loaded).
    std::shared_ptr<StagedCapture> staged;
    int windowJob = -1, windowFirst = 0, windowLast = -1;
    const Report& report() const { return analysis.report; }
    // Builds `lod` for every job (call before sharing the session; the indices point into `analysis`).
    void buildLod(const std::function<bool(double)>& progress = {});
    // Builds `lod` for the jobs in `jobs` only (others stay empty and are built when first shown).
    void buildLod(const std::vector<int>& jobs, const std::function<bool(double)>& progress = {});
};

using SessionPtr = std::shared_ptr<const AnalysisSession>;

} // namespace prism::ui

Q_DECLARE_METATYPE(prism::ui::SessionPtr)
