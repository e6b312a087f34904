// saveSession: the .prism file (docs/SESSION_FORMAT.md) built in a temp file, synced and renamed over the
// target. session_read.cpp reads it back.
#include "store/session.h"

#include "io/report_json.h"
#include "store/flow_codec.h"
#include "store/session_db.h"
#include "store/sqlite_db.h"
#include "store/store_util.h"
#include "store/timeline_store.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>
#include <unordered_map>

namespace prism {

using nlohmann::json;
using store::Database;
using store::FlowColumn;
using store::Statement;
using store::crc32c;

namespace {

namespace fs = std::filesystem;

std::string utcNow() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

json issuesToJson(const std::vector<InputIssue>& list) {
    json a = json::array();
    for (const InputIssue& i : list)
        a.push_back({{"file", i.file}, {"line", i.line}, {"column", i.column}, {"message", i.message}});
    return a;
}

const char* pairKindName(PairKind k) { return k == PairKind::DP ? "DP" : "PP"; }

// Removes the temp file unless the write went through.
struct TempFile {
    std::string path;
    bool keep = false;
    ~TempFile() {
        if (keep) return;
        std::error_code ec;
        fs::remove(path, ec);
        fs::remove(path + "-journal", ec);
    }
};

void syncPath(const std::string& path, bool directory) {
    int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0) {
        if (directory) return; // best effort: some file systems do not open folders
        throw std::runtime_error(path + ": cannot open to sync");
    }
    int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0 && !directory) throw std::runtime_error(path + ": cannot sync to disk (disk full or I/O error?)");
}

class Writer {
public:
    Writer(Database& db, const Capture& capture, const Analysis& analysis, const SaveOptions& options,
           std::function<void(double)> progress)
        : m_db(db), m_capture(capture), m_analysis(analysis), m_options(options), m_progress(std::move(progress)) {}

    void write(const std::vector<Note>& notes, const SessionMeta& meta) {
        writeMeta(meta);
        writeTopology();
        writeEndpoints();
        writeFlows(0.0, 0.75);
        writeFlowPairs();
        m_progress(0.85);
        writeAnalysis();
        m_progress(0.88);
        std::vector<std::string> ids;
        for (const JobInfo& j : m_analysis.report.jobs) ids.push_back(j.id);
        store::writeTimelines(m_db, m_analysis.jobs, ids);
        m_progress(0.98);
        store::insertNotes(m_db, notes);
    }

private:
    void writeMeta(const SessionMeta& meta) {
        const LoadDiagnostics& d = m_capture.diagnostics;
        json diag{{"skipped_rows", d.skippedRows},
                  {"warning_count", d.warningCount},
                  {"errors", issuesToJson(d.errors)},
                  {"warnings", issuesToJson(d.warnings)}};
        std::vector<std::pair<std::string, std::string>> kv = {
            {"format", meta.format},
            {"schema_version", std::to_string(meta.schemaVersion)},
            {"tool_version", meta.toolVersion},
            {"created", meta.created},
            {"source", meta.source},
            {"flows_path", meta.flowsPath},
            {"topology_path", meta.topologyPath},
            {"checksum", "sha256"},
            {"flows_sha256", meta.flows.sha256},
            {"flows_bytes", std::to_string(meta.flows.bytes)},
            {"topology_sha256", meta.topology.sha256},
            {"topology_bytes", std::to_string(meta.topology.bytes)},
            {"has_topology", m_capture.hasTopology ? "1" : "0"},
            {"records", std::to_string(m_capture.flows.size())},
            {"endpoints", std::to_string(m_capture.flows.endpoints.size())},
            {"records_per_chunk", std::to_string(chunkSize())},
            {"diagnostics", diag.dump()},
            {"recognition_notes", json(m_analysis.recognition.notes).dump()},
        };
        Statement s(m_db, "INSERT INTO meta(key, value) VALUES (?, ?)");
        for (const auto& [k, v] : kv) s.bind(1, k).bind(2, v).run();
    }

