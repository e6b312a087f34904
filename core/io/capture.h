#pragma once
// Loading a capture (model/capture.h): flow data + topology.json, from a folder or the files named directly;
// the flows.csv and topology.json readers and writers.
#include "model/capture.h"

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace prism {

// What to do when a capture holds more records than fit in memory (LoadOptions::maxRecords), in every reader's
// message.
inline constexpr const char* kStagedAdvice =
    "analyse it in stages, `llmprism-cli analyze --memory SIZE` (docs/ENGINE.md \"Staged analysis\")";

// What a whole read holds, in records, against LoadOptions::maxRecords (set at about 90 bytes a record): each
// distinct address and each flow a packet reader holds open costs about two records more (measured: 10^7 tiny
// packets, each a flow from an address of its own, peak at 257 bytes a record; docs/BENCHMARKS.md "Hostile
// packet captures").
inline std::uint64_t recordsHeld(std::uint64_t records, std::uint64_t endpoints, std::uint64_t openFlows = 0) {
    return records + 2 * endpoints + 2 * openFlows;
}

struct LoadOptions {
    bool strict = false; // stop at the first bad row (InputError) instead of skipping it
    // Called now and then with a fraction in [0,1]; return false to cancel (the load throws Cancelled).
    std::function<bool(double)> progress;
    // The topology to use instead of the one found next to the flow data (--topology).
    std::string topologyPath;
    // The zone of local-time stamps in collector CSVs (--tz): "" or "UTC", "+02:00", an IANA name.
    std::string timeZone;
    // Packet captures: the flow builder's idle and active timeouts and RoCE message gap (0: PacketFlowBuilder's
    // defaults; --idle-timeout, --active-timeout, --message-gap).
    std::int64_t idleTimeoutNs = 0;
    std::int64_t activeTimeoutNs = 0;
    std::int64_t messageGapNs = 0;
    // flows.csv: plain files from this size on are parsed in parallel parts, on `threads` threads (0: one per
    // core); the table, its order and every message are those of a sequential read. Strict loads and .gz
    // files read sequentially.
    // Only the records starting in [fromNs, toNs) are kept (--from, --to); a ClickHouse table sends no others.
    std::int64_t fromNs = std::numeric_limits<std::int64_t>::min();
    std::int64_t toNs = std::numeric_limits<std::int64_t>::max();
    // flows.csv read whole: more records than this (0: no limit) is an InputError saying to analyse in stages,
    // before memory runs out (a .gz that inflates a thousandfold; set from the memory available).
    std::uint64_t maxRecords = 0;
    std::uint64_t parallelFromBytes = std::uint64_t(16) << 20;
    unsigned threads = 0;
};

// flows.csv reader (docs/FORMATS.md): header row with columns found by name, extra columns ignored, '#' comments,
// CRLF, gzip (by magic bytes, any file name), rows in any order (the table comes back sorted by start).
// Strict: throws InputError at the first bad row. Lenient: skips it and records it in `diag`.
// Fatal in both modes (InputError): missing/unreadable file, missing required column, binary garbage header.
FlowTable readFlowsCsv(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag);

// The same rows, messages and checks, streamed: once `batchRecords` rows are read (and at the end) the rows read
// since the last batch go to `batch` in file order (not sorted); endpoint ids stay the same from batch to batch.
// A batch ends at a read chunk's end, so it holds at most `batchRecords` plus one chunk's rows. A .gz is parsed on one
// core and inflated on the other; a plain file (lenient, from `parallelFromBytes` on, more than one thread) is parsed
// in 8 MiB parts on every core, ahead of the caller, and each part is a batch of its own (whatever
// `batchRecords`). Memory: a batch (a few parts when parallel) and the endpoints.
void streamFlowsCsv(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag,
                    std::size_t batchRecords, const std::function<void(const FlowTable&)>& batch);

// Where the rows of a streamed batch were read: one mark per read chunk (about 4 MiB) after the header, at the
// start of a line. The rows of the batch from `row` to the next mark's row come from the file's bytes from `byte`
// on (uncompressed bytes for .gz), after `line` lines of the file.
struct CsvChunkMark {
    std::size_t row = 0;
    std::uint64_t byte = 0;
    std::uint64_t line = 0;
};
// Part of a plain (not gzip) flows.csv: bytes [from, to), `from` 0 (the file's start) or a mark's byte, `line` its
// line. Rows are numbered in messages as in the whole file.
struct CsvByteRange {
    std::uint64_t from = 0;
    std::uint64_t to = UINT64_MAX;
    std::uint64_t line = 0;
};
// streamFlowsCsv with the marks of each batch (`marks`: the chunk marks of the batch's rows; rows before the
// first mark continue the previous batch's last mark, or the file's start), and, when `range` is given, only
// that part of a plain file: the header is read from the file's start, the rows from the range.
void streamFlowsCsv(const std::string& path, const LoadOptions& options, LoadDiagnostics& diag,
                    std::size_t batchRecords,
                    const std::function<void(const FlowTable&, const std::vector<CsvChunkMark>& marks)>& batch,
                    const CsvByteRange* range = nullptr);

// Writes `flows` as flows.csv (gzip when `path` ends in ".gz"), rows in start order, `comment` lines first as
// "# ..." lines; the congestion columns retransmits,cnps,ecn_ce when the table has them. Atomic: written to
// path + ".tmp" and renamed. Throws std::runtime_error when the file cannot be written.
// `order`: the rows to write, in that order (all, in table order, when null).
void writeFlowsCsv(const FlowTable& flows, const std::string& path, const std::vector<std::string>& comment = {},
                   const std::vector<std::uint32_t>* order = nullptr);

// topology.json reader, or a hostfile with addresses (io/topology_csv.h), told apart by content; throws
// InputError (file, line, column, what was expected) on any problem,
// including a duplicate NIC ip, a NIC without ip, or a NIC on an unknown host.
Topology readTopologyJson(const std::string& path);
// Several topology files of either form as one topology (the hosts of each, in order): a NIC address or a host
// name in two files is an InputError naming both.
Topology readTopologyFiles(const std::vector<std::string>& paths);
void writeTopologyJson(const Topology& topology, const std::string& path);

// Resolves `pathOrFolder` (a folder holding topology.json and flow data, or a flow data file, or the
// topology file) and loads both; flow data of every kind is detected by content (io/flow_source.h), several
// files are merged into one table sorted by start. RoCE endpoints missing from the topology become warnings
// in the diagnostics (never guessed). Without a topology a warning says each NIC is treated as its own host.
Capture loadCapture(const std::string& pathOrFolder, const LoadOptions& options = {});
// The same for several sources (folders and files, each as above), merged into one capture.
Capture loadCapture(const std::vector<std::string>& sources, const LoadOptions& options = {});
struct CaptureFiles;
// The same for the files findCaptureFiles (io/flow_source.h) found: a caller that looked at them first (to judge
// whether they fit in memory) does not look for them again.
Capture loadCapture(CaptureFiles found, const LoadOptions& options = {});

} // namespace prism
