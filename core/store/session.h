#pragma once
// The session file (.prism): one SQLite database holding a capture (topology and every flow record), the
// analysis made from it and the user's notes, so reopening needs no re-analysis and the file can be handed
// to others and queried with the `sqlite3` shell. The schema is docs/SESSION_FORMAT.md.
//
// Writing is atomic: the database is built in a temp file next to the target, synced and renamed over it,
// so a crash, a cancel or a full disk leaves either the old file or the new one, never half of one.
// Opening never writes; a foreign file, a newer schema or a damaged database throws InputError naming the
// file and what was expected. The source capture is only ever read (its checksum is taken).
#include "analysis/pipeline.h"
#include "model/capture.h"
#include "model/note.h"
#include "store/sha256.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace prism {

inline constexpr const char* kSessionFormat = "llmprism-session";
inline constexpr int kSessionSchemaVersion = 1;
inline constexpr const char* kSessionExtension = ".prism";

struct SessionMeta {
    std::string format = kSessionFormat;
    int schemaVersion = kSessionSchemaVersion;
    std::string toolVersion;  // LLMPrism version that wrote the file
    std::string created;      // UTC, ISO 8601 ("2026-11-22T10:15:30Z")
    std::string source;       // the capture as the user named it (Capture::source)
    std::string flowsPath;    // Capture::flowsPath at import
    std::string topologyPath; // Capture::topologyPath at import (empty: none)
    FileChecksum flows;       // SHA-256 and size of the source files when saved (empty when unreadable)
    FileChecksum topology;
    std::uint64_t records = 0; // flow records stored
};

struct Session {
    SessionMeta meta;
    Capture capture;   // flows, topology, load diagnostics and the source paths, as imported
    Analysis analysis; // report, recognition, parallelism, step divisions and timelines, as analysed
    std::vector<Note> notes;
};

struct SaveOptions {
    // Called with a fraction in [0,1]; return false to cancel (throws Cancelled; nothing is written).
    std::function<bool(double)> progress;
    // Checksums of the source files, when the caller has them (the CLI hashes while it loads). When unset,
    // saveSession reads Capture::flowsPath / topologyPath to compute them.
    std::optional<FileChecksum> flowsChecksum;
    std::optional<FileChecksum> topologyChecksum;
    std::size_t recordsPerChunk = 1 << 18; // flow records per stored chunk
};

struct OpenOptions {
    // Called with a fraction in [0,1]; return false to cancel (throws Cancelled).
    std::function<bool(double)> progress;
    // Read the stored per-rank timelines (half the file and half the open time on a large capture); a
    // caller that only needs the report (the CLI) skips them.
    bool timelines = true;
    // Read the flow records and each job's list of them (most of the file). A caller that needs only what is
    // stored beside them (the report, the timelines: `llmprism-cli analyze S.prism`) skips them: the capture then
    // holds its metadata and endpoints, no records, and the recognized jobs no record lists. (A session whose
    // report lacks the capture summary has its flows read anyway: the summary is made from them.)
    bool flows = true;
    // The timelines' segments packed chunk by chunk as they are read (RankTimeline::packed): a view that holds
    // them (the GUI) never holds them all unpacked.
    bool packSegments = false;
    unsigned threads = 0; // decoding threads; 0: one per core
};

// Writes `path` atomically. Throws std::runtime_error on I/O failure (disk full, no permission) and
// InputError when `path` would overwrite a source file of the capture. `analysis` must come from `capture`
// (as runAnalysis makes it: one recognized job and one JobAnalysis per report job; step divisions for every
// job or none), else std::invalid_argument.
void saveSession(const std::string& path, const Capture& capture, const Analysis& analysis,
                 const std::vector<Note>& notes, const SaveOptions& options = {});

// Reads everything back. Throws InputError (file and what was expected) for a missing, foreign, newer or
// damaged file.
Session openSession(const std::string& path, const OpenOptions& options = {});

// Only the meta table (cheap: no flows are read). Throws like openSession.
SessionMeta readSessionMeta(const std::string& path);

// True when `path` is an LLMPrism session of any schema version (SQLite header and application id);
// never throws. Use it to decide between openSession and loadCapture.
bool isSessionFile(const std::string& path);

} // namespace prism