    std::size_t chunkSize() const { return std::max<std::size_t>(1, m_options.recordsPerChunk); }

    void writeTopology() {
        const Topology& t = m_capture.topology;
        Statement h(m_db, "INSERT INTO hosts(host, name) VALUES (?, ?)");
        for (std::size_t i = 0; i < t.hosts.size(); ++i) h.bind(1, std::int64_t(i)).bind(2, t.hosts[i].name).run();
        Statement s(m_db, "INSERT INTO switches(switch, name, tier, uplinks) VALUES (?, ?, ?, ?)");
        for (std::size_t i = 0; i < t.switches.size(); ++i) {
            const Switch& sw = t.switches[i];
            s.bind(1, std::int64_t(i)).bind(2, sw.name).bind(3, sw.tier).bind(4, json(sw.uplinks).dump()).run();
        }
        // Position of each NIC in its host's list, so the host's order comes back exactly.
        std::vector<int> hostOf(t.nics.size(), -1), position(t.nics.size(), -1);
        for (std::size_t hi = 0; hi < t.hosts.size(); ++hi)
            for (std::size_t p = 0; p < t.hosts[hi].nics.size(); ++p) {
                auto n = std::size_t(t.hosts[hi].nics[p]);
                if (n < t.nics.size()) hostOf[n] = int(hi), position[n] = int(p);
            }
        Statement n(m_db, "INSERT INTO nics(nic, ip, host, host_name, host_position, gpu, gpus, rail, switch) "
                          "VALUES (?,?,?,?,?,?,?,?,?)");
        for (std::size_t i = 0; i < t.nics.size(); ++i) {
            const Nic& nic = t.nics[i];
            n.bind(1, std::int64_t(i)).bind(2, nic.ip.toString());
            if (hostOf[i] >= 0)
                n.bind(3, hostOf[i]).bind(4, t.hosts[std::size_t(hostOf[i])].name).bind(5, position[i]);
            else
                n.bindNull(3).bindNull(4).bindNull(5);
            if (!nic.gpus.empty()) n.bind(6, nic.gpus.front()); else n.bindNull(6);
            n.bind(7, json(nic.gpus).dump()).bind(8, nic.rail).bind(9, nic.switchName).run();
        }
    }

    void writeEndpoints() {
        const FlowTable& f = m_capture.flows;
        const Topology& t = m_capture.topology;
        Statement s(m_db, "INSERT INTO endpoints(endpoint, ip, nic, host_name) VALUES (?, ?, ?, ?)");
        for (EndpointId e = 0; e < f.endpoints.size(); ++e) {
            s.bind(1, e).bind(2, f.endpoints.at(e).toString());
            if (auto nic = t.nicByIp(f.endpoints.at(e))) {
                s.bind(3, *nic);
                int host = t.nics[std::size_t(*nic)].host;
                if (host >= 0) s.bind(4, t.hosts[std::size_t(host)].name); else s.bindNull(4);
            } else {
                s.bindNull(3).bindNull(4);
            }
            s.run();
        }
    }

