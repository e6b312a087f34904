// openSession, readSessionMeta and isSessionFile: the .prism file (docs/SESSION_FORMAT.md) read back, every
// table checked on the way (a damaged file throws InputError). session_write.cpp writes it.
#include "store/session.h"

#include "io/report_json.h"
#include "store/flow_codec.h"
#include "store/session_db.h"
#include "store/sqlite_db.h"
#include "store/store_util.h"
#include "store/timeline_store.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <sys/mman.h>
#include <unordered_map>

namespace prism {

using nlohmann::json;
using store::crc32c;
using store::damaged;
using store::Database;
using store::FlowColumn;
using store::jsonInteger;
using store::jsonIntegers;
using store::Statement;

namespace {

std::vector<InputIssue> issuesFromJson(const json& a) {
    std::vector<InputIssue> out;
    for (const json& o : a)
        out.push_back({o.at("file").get<std::string>(), jsonInteger<std::uint64_t>(o.at("line")),
                       jsonInteger<std::uint32_t>(o.at("column")), o.at("message").get<std::string>()});
    return out;
}

struct MetaMap {
    std::unordered_map<std::string, std::string> values;
    std::string path;

    const std::string& get(const std::string& key) const {
        auto it = values.find(key);
        if (it == values.end())
            throw InputError({path, 0, 0, "the session file is damaged: meta has no \"" + key + "\""});
        return it->second;
    }
    std::uint64_t number(const std::string& key) const {
        const std::string& v = get(key);
        try {
            std::size_t used = 0;
            auto n = std::stoull(v, &used);
            if (used == v.size()) return n;
        } catch (const std::exception&) {
        }
        throw InputError({path, 0, 0, "the session file is damaged: meta \"" + key + "\" is \"" + v +
                                          "\", expected a number"});
    }
};

MetaMap readMetaMap(Database& db, const std::string& path) {
    MetaMap m;
    m.path = path;
    Statement s(db, "SELECT key, value FROM meta");
    while (s.step()) m.values[s.text(0)] = s.text(1);
    return m;
}

SessionMeta metaFrom(const MetaMap& m) {
    SessionMeta meta;
    meta.format = m.get("format");
    meta.schemaVersion = int(m.number("schema_version"));
    meta.toolVersion = m.get("tool_version");
    meta.created = m.get("created");
    meta.source = m.get("source");
    meta.flowsPath = m.get("flows_path");
    meta.topologyPath = m.get("topology_path");
    meta.flows = {m.get("flows_sha256"), m.number("flows_bytes")};
    meta.topology = {m.get("topology_sha256"), m.number("topology_bytes")};
    meta.records = m.number("records");
    return meta;
}

Topology readTopology(Database& db, const std::string& path) {
    Topology t;
    {
        Statement s(db, "SELECT host, name FROM hosts ORDER BY host");
        while (s.step()) {
            if (s.integer(0) != std::int64_t(t.hosts.size())) damaged(path, "host ids are not consecutive");
            t.hosts.push_back({s.text(1), {}});
        }
    }
    {
        Statement s(db, "SELECT switch, name, tier, uplinks FROM switches ORDER BY switch");
        while (s.step()) {
            if (s.integer(0) != std::int64_t(t.switches.size())) damaged(path, "switch ids are not consecutive");
            t.switches.push_back({s.text(1), s.text(2), json::parse(s.text(3)).get<std::vector<std::string>>()});
        }
    }
    std::vector<std::vector<std::pair<std::int64_t, int>>> hostNics(t.hosts.size());
    {
        Statement s(db, "SELECT nic, ip, host, host_position, gpus, rail, switch FROM nics ORDER BY nic");
        while (s.step()) {
            if (s.integer(0) != std::int64_t(t.nics.size())) damaged(path, "NIC ids are not consecutive");
            Nic n;
            auto ip = IpAddr::parse(s.text(1));
            if (!ip) damaged(path, "NIC " + std::to_string(t.nics.size()) + " has ip \"" + s.text(1) + "\"");
            n.ip = *ip;
            n.gpus = jsonIntegers<int>(json::parse(s.text(4)));
            n.rail = int(s.integer(5));
            n.switchName = s.text(6);
            if (!s.isNull(2)) {
                std::int64_t h = s.integer(2);
                if (h < 0 || std::size_t(h) >= t.hosts.size()) damaged(path, "a NIC refers to a missing host");
                hostNics[std::size_t(h)].emplace_back(s.integer(3), int(t.nics.size()));
            }
            t.nics.push_back(std::move(n));
        }
    }
    for (std::size_t h = 0; h < t.hosts.size(); ++h) {
        std::sort(hostNics[h].begin(), hostNics[h].end());
        for (const auto& [pos, nic] : hostNics[h]) t.hosts[h].nics.push_back(nic);
    }
    t.index();
    return t;
}

void readEndpoints(Database& db, const std::string& path, std::size_t expected, FlowTable& flows) {
    flows.endpoints.reserve(expected);
    Statement s(db, "SELECT endpoint, ip FROM endpoints ORDER BY endpoint");
    while (s.step()) {
        auto ip = IpAddr::parse(s.text(1));
        if (!ip) damaged(path, "endpoint " + std::to_string(s.integer(0)) + " has ip \"" + s.text(1) + "\"");
        if (s.integer(0) != std::int64_t(flows.endpoints.size()) ||
            flows.endpoints.intern(*ip) != EndpointId(s.integer(0)))
            damaged(path, "endpoint ids are not consecutive or an address is listed twice");
    }
    if (flows.endpoints.size() != expected)
        damaged(path, "meta says " + std::to_string(expected) + " endpoints, the endpoints table has " +
                          std::to_string(flows.endpoints.size()));
}

// Sizes a column about to be filled. Its memory is fresh from the kernel; asking for transparent huge pages
// first (before the resize touches it) turns ~70,000 page faults of a large capture into ~140 (faults were a
// third of the open time).
void adviseHugePages([[maybe_unused]] const void* data, [[maybe_unused]] std::size_t bytes) {
#ifdef MADV_HUGEPAGE
    constexpr std::uintptr_t huge = std::uintptr_t(2) << 20;
    auto begin = (reinterpret_cast<std::uintptr_t>(data) + huge - 1) & ~(huge - 1);
    auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(huge - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}
template <typename T>
void sizeColumn(std::vector<T>& v, std::size_t n) {
    v.reserve(n);
    adviseHugePages(v.data(), n * sizeof(T));
    v.resize(n);
}
void sizeColumn(StartColumn& v, std::size_t n) {
    v.reserve(n);
    adviseHugePages(v.data(), n * 8);
    v.resize(n);
}
template <typename Value, typename Half>
void sizeColumn(HalvedColumn<Value, Half>& v, std::size_t n) {
    v.reserve(n);
    adviseHugePages(v.low(), n * sizeof(Half));
    v.resize(n);
}

void readFlows(Database& db, const std::string& path, std::uint64_t records, const OpenOptions& options,
               FlowTable& flows) {
    struct Chunk {
        std::int64_t id;
        std::uint64_t first = 0, count = 0;
        std::array<std::int64_t, store::kFlowColumnCount> rowids{}; // where each column's blob is
        std::array<std::uint32_t, store::kFlowColumnCount> crcs{};
        std::array<std::string, store::kFlowColumnCount> encodings;
        int columns = 0;
    };
    std::vector<Chunk> chunks;
    std::uint64_t blobBytes = 0;
    {
        // length() of a blob does not read the blob.
        Statement s(db, "SELECT chunk, column, first_record, records, encoding, length(data), id, crc32c "
                        "FROM flow_chunks ORDER BY chunk, column");
        while (s.step()) {
            FlowColumn col;
            if (!store::parseFlowColumn(s.text(1), col))
                damaged(path, "flow chunk " + std::to_string(s.integer(0)) + " has an unknown column \"" + s.text(1) +
                                  "\"");
            if (!store::flowEncodingKnown(col, s.text(4)))
                damaged(path, "flow column " + s.text(1) + " has an unknown encoding \"" + s.text(4) + "\"");
            if (chunks.empty() || chunks.back().id != s.integer(0)) {
                if (s.integer(2) < 0 || s.integer(3) < 0) damaged(path, "a flow chunk has a negative size");
                chunks.push_back(
                    {s.integer(0), std::uint64_t(s.integer(2)), std::uint64_t(s.integer(3)), {}, {}, {}, 0});
            }
            Chunk& c = chunks.back();
            if (std::uint64_t(s.integer(2)) != c.first || std::uint64_t(s.integer(3)) != c.count)
                damaged(path, "the columns of flow chunk " + std::to_string(c.id) + " disagree on its records");
            ++c.columns;
            c.rowids[std::size_t(col)] = s.integer(6);
            c.crcs[std::size_t(col)] = std::uint32_t(s.integer(7));
            c.encodings[std::size_t(col)] = s.text(4);
            blobBytes += std::uint64_t(s.integer(5));
        }
    }
    std::uint64_t next = 0;
    for (const Chunk& c : chunks) {
        if (c.first != next || c.columns != store::kFlowColumnCount)
            damaged(path, "flow chunk " + std::to_string(c.id) + " is missing or incomplete");
        next += c.count;
    }
    if (next != records)
        damaged(path, "meta says " + std::to_string(records) + " flow records, the chunks hold " +
                          std::to_string(next));
    // Every value takes at least one byte: a record count beyond the stored bytes is damage, not a reason to
    // allocate.
    if (records > blobBytes) damaged(path, "the flow chunks are smaller than their record counts");
    sizeColumn(flows.startNs, records);
    sizeColumn(flows.durationNs, records);
    sizeColumn(flows.src, records);
    sizeColumn(flows.dst, records);
    if (flows.endpoints.size() > 0x10000) // ids of 2^16 and more: decoded side by side into both halves
        for (IdColumn* ids : {&flows.src, &flows.dst}) ids->widen();
    sizeColumn(flows.srcPort, records);
    sizeColumn(flows.dstPort, records);
    sizeColumn(flows.proto, records);
    sizeColumn(flows.bytes, records);
    sizeColumn(flows.packets, records);

    // Each thread reads and decodes whole chunks on its own connection; the caller's thread reports progress.
    const unsigned threads = threadCount(options.threads);
    store::ConnectionPool connections(path, threads, db);
    std::vector<std::string> buffers(threads);
    std::vector<store::WideCounts> wide(threads); // per thread, added once all chunks are in
    const std::size_t endpoints = flows.endpoints.size();
    parallelFor(
        chunks.size(), threads,
        [&](std::size_t k, unsigned worker) {
            const Chunk& c = chunks[k];
            std::string& blob = buffers[worker];
            for (int col = 0; col < store::kFlowColumnCount; ++col) {
                const std::string where =
                    "flow chunk " + std::to_string(c.id) + " column " + store::flowColumnName(FlowColumn(col));
                connections.get(worker).readBlob("flow_chunks", "data", c.rowids[std::size_t(col)], blob);
                if (crc32c(blob) != c.crcs[std::size_t(col)]) damaged(path, where + " fails its CRC-32C check");
                std::string err = store::decodeFlowColumn(FlowColumn(col), c.encodings[std::size_t(col)], blob, c.first,
                                                          c.count, endpoints, flows, &wide[worker]);
                if (!err.empty()) damaged(path, where + ": " + err);
            }
        },
        [&](std::size_t done) {
            if (options.progress && !options.progress(0.05 + 0.5 * double(done) / double(chunks.size())))
                throw Cancelled();
        });
    flows.startNs.compact(threads); // as a capture loaded from its files holds them
    for (store::WideCounts& w : wide) {
        for (auto [column, chunks] : {std::pair{&flows.durationNs, &w.durations}, std::pair{&flows.bytes, &w.bytes},
                                      std::pair{&flows.packets, &w.packets}})
            for (store::WideCounts::Chunk& c : *chunks) {
                store::setHigh(*column, c);
                std::vector<std::uint32_t>().swap(c.high); // (one chunk's at a time beside the column)
            }
    }
}

// reportFromJson leaves the capture summary out; read it back as reportToJson wrote it.
CaptureSummary summaryFromJson(const json& o) {
    CaptureSummary c;
    c.source = o.at("source").get<std::string>();
    c.records = jsonInteger<std::uint64_t>(o.at("records"));
    c.roceRecords = jsonInteger<std::uint64_t>(o.at("roce_records"));
    c.otherRecords = jsonInteger<std::uint64_t>(o.at("other_records"));
    c.roceBytes = jsonInteger<std::uint64_t>(o.at("roce_bytes"));
    c.otherBytes = jsonInteger<std::uint64_t>(o.at("other_bytes"));
    c.hosts = jsonInteger<std::uint64_t>(o.at("hosts"));
    c.nics = jsonInteger<std::uint64_t>(o.at("nics"));
    c.endpoints = jsonInteger<std::uint64_t>(o.at("endpoints"));
    c.unknownRoceEndpoints = jsonInteger<std::uint64_t>(o.at("unknown_roce_endpoints"));
    if (o.contains("roce_endpoints")) c.roceEndpoints = jsonInteger<std::uint64_t>(o.at("roce_endpoints")); // 0: before
    if (o.contains("topology")) c.topologyGiven = o.at("topology") != "none";
    c.firstNs = jsonInteger<std::int64_t>(o.at("first_ns"));
    c.lastNs = jsonInteger<std::int64_t>(o.at("last_ns"));
    c.skippedRows = jsonInteger<std::uint64_t>(o.at("skipped_rows"));
    c.warnings = jsonInteger<std::uint64_t>(o.at("warnings"));
    c.messages = o.at("messages").get<std::vector<std::string>>();
    return c;
}

std::vector<std::string> jsonStrings(const std::string& text) {
    return json::parse(text).get<std::vector<std::string>>();
}

void readAnalysis(Database& db, const std::string& path, const MetaMap& meta, const FlowTable& flows, bool withRecords,
                  Analysis& a) {
    {
        Statement s(db, "SELECT json, crc32c FROM report");
        if (!s.step()) damaged(path, "the report table is empty");
        const std::string text = s.text(0);
        if (crc32c(text) != std::uint32_t(s.integer(1))) damaged(path, "the stored report fails its CRC-32C check");
        json j;
        try {
            j = json::parse(text);
        } catch (const json::exception& e) {
            damaged(path, std::string("the stored report is not valid JSON (") + e.what() + ")");
        }
        a.report = reportFromJson(j, path + " (stored report)");
        if (!a.report.capture && j.contains("capture")) a.report.capture = summaryFromJson(j.at("capture"));
    }
    a.recognition.notes = jsonStrings(meta.get("recognition_notes"));
    const std::size_t jobs = a.report.jobs.size();
    if (std::uint64_t(db.scalar("SELECT count(*) FROM jobs")) != jobs)
        damaged(path, "the jobs table does not match the stored report");
    a.recognition.jobs.resize(jobs);
    a.jobs.resize(jobs);
    const std::size_t endpoints = flows.endpoints.size();
    auto endpoint = [&](std::int64_t v) {
        if (v < 0 || std::uint64_t(v) >= endpoints) damaged(path, "an endpoint id is out of range");
        return EndpointId(v);
    };
    auto jobIndex = [&](std::int64_t v) {
        if (v < 0 || std::uint64_t(v) >= jobs) damaged(path, "a row refers to a missing job");
        return std::size_t(v);
    };
    {
        Statement s(db, "SELECT job, start_ns, end_ns, clusters, roce_bytes FROM jobs ORDER BY job");
        while (s.step()) {
            RecognizedJob& rj = a.recognition.jobs[jobIndex(s.integer(0))];
            rj.startNs = s.integer(1);
            rj.endNs = s.integer(2);
            rj.clusters = int(s.integer(3));
            rj.bytes = std::uint64_t(s.integer(4));
        }
    }
    {
        Statement s(db, "SELECT job, endpoint, unknown_position FROM job_ranks ORDER BY job, position");
        std::vector<std::vector<std::pair<std::int64_t, EndpointId>>> unknown(jobs);
        while (s.step()) {
            std::size_t j = jobIndex(s.integer(0));
            EndpointId e = endpoint(s.integer(1));
            a.recognition.jobs[j].nics.push_back(e);
            if (!s.isNull(2)) unknown[j].emplace_back(s.integer(2), e);
        }
        for (std::size_t j = 0; j < jobs; ++j) {
            std::sort(unknown[j].begin(), unknown[j].end());
            for (const auto& [pos, e] : unknown[j]) a.recognition.jobs[j].unknownNics.push_back(e);
        }
    }
    {
        Statement s(db, "SELECT job, host FROM job_hosts ORDER BY job, position");
        while (s.step()) a.recognition.jobs[jobIndex(s.integer(0))].hosts.push_back(int(s.integer(1)));
    }
    if (withRecords) { // else the flows were not read (OpenOptions::flows)
        Statement s(db, "SELECT job, records, encoding, crc32c, data FROM job_records ORDER BY job");
        while (s.step()) {
            std::size_t j = jobIndex(s.integer(0));
            std::string_view blob = s.blob(4);
            if (s.text(2) != "delta-zigzag-varint") damaged(path, "job_records has an unknown encoding");
            if (crc32c(blob) != std::uint32_t(s.integer(3))) damaged(path, "job_records fails its CRC-32C check");
            if (s.integer(1) < 0) damaged(path, "job_records has a negative count");
            std::vector<std::uint32_t> list;
            std::string err = store::decodeIndexList(blob, std::size_t(s.integer(1)), flows.size(), list);
            a.recognition.jobs[j].records.assign(list.begin(), list.end());
            if (!err.empty()) damaged(path, "job_records of job " + std::to_string(j) + ": " + err);
        }
    }
    {
        Statement s(db, "SELECT job, gpus, tp, pp, dp, notes FROM parallelism ORDER BY job");
        while (s.step()) {
            ParallelismResult& p = a.jobs[jobIndex(s.integer(0))].parallelism;
            p.gpus = int(s.integer(1));
            p.tp = int(s.integer(2));
            p.pp = int(s.integer(3));
            p.dp = int(s.integer(4));
            p.notes = jsonStrings(s.text(5));
        }
    }
    auto nested = [&](const char* sql, auto member) {
        Statement s(db, sql);
        while (s.step()) {
            auto& lists = a.jobs[jobIndex(s.integer(0))].parallelism.*member;
            std::int64_t k = s.integer(1);
            if (k < 0 || std::uint64_t(k) > lists.size()) damaged(path, "group or chain numbers are not consecutive");
            if (std::uint64_t(k) == lists.size()) lists.emplace_back();
            lists[std::size_t(k)].push_back(endpoint(s.integer(2)));
        }
    };
    nested("SELECT job, dp_group, endpoint FROM dp_groups ORDER BY job, dp_group, position",
           &ParallelismResult::dpGroups);
    nested("SELECT job, chain, endpoint FROM pp_chains ORDER BY job, chain, stage", &ParallelismResult::ppChains);
    {
        Statement s(db, "SELECT job, a, b, kind, bytes_ab, bytes_ba, records_ab, records_ba, asymmetry, simultaneity, "
                        "forward_votes, forward_score, distinct_sizes FROM pairs ORDER BY job, position");
        while (s.step()) {
            PairInfo p;
            p.a = endpoint(s.integer(1));
            p.b = endpoint(s.integer(2));
            p.kind = s.text(3) == "DP" ? PairKind::DP : PairKind::PP;
            p.bytesAB = std::uint64_t(s.integer(4));
            p.bytesBA = std::uint64_t(s.integer(5));
            p.recordsAB = std::uint32_t(s.integer(6));
            p.recordsBA = std::uint32_t(s.integer(7));
            p.asymmetry = s.real(8);
            p.simultaneity = s.real(9);
            p.forwardVotes = int(s.integer(10));
            p.forwardScore = s.real(11);
            p.distinctSizes = std::uint32_t(s.integer(12));
            a.jobs[jobIndex(s.integer(0))].parallelism.pairs.push_back(p);
        }
    }
    {
        // Present for every job, or for none (an analysis saved without its step divisions).
        Statement s(db, "SELECT job, json FROM step_divisions ORDER BY job");
        std::vector<StepDivision> divisions;
        while (s.step()) {
            if (s.integer(0) != std::int64_t(divisions.size())) damaged(path, "step divisions are not one per job");
            const json o = json::parse(s.text(1));
            StepDivision d;
            const int source = jsonInteger<int>(o.at("source"));
            if (source < 0 || source > int(StepSource::Pipeline))
                damaged(path, "a step division has an unknown source");
            d.source = StepSource(source);
            for (const json& st : o.at("steps"))
                d.steps.push_back({jsonInteger<int>(st.at(0)), jsonInteger<std::int64_t>(st.at(1)),
                                   jsonInteger<std::int64_t>(st.at(2)), st.at(3).get<bool>()});
            d.firstActivityNs = jsonIntegers<std::int64_t>(o.at("first_activity_ns"));
            d.syncStartNs = jsonIntegers<std::int64_t>(o.at("sync_start_ns"));
            d.syncEndNs = jsonIntegers<std::int64_t>(o.at("sync_end_ns"));
            d.changePoints = jsonIntegers<std::size_t>(o.at("change_points"));
            d.changeProbability = o.at("change_probability").get<std::vector<double>>();
            d.firstStepCut = o.at("first_step_cut").get<bool>();
            d.lastStepCut = o.at("last_step_cut").get<bool>();
            d.medianStepNs = jsonInteger<std::int64_t>(o.at("median_step_ns"));
            d.clockOffsetNs = jsonIntegers<std::int64_t>(o.at("clock_offset_ns"));
            d.notes = o.at("notes").get<std::vector<std::string>>();
            divisions.push_back(std::move(d));
        }
        if (!divisions.empty() && divisions.size() != jobs) damaged(path, "step divisions are not one per job");
        for (std::size_t j = 0; j < divisions.size(); ++j) a.jobs[j].division = std::move(divisions[j]);
    }
}

} // namespace

Session openSession(const std::string& path, const OpenOptions& options) {
    Session out;
    try {
        auto db = store::openSessionDatabase(path, false);
        auto report = [&](double f) {
            if (options.progress && !options.progress(f)) throw Cancelled();
        };
        MetaMap meta = readMetaMap(*db, path);
        out.meta = metaFrom(meta);
        Capture& c = out.capture;
        c.source = out.meta.source;
        c.flowsPath = out.meta.flowsPath;
        c.topologyPath = out.meta.topologyPath;
        c.hasTopology = meta.get("has_topology") == "1";
        json diag = json::parse(meta.get("diagnostics"));
        c.diagnostics.skippedRows = jsonInteger<std::uint64_t>(diag.at("skipped_rows"));
        c.diagnostics.warningCount = jsonInteger<std::uint64_t>(diag.at("warning_count"));
        c.diagnostics.errors = issuesFromJson(diag.at("errors"));
        c.diagnostics.warnings = issuesFromJson(diag.at("warnings"));
        c.topology = readTopology(*db, path);
        readEndpoints(*db, path, meta.number("endpoints"), c.flows);
        report(0.05);
        if (options.flows) readFlows(*db, path, out.meta.records, options, c.flows);
        readAnalysis(*db, path, meta, c.flows, options.flows, out.analysis);
        noteIdleNics(out.analysis.recognition, c.flows.endpoints, c.topology);
        // A report saved without its capture summary: it is a pure function of the capture.
        if (!out.analysis.report.capture) {
            if (!options.flows) readFlows(*db, path, out.meta.records, options, c.flows);
            out.analysis.report.capture = summarize(c);
        }
        out.notes = store::selectNotes(*db, path);
        report(0.6);
        if (options.timelines) {
            std::vector<JobTimeline> timelines = store::readTimelines(
                *db, path, out.analysis.report.jobs.size(), c.flows.endpoints.size(), threadCount(options.threads),
                [&](std::size_t done, std::size_t total) { report(0.6 + 0.4 * double(done) / double(total)); },
                options.packSegments);
            for (std::size_t j = 0; j < timelines.size(); ++j) out.analysis.jobs[j].timeline = std::move(timelines[j]);
        }
        report(1.0);
    } catch (...) {
        store::rethrowReadError(path);
    }
    return out;
}

SessionMeta readSessionMeta(const std::string& path) {
    try {
        auto db = store::openSessionDatabase(path, false);
        return metaFrom(readMetaMap(*db, path));
    } catch (...) {
        store::rethrowReadError(path);
    }
}

bool isSessionFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char head[72];
    if (!in.read(head, sizeof head)) return false;
    auto h = reinterpret_cast<const unsigned char*>(head);
    std::uint32_t appId = std::uint32_t(h[68]) << 24 | std::uint32_t(h[69]) << 16 | std::uint32_t(h[70]) << 8 | h[71];
    return std::memcmp(head, "SQLite format 3", 16) == 0 && appId == store::kApplicationId;
}

} // namespace prism