    void writeFlows(double lo, double hi) {
        const FlowTable& f = m_capture.flows;
        const std::size_t per = chunkSize();
        const std::size_t chunks = (f.size() + per - 1) / per;
        Statement s(m_db, "INSERT INTO flow_chunks(chunk, column, first_record, records, encoding, crc32c, data) "
                          "VALUES (?,?,?,?,?,?,?)");
        // Batches of chunks are encoded in parallel, then inserted in order.
        const unsigned threads = threadCount(0);
        const std::size_t batch = std::max<std::size_t>(1, threads);
        std::vector<std::array<std::string, store::kFlowColumnCount>> encoded(batch);
        for (std::size_t c0 = 0; c0 < chunks; c0 += batch) {
            std::size_t nb = std::min(batch, chunks - c0);
            parallelFor(nb, threads, [&](std::size_t b, unsigned) {
                std::size_t first = (c0 + b) * per, count = std::min(per, f.size() - first);
                for (int col = 0; col < store::kFlowColumnCount; ++col) {
                    std::string& out = encoded[b][std::size_t(col)];
                    out.clear();
                    store::encodeFlowColumn(f, FlowColumn(col), first, count, out);
                }
            });
            for (std::size_t b = 0; b < nb; ++b) {
                std::size_t c = c0 + b, first = c * per, count = std::min(per, f.size() - first);
                for (int col = 0; col < store::kFlowColumnCount; ++col) {
                    const std::string& data = encoded[b][std::size_t(col)];
                    s.bind(1, std::int64_t(c)).bind(2, store::flowColumnName(FlowColumn(col)));
                    s.bind(3, std::int64_t(first)).bind(4, std::int64_t(count));
                    s.bind(5, store::flowColumnEncoding(FlowColumn(col), f.endpoints.size()));
                    s.bind(6, std::int64_t(crc32c(data)));
                    s.bindBlob(7, data.data(), data.size()).run();
                }
                m_progress(lo + (hi - lo) * double(c + 1) / double(chunks));
            }
        }
    }

    void writeFlowPairs() {
        const FlowTable& f = m_capture.flows;
        struct Agg {
            std::uint64_t key = ~std::uint64_t(0); // empty slot
            std::uint64_t records = 0, bytes = 0, packets = 0;
            std::int64_t first = 0, last = 0;
        };
        // Open addressing on (src, dst, RoCE or not): a few thousand pairs hit millions of times, where
        // std::unordered_map's node chasing showed in the profile.
        std::vector<Agg> table(1024);
        std::size_t used = 0;
        auto slot = [&](std::uint64_t key) -> Agg& {
            std::size_t mask = table.size() - 1, i = std::size_t((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
            while (table[i].key != key && table[i].key != ~std::uint64_t(0)) i = (i + 1) & mask;
            return table[i];
        };
        for (std::size_t i = 0; i < f.size(); ++i) {
            const std::uint64_t key =
                std::uint64_t(f.src[i]) << 33 | std::uint64_t(f.dst[i]) << 1 | (f.isRoce(i) ? 1 : 0);
            Agg* a = &slot(key);
            if (a->key != key) {
                if (2 * (used + 1) > table.size()) {
                    std::vector<Agg> old(table.size() * 2);
                    old.swap(table);
                    for (const Agg& x : old)
                        if (x.key != ~std::uint64_t(0)) slot(x.key) = x;
                    a = &slot(key);
                }
                ++used;
                a->key = key;
                a->first = f.startNs[i];
                a->last = f.end(i);
            }
            ++a->records;
            a->bytes += f.bytes[i];
            a->packets += f.packets[i];
            a->first = std::min(a->first, f.startNs[i]);
            a->last = std::max(a->last, f.end(i));
        }
        std::vector<Agg> sorted;
        sorted.reserve(used);
        for (const Agg& x : table)
            if (x.key != ~std::uint64_t(0)) sorted.push_back(x);
        std::sort(sorted.begin(), sorted.end(), [](const Agg& a, const Agg& b) { return a.key < b.key; });
        std::vector<std::string> ips(f.endpoints.size());
        for (EndpointId e = 0; e < f.endpoints.size(); ++e) ips[e] = f.endpoints.at(e).toString();
        Statement s(m_db, "INSERT INTO flow_pairs(src_ip, dst_ip, roce, records, bytes, packets, first_ns, last_ns) "
                          "VALUES (?,?,?,?,?,?,?,?)");
        for (const Agg& a : sorted) {
            s.bind(1, ips[a.key >> 33]).bind(2, ips[(a.key >> 1) & 0xffffffffu]).bind(3, int(a.key & 1));
            s.bind(4, a.records).bind(5, a.bytes).bind(6, a.packets).bind(7, a.first).bind(8, a.last).run();
        }
    }

    void writeAnalysis() {
        const Report& report = m_analysis.report;
        const FlowTable& f = m_capture.flows;
        const Topology& topo = m_capture.topology;
        const std::size_t jobs = report.jobs.size();
        const auto divisions = std::count_if(m_analysis.jobs.begin(), m_analysis.jobs.end(),
                                             [](const JobAnalysis& j) { return j.division.has_value(); });
        if (m_analysis.recognition.jobs.size() != jobs || m_analysis.jobs.size() != jobs ||
            (divisions != 0 && std::size_t(divisions) != jobs))
            throw std::invalid_argument("saveSession: the analysis has " + std::to_string(jobs) + " report jobs, " +
                                        std::to_string(m_analysis.recognition.jobs.size()) + " recognized jobs, " +
                                        std::to_string(m_analysis.jobs.size()) + " analysed jobs and " +
                                        std::to_string(divisions) + " step divisions; they must match");
        auto ip = [&](EndpointId e) {
            if (e >= f.endpoints.size()) throw std::invalid_argument("saveSession: endpoint id out of range");
            return f.endpoints.at(e).toString();
        };
        const std::string reportJson = reportToJson(report).dump();
        Statement(m_db, "INSERT INTO report(json, crc32c) VALUES (?, ?)")
            .bind(1, reportJson)
            .bind(2, std::int64_t(crc32c(reportJson)))
            .run();

        Statement js(m_db, "INSERT INTO jobs(job, id, name, gpus, hosts, tp, pp, dp, start_ns, end_ns, steps, "
                           "findings, clusters, roce_bytes, roce_records) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
        Statement rk(m_db, "INSERT INTO job_ranks(job, position, ip, endpoint, host_name, label, stage, dp_group, "
                           "unknown_position) VALUES (?,?,?,?,?,?,?,?,?)");
        Statement jh(m_db, "INSERT INTO job_hosts(job, position, host, name) VALUES (?,?,?,?)");
        Statement jr(m_db, "INSERT INTO job_records(job, records, encoding, crc32c, data) VALUES (?,?,?,?,?)");
        Statement pa(m_db, "INSERT INTO parallelism(job, gpus, tp, pp, dp, notes) VALUES (?,?,?,?,?,?)");
        Statement dg(m_db, "INSERT INTO dp_groups(job, job_id, dp_group, position, ip, endpoint) VALUES (?,?,?,?,?,?)");
        Statement pc(m_db, "INSERT INTO pp_chains(job, job_id, chain, stage, ip, endpoint) VALUES (?,?,?,?,?,?)");
        Statement pr(m_db, "INSERT INTO pairs(job, job_id, position, a_ip, b_ip, a, b, kind, bytes_ab, bytes_ba, "
                           "records_ab, records_ba, asymmetry, simultaneity, forward_votes, forward_score, "
                           "distinct_sizes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
        Statement st(m_db, "INSERT INTO steps(job, job_id, step, idx, start_ns, end_ns, duration_ns, slow) "
                           "VALUES (?,?,?,?,?,?,?,?)");
        Statement fi(m_db, "INSERT INTO findings(job, job_id, finding, kind, ip, src_ip, dst_ip, switch, first_step, "
                           "last_step, score, message) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
        auto optText = [](Statement& s, int i, const std::string& v) -> Statement& {
            return v.empty() ? s.bindNull(i) : s.bind(i, v);
        };
        for (std::size_t j = 0; j < jobs; ++j) {
            const JobInfo& info = report.jobs[j];
            const RecognizedJob& rj = m_analysis.recognition.jobs[j];
            const ParallelismResult& par = m_analysis.jobs[j].parallelism;
            const auto jid = std::int64_t(j);
            js.bind(1, jid).bind(2, info.id);
            optText(js, 3, info.name);
            js.bind(4, std::int64_t(info.gpuTotal())).bind(5, std::int64_t(info.hosts.size()));
            js.bind(6, info.tp).bind(7, info.pp).bind(8, info.dp).bind(9, info.startNs).bind(10, info.endNs);
            js.bind(11, std::int64_t(info.steps.size())).bind(12, std::int64_t(info.findings.size()));
            js.bind(13, rj.clusters).bind(14, rj.bytes).bind(15, std::int64_t(rj.listed())).run();

            std::unordered_map<EndpointId, int> stage, group, unknownPos;
            for (std::size_t c = 0; c < par.ppChains.size(); ++c)
                for (std::size_t s = 0; s < par.ppChains[c].size(); ++s) stage[par.ppChains[c][s]] = int(s);
            for (std::size_t g = 0; g < par.dpGroups.size(); ++g)
                for (EndpointId e : par.dpGroups[g]) group[e] = int(g);
            for (std::size_t u = 0; u < rj.unknownNics.size(); ++u) unknownPos[rj.unknownNics[u]] = int(u);
            for (std::size_t p = 0; p < rj.nics.size(); ++p) {
                EndpointId e = rj.nics[p];
                const IpAddr& addr = f.endpoints.at(e);
                rk.bind(1, jid).bind(2, std::int64_t(p)).bind(3, ip(e)).bind(4, e);
                auto nic = topo.nicByIp(addr);
                int host = nic ? topo.nics[std::size_t(*nic)].host : -1;
                if (host >= 0) rk.bind(5, topo.hosts[std::size_t(host)].name); else rk.bindNull(5);
                rk.bind(6, topo.rankLabel(addr));
                if (auto it = stage.find(e); it != stage.end()) rk.bind(7, it->second); else rk.bindNull(7);
                if (auto it = group.find(e); it != group.end()) rk.bind(8, it->second); else rk.bindNull(8);
                if (auto it = unknownPos.find(e); it != unknownPos.end()) rk.bind(9, it->second); else rk.bindNull(9);
                rk.run();
            }
            if (unknownPos.size() != rj.unknownNics.size())
                throw std::invalid_argument("saveSession: an unknown NIC is listed twice");
            for (int u : rj.unknownNics)
                if (std::find(rj.nics.begin(), rj.nics.end(), EndpointId(u)) == rj.nics.end())
                    throw std::invalid_argument("saveSession: an unknown NIC of a job is not among its NICs");
            for (std::size_t p = 0; p < rj.hosts.size(); ++p) {
                int h = rj.hosts[p];
                std::string name = h >= 0 && std::size_t(h) < topo.hosts.size() ? topo.hosts[std::size_t(h)].name : "";
                jh.bind(1, jid).bind(2, std::int64_t(p)).bind(3, h).bind(4, name).run();
            }
            std::string recs;
            if (rj.packedRecords.empty()) store::encodeIndexList(rj.records, recs);
            const std::string& list = rj.packedRecords.empty() ? recs : rj.packedRecords; // the same encoding
            jr.bind(1, jid).bind(2, std::int64_t(rj.listed())).bind(3, "delta-zigzag-varint");
            jr.bind(4, std::int64_t(crc32c(list))).bindBlob(5, list.data(), list.size()).run();

            pa.bind(1, jid).bind(2, par.gpus).bind(3, par.tp).bind(4, par.pp).bind(5, par.dp);
            pa.bind(6, json(par.notes).dump()).run();
            for (std::size_t g = 0; g < par.dpGroups.size(); ++g)
                for (std::size_t p = 0; p < par.dpGroups[g].size(); ++p) {
                    EndpointId e = par.dpGroups[g][p];
                    dg.bind(1, jid).bind(2, info.id).bind(3, std::int64_t(g)).bind(4, std::int64_t(p));
                    dg.bind(5, ip(e)).bind(6, e).run();
                }
            for (std::size_t c = 0; c < par.ppChains.size(); ++c)
                for (std::size_t s = 0; s < par.ppChains[c].size(); ++s) {
                    EndpointId e = par.ppChains[c][s];
                    pc.bind(1, jid).bind(2, info.id).bind(3, std::int64_t(c)).bind(4, std::int64_t(s));
                    pc.bind(5, ip(e)).bind(6, e).run();
                }
            for (std::size_t p = 0; p < par.pairs.size(); ++p) {
                const PairInfo& x = par.pairs[p];
                pr.bind(1, jid).bind(2, info.id).bind(3, std::int64_t(p)).bind(4, ip(x.a)).bind(5, ip(x.b));
                pr.bind(6, x.a).bind(7, x.b).bind(8, pairKindName(x.kind)).bind(9, x.bytesAB).bind(10, x.bytesBA);
                pr.bind(11, x.recordsAB).bind(12, x.recordsBA).bind(13, x.asymmetry).bind(14, x.simultaneity);
                pr.bind(15, x.forwardVotes).bind(16, x.forwardScore).bind(17, x.distinctSizes).run();
            }
            for (std::size_t k = 0; k < info.steps.size(); ++k) {
                const StepInfo& s = info.steps[k];
                st.bind(1, jid).bind(2, info.id).bind(3, std::int64_t(k)).bind(4, s.index).bind(5, s.startNs);
                st.bind(6, s.endNs).bind(7, s.durationNs()).bind(8, int(s.slow)).run();
            }
            for (std::size_t k = 0; k < info.findings.size(); ++k) {
                const Finding& x = info.findings[k];
                fi.bind(1, jid).bind(2, info.id).bind(3, std::int64_t(k)).bind(4, x.kind);
                optText(fi, 5, x.ip);
                optText(fi, 6, x.srcIp);
                optText(fi, 7, x.dstIp);
                optText(fi, 8, x.switchName);
                fi.bind(9, x.firstStep).bind(10, x.lastStep).bind(11, x.score).bind(12, x.message).run();
            }
        }
        writeStepDivisions();
    }

    void writeStepDivisions() {
        Statement sd(m_db, "INSERT INTO step_divisions(job, job_id, source, steps, median_step_ns, first_step_cut, "
                           "last_step_cut, change_points, json) VALUES (?,?,?,?,?,?,?,?,?)");
        for (std::size_t j = 0; j < m_analysis.jobs.size(); ++j) {
            if (!m_analysis.jobs[j].division) continue; // none at all (checked above)
            const StepDivision& d = *m_analysis.jobs[j].division;
            json steps = json::array();
            for (const StepInfo& s : d.steps) steps.push_back({s.index, s.startNs, s.endNs, s.slow});
            json o{{"source", int(d.source)},
                   {"steps", std::move(steps)},
                   {"first_activity_ns", d.firstActivityNs},
                   {"sync_start_ns", d.syncStartNs},
                   {"sync_end_ns", d.syncEndNs},
                   {"change_points", d.changePoints},
                   {"change_probability", d.changeProbability},
                   {"first_step_cut", d.firstStepCut},
                   {"last_step_cut", d.lastStepCut},
                   {"median_step_ns", d.medianStepNs},
                   {"clock_offset_ns", d.clockOffsetNs},
                   {"notes", d.notes}};
            sd.bind(1, std::int64_t(j)).bind(2, m_analysis.report.jobs[j].id).bind(3, stepSourceName(d.source));
            sd.bind(4, std::int64_t(d.steps.size())).bind(5, d.medianStepNs).bind(6, int(d.firstStepCut));
            sd.bind(7, int(d.lastStepCut)).bind(8, json(d.changePoints).dump()).bind(9, o.dump()).run();
        }
    }

    Database& m_db;
    const Capture& m_capture;
    const Analysis& m_analysis;
    const SaveOptions& m_options;
    std::function<void(double)> m_progress;
};
} // namespace

namespace {

// Temp files of earlier saves of `name` in `dir` whose process is gone (killed mid-save): removed. A save in
// progress in another live process keeps its own.
void removeStaleTempFiles(const fs::path& dir, const std::string& name) {
    const std::string prefix = "." + name + ".tmp-";
    std::error_code ec;
    for (fs::directory_iterator it(dir.empty() ? fs::path(".") : dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string file = it->path().filename().string();
        if (file.rfind(prefix, 0) != 0) continue;
        const std::string rest = file.substr(prefix.size());
        const pid_t pid = pid_t(std::strtol(rest.c_str(), nullptr, 10));
        if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
            std::error_code ignored;
            fs::remove(it->path(), ignored);
        }
    }
}

} // namespace

void saveSession(const std::string& path, const Capture& capture, const Analysis& analysis,
                 const std::vector<Note>& notes, const SaveOptions& options) {
    const fs::path target = fs::absolute(path);
    std::error_code ec;
    for (const std::string& src : {capture.flowsPath, capture.topologyPath})
        if (!src.empty() && fs::exists(target, ec) && fs::equivalent(target, src, ec))
            throw InputError({path, 0, 0, "is a source file of the capture; a session never overwrites its source"});
    if (fs::is_directory(target, ec))
        throw std::runtime_error(path + ": is a folder, expected a session file name (e.g. capture.prism)");

    // Progress: checksums first when they must be read here (0..0.5), then the database.
    const bool hashFlows = !options.flowsChecksum && !capture.flowsPath.empty();
    const bool hashTopology = !options.topologyChecksum && !capture.topologyPath.empty();
    const double hashShare = hashFlows ? 0.5 : 0.0;
    auto report = [&](double f) {
        if (options.progress && !options.progress(f)) throw Cancelled();
    };
    SessionMeta meta;
    meta.toolVersion = LLMPRISM_VERSION;
    meta.created = utcNow();
    meta.source = capture.source;
    meta.flowsPath = capture.flowsPath;
    meta.topologyPath = capture.topologyPath;
    auto hash = [](const std::string& file, const std::function<bool(double)>& progress) -> FileChecksum {
        std::error_code e;
        if (!fs::exists(file, e)) return {}; // the source is gone: no checksum, not an error
        return sha256File(file, progress);
    };
    if (options.flowsChecksum) meta.flows = *options.flowsChecksum;
    else if (hashFlows)
        meta.flows = hash(capture.flowsPath,
                          [&](double f) { return !options.progress || options.progress(hashShare * f); });
    if (options.topologyChecksum) meta.topology = *options.topologyChecksum;
    else if (hashTopology) meta.topology = hash(capture.topologyPath, {});
    meta.records = capture.flows.size();

    fs::path dir = target.parent_path();
    // SQLite says only "unable to open database file": the folder's own answer says why.
    if (::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0)
        throw std::runtime_error(path + ": cannot write the session in " + (dir.empty() ? "." : dir.string()) +
                                 " (" + std::strerror(errno) + "); nothing changed");
    removeStaleTempFiles(dir, target.filename().string());
    static std::atomic<unsigned> counter{0};
    TempFile tmp{(dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                         std::to_string(counter++)))
                     .string()};
    fs::remove(tmp.path, ec);
    try {
        {
            Database db(tmp.path, Database::Mode::Create);
            // Big pages: flow chunks are read as long blobs. No journal: the file is not visible until renamed.
            db.exec("PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
                    "PRAGMA locking_mode = EXCLUSIVE; PRAGMA cache_size = -65536;");
            db.exec("PRAGMA application_id = " + std::to_string(store::kApplicationId) +
                    "; PRAGMA user_version = " + std::to_string(kSessionSchemaVersion) + ";");
            db.exec("BEGIN");
            db.exec(store::kSchemaSql);
            Writer w(db, capture, analysis, options, [&](double f) { report(hashShare + (1 - hashShare) * f); });
            w.write(notes, meta);
            db.exec("COMMIT");
        }
        syncPath(tmp.path, false);
        if (std::rename(tmp.path.c_str(), target.c_str()) != 0)
            throw std::runtime_error(path + ": cannot replace the file (" + std::strerror(errno) + ")");
        tmp.keep = true;
        syncPath(dir.string(), true);
    } catch (const store::SqliteError& e) {
        if (e.code() == SQLITE_FULL)
            throw std::runtime_error(path + ": the disk is full; the session was not written (nothing changed)");
        throw std::runtime_error(path + ": cannot write the session (" + e.what() + "); nothing changed");
    }
    if (options.progress) options.progress(1.0); // written: too late to cancel
}

} // namespace prism
