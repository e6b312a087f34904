// The session file (.prism): a capture and its analysis saved and reopened field by field, notes, the
// documented example queries and the CLI's `import` and `analyze SESSION.prism`. When things go wrong (atomic
// writes, foreign / newer / damaged files, the untouched source capture): tst_store_safety.cpp.
#include "store_test_util.h"
#include "test_util.h"
#include "analysis/pipeline.h"
#include "io/capture.h"
#include "io/report_json.h"
#include "sim/simulator.h"
#include "store/flow_codec.h"
#include "store/notes.h"
#include "store/session.h"
#include "store/sha256.h"
#include "store/store_util.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

using namespace prism;
using namespace prism::test;

namespace {

namespace fs = std::filesystem;

void compareTopology(const Topology& a, const Topology& b) {
    QCOMPARE(a.hosts.size(), b.hosts.size());
    for (std::size_t i = 0; i < a.hosts.size(); ++i) {
        QCOMPARE(a.hosts[i].name, b.hosts[i].name);
        QCOMPARE(a.hosts[i].nics, b.hosts[i].nics);
    }
    QCOMPARE(a.nics.size(), b.nics.size());
    for (std::size_t i = 0; i < a.nics.size(); ++i) {
        QVERIFY(a.nics[i].ip == b.nics[i].ip);
        QCOMPARE(a.nics[i].gpus, b.nics[i].gpus);
        QCOMPARE(a.nics[i].rail, b.nics[i].rail);
        QCOMPARE(a.nics[i].switchName, b.nics[i].switchName);
        QCOMPARE(a.nics[i].host, b.nics[i].host);
        QCOMPARE(a.nics[i].switchIndex, b.nics[i].switchIndex);
    }
    QCOMPARE(a.switches.size(), b.switches.size());
    for (std::size_t i = 0; i < a.switches.size(); ++i) {
        QCOMPARE(a.switches[i].name, b.switches[i].name);
        QCOMPARE(a.switches[i].tier, b.switches[i].tier);
        QCOMPARE(a.switches[i].uplinks, b.switches[i].uplinks);
    }
    for (const Nic& n : a.nics) QCOMPARE(b.nicByIp(n.ip), a.nicByIp(n.ip));
}

void compareFlows(const FlowTable& a, const FlowTable& b) {
    QCOMPARE(b.size(), a.size());
    QCOMPARE(b.endpoints.size(), a.endpoints.size());
    for (EndpointId e = 0; e < a.endpoints.size(); ++e) QVERIFY(a.endpoints.at(e) == b.endpoints.at(e));
    QVERIFY(a.startNs == b.startNs);
    QVERIFY(a.durationNs == b.durationNs);
    QVERIFY(a.src == b.src);
    QVERIFY(a.dst == b.dst);
    QVERIFY(a.srcPort == b.srcPort);
    QVERIFY(a.dstPort == b.dstPort);
    QVERIFY(a.proto == b.proto);
    QVERIFY(a.bytes == b.bytes);
    QVERIFY(a.packets == b.packets);
}

void compareTimelines(const std::vector<JobAnalysis>& a, const std::vector<JobAnalysis>& b) {
    QCOMPARE(b.size(), a.size());
    for (std::size_t j = 0; j < a.size(); ++j) {
        const JobTimeline &x = a[j].timeline, &y = b[j].timeline;
        QCOMPARE(y.startNs, x.startNs);
        QCOMPARE(y.endNs, x.endNs);
        QCOMPARE(y.steps.size(), x.steps.size());
        for (std::size_t k = 0; k < x.steps.size(); ++k) {
            QCOMPARE(y.steps[k].index, x.steps[k].index);
            QCOMPARE(y.steps[k].startNs, x.steps[k].startNs);
            QCOMPARE(y.steps[k].endNs, x.steps[k].endNs);
            QCOMPARE(y.steps[k].slow, x.steps[k].slow);
        }
        QCOMPARE(y.segmentCount(), x.segmentCount());
        QCOMPARE(y.ranks.size(), x.ranks.size());
        for (std::size_t r = 0; r < x.ranks.size(); ++r) {
            const RankTimeline &p = x.ranks[r], &q = y.ranks[r];
            QCOMPARE(q.nic, p.nic);
            QCOMPARE(q.ip, p.ip);
            QCOMPARE(q.label, p.label);
            QCOMPARE(q.stage, p.stage);
            QCOMPARE(q.dpGroup, p.dpGroup);
            QCOMPARE(q.host, p.host);
            QCOMPARE(q.maxSegmentNs, p.maxSegmentNs);
            QCOMPARE(q.segments.size(), p.segments.size());
            for (std::size_t s = 0; s < p.segments.size(); ++s) {
                const Segment &u = p.segments[s], &v = q.segments[s];
                if (u.startNs != v.startNs || u.endNs != v.endNs || u.kind != v.kind || u.microBatch != v.microBatch ||
                    u.peer != v.peer || u.bytes != v.bytes)
                    QFAIL(qPrintable(QString("job %1 rank %2 segment %3 differs").arg(j).arg(r).arg(s)));
            }
            QCOMPARE(q.stepStats.size(), p.stepStats.size());
            for (std::size_t s = 0; s < p.stepStats.size(); ++s) {
                const RankStepStats &u = p.stepStats[s], &v = q.stepStats[s];
                // (A session keeps stage 0's warm-up forwards with its forwards: docs/SESSION_FORMAT.md.)
                QVERIFY(std::tuple(u.computeNs, u.waitNs, u.ppSendNs, u.ppRecvNs, u.dpSyncNs, u.otherNs, u.ppSends,
                                   u.ppRecvs, u.dpStartNs, u.dpEndNs, u.dpStartLagNs,
                                   u.forwardComputeNs + u.warmupComputeNs, u.backwardComputeNs,
                                   u.forwardSamples + u.warmupSamples, u.backwardSamples) ==
                        std::tuple(v.computeNs, v.waitNs, v.ppSendNs, v.ppRecvNs, v.dpSyncNs, v.otherNs, v.ppSends,
                                   v.ppRecvs, v.dpStartNs, v.dpEndNs, v.dpStartLagNs,
                                   v.forwardComputeNs + v.warmupComputeNs, v.backwardComputeNs,
                                   v.forwardSamples + v.warmupSamples, v.backwardSamples));
            }
        }
    }
}

void compareAnalysis(const Analysis& a, const Analysis& b) {
    // The whole report, every field the JSON carries...
    QCOMPARE(reportToJson(b.report).dump(1), reportToJson(a.report).dump(1));
    // ...and the fields the views use, one by one.
    QCOMPARE(b.report.jobs.size(), a.report.jobs.size());
    QVERIFY(b.report.capture.has_value());
    QCOMPARE(b.report.capture->records, a.report.capture->records);
    QCOMPARE(b.report.notes, a.report.notes);
    for (std::size_t j = 0; j < a.report.jobs.size(); ++j) {
        const JobInfo &x = a.report.jobs[j], &y = b.report.jobs[j];
        QCOMPARE(y.id, x.id);
        QCOMPARE(y.gpus, x.gpus);
        QCOMPARE(y.hosts, x.hosts);
        QCOMPARE(std::tie(y.tp, y.pp, y.dp), std::tie(x.tp, x.pp, x.dp));
        QCOMPARE(y.dpGroups, x.dpGroups);
        QCOMPARE(y.ppChains, x.ppChains);
        QCOMPARE(y.notes, x.notes);
        QCOMPARE(std::tie(y.startNs, y.endNs), std::tie(x.startNs, x.endNs));
        QCOMPARE(y.steps.size(), x.steps.size());
        for (std::size_t k = 0; k < x.steps.size(); ++k)
            QVERIFY(std::tie(y.steps[k].index, y.steps[k].startNs, y.steps[k].endNs, y.steps[k].slow) ==
                    std::tie(x.steps[k].index, x.steps[k].startNs, x.steps[k].endNs, x.steps[k].slow));
        QCOMPARE(y.findings.size(), x.findings.size());
        for (std::size_t k = 0; k < x.findings.size(); ++k) {
            const Finding &u = x.findings[k], &v = y.findings[k];
            QCOMPARE(v.kind, u.kind);
            QCOMPARE(std::tie(v.ip, v.srcIp, v.dstIp, v.switchName), std::tie(u.ip, u.srcIp, u.dstIp, u.switchName));
            QCOMPARE(std::tie(v.firstStep, v.lastStep), std::tie(u.firstStep, u.lastStep));
            QCOMPARE(v.score, u.score);
            QCOMPARE(v.message, u.message);
        }
    }
    QCOMPARE(b.recognition.notes, a.recognition.notes);
    QCOMPARE(b.recognition.jobs.size(), a.recognition.jobs.size());
    for (std::size_t j = 0; j < a.recognition.jobs.size(); ++j) {
        const RecognizedJob &x = a.recognition.jobs[j], &y = b.recognition.jobs[j];
        QVERIFY(y.nics == x.nics);
        QCOMPARE(y.hosts, x.hosts);
        QVERIFY(y.unknownNics == x.unknownNics);
        QCOMPARE(std::tie(y.startNs, y.endNs, y.clusters, y.bytes), std::tie(x.startNs, x.endNs, x.clusters, x.bytes));
        QVERIFY(y.records == x.records);
    }
    QCOMPARE(b.jobs.size(), a.jobs.size());
    for (std::size_t j = 0; j < a.jobs.size(); ++j) {
        const ParallelismResult &x = a.jobs[j].parallelism, &y = b.jobs[j].parallelism;
        QCOMPARE(std::tie(y.gpus, y.tp, y.pp, y.dp), std::tie(x.gpus, x.tp, x.pp, x.dp));
        QVERIFY(y.dpGroups == x.dpGroups);
        QVERIFY(y.ppChains == x.ppChains);
        QCOMPARE(y.notes, x.notes);
        QCOMPARE(y.pairs.size(), x.pairs.size());
        for (std::size_t p = 0; p < x.pairs.size(); ++p) {
            const PairInfo &u = x.pairs[p], &v = y.pairs[p];
            QVERIFY(std::tie(u.a, u.b, u.kind, u.bytesAB, u.bytesBA, u.recordsAB, u.recordsBA, u.asymmetry,
                             u.simultaneity, u.forwardVotes, u.forwardScore, u.distinctSizes) ==
                    std::tie(v.a, v.b, v.kind, v.bytesAB, v.bytesBA, v.recordsAB, v.recordsBA, v.asymmetry,
                             v.simultaneity, v.forwardVotes, v.forwardScore, v.distinctSizes));
        }
    }
    compareTimelines(a.jobs, b.jobs);
    for (std::size_t j = 0; j < a.jobs.size(); ++j) {
        QCOMPARE(b.jobs[j].division.has_value(), a.jobs[j].division.has_value());
        if (!a.jobs[j].division) continue;
        const StepDivision &x = *a.jobs[j].division, &y = *b.jobs[j].division;
        QCOMPARE(y.source, x.source);
        QCOMPARE(y.steps.size(), x.steps.size());
        for (std::size_t k = 0; k < x.steps.size(); ++k)
            QVERIFY(std::tie(y.steps[k].index, y.steps[k].startNs, y.steps[k].endNs, y.steps[k].slow) ==
                    std::tie(x.steps[k].index, x.steps[k].startNs, x.steps[k].endNs, x.steps[k].slow));
        QVERIFY(y.firstActivityNs == x.firstActivityNs);
        QVERIFY(y.syncStartNs == x.syncStartNs);
        QVERIFY(y.syncEndNs == x.syncEndNs);
        QVERIFY(y.changePoints == x.changePoints);
        QVERIFY(y.changeProbability == x.changeProbability); // exact: JSON keeps doubles round-trip
        QCOMPARE(std::tie(y.firstStepCut, y.lastStepCut, y.medianStepNs),
                 std::tie(x.firstStepCut, x.lastStepCut, x.medianStepNs));
        QVERIFY(y.clockOffsetNs == x.clockOffsetNs);
        QCOMPARE(y.notes, x.notes);
    }
}

// The labelled ```sql blocks of docs/SESSION_FORMAT.md: "-- example: NAME" on the first line.
std::map<std::string, std::string> documentedQueries() {
    std::string doc = readBytes(std::string(LLMPRISM_SOURCE_DIR) + "/docs/SESSION_FORMAT.md");
    std::map<std::string, std::string> out;
    std::regex block("```sql\n-- example: ([a-z-]+)\n([^`]*)```");
    for (auto it = std::sregex_iterator(doc.begin(), doc.end(), block); it != std::sregex_iterator(); ++it)
        out[(*it)[1].str()] = (*it)[2].str();
    return out;
}

using Run = prism::test::CliRun;
const auto cli = prism::test::runCli;

} // namespace

class TestStore : public QObject {
    Q_OBJECT
    SavedAnomalies m_saved;
    Fixture& m_anomalies = m_saved.anomalies;
    std::string& m_session = m_saved.session; // m_anomalies saved with sampleNotes

    std::string tmp(const std::string& name) const { return m_saved.tmp(name); }

private slots:
    void initTestCase() { m_saved.init(); }

    void aReopenedSessionEqualsTheOriginalAnalysisFieldByField() {
        Session s = openSession(m_session);
        QCOMPARE(m_anomalies.analysis.jobs.size(), m_anomalies.analysis.report.jobs.size());
        for (const JobAnalysis& j : m_anomalies.analysis.jobs) QVERIFY(j.division.has_value());
        compareAnalysis(m_anomalies.analysis, s.analysis);
        compareTopology(m_anomalies.capture.topology, s.capture.topology);
        compareFlows(m_anomalies.capture.flows, s.capture.flows);
        QCOMPARE(s.capture.source, m_anomalies.capture.source);
        QCOMPARE(s.capture.flowsPath, m_anomalies.capture.flowsPath);
        QCOMPARE(s.capture.topologyPath, m_anomalies.capture.topologyPath);
        QCOMPARE(s.capture.hasTopology, m_anomalies.capture.hasTopology);
        QCOMPARE(s.capture.diagnostics.skippedRows, m_anomalies.capture.diagnostics.skippedRows);
        QCOMPARE(s.capture.diagnostics.warningCount, m_anomalies.capture.diagnostics.warningCount);
        // The summary computed from the reopened capture matches the stored one.
        QCOMPARE(reportToJson(Report{"llmprism-report", 1, summarize(s.capture), {}, {}}).dump(),
                 reportToJson(Report{"llmprism-report", 1, s.analysis.report.capture, {}, {}}).dump());
        QCOMPARE(s.notes, sampleNotes(m_anomalies.analysis.report));
    }

    // The GUI's timelines are packed (read so, or analysed so): unpacked they are the stored ones, and a session
    // saved from packed timelines holds the same rows as one saved from unpacked.
    void packedTimelinesReadAndSaveAsTheUnpacked() {
        OpenOptions packed;
        packed.packSegments = true;
        Session s = openSession(m_session, packed);
        std::size_t segments = 0;
        for (JobAnalysis& j : s.analysis.jobs)
            for (RankTimeline& r : j.timeline.ranks) {
                QVERIFY(r.segments.empty());
                segments += r.packed.size();
                r.packed.unpack(r.segments);
                r.packed.clear();
            }
        QVERIFY(segments > 1000);
        compareAnalysis(m_anomalies.analysis, s.analysis);

        AnalysisOptions options;
        options.packSegments = true;
        const Analysis a = runAnalysis(m_anomalies.capture, options);
        QVERIFY(a.jobs.at(0).timeline.ranks.at(0).segments.empty());
        QVERIFY(!a.jobs.at(0).timeline.ranks.at(0).packed.empty());
        const std::string fromPacked = tmp("from-packed.prism"), fromPlain = tmp("from-plain.prism");
        saveSession(fromPacked, m_anomalies.capture, a, {});
        saveSession(fromPlain, m_anomalies.capture, m_anomalies.analysis, {});
        for (const char* q : {"SELECT job, segments, hex(stats) FROM timelines ORDER BY job",
                              "SELECT * FROM timeline_ranks ORDER BY 1, 2",
                              "SELECT job, chunk, column, segments, encoding, crc32c, hex(data) FROM timeline_chunks "
                              "ORDER BY job, chunk, column"}) {
            const auto x = query(fromPacked, q), y = query(fromPlain, q);
            QVERIFY(!x.empty());
            QVERIFY2(x == y, q);
        }
    }

    // `analyze S.prism` reads the report and what is beside it, not the flows: the same report and timelines,
    // the endpoints, no records. A session whose report lacks the capture summary still gets it made.
    void aSessionOpensWithoutItsFlows() {
        OpenOptions lean;
        lean.flows = false;
        const Session full = openSession(m_session), s = openSession(m_session, lean);
        QCOMPARE(s.capture.flows.size(), std::size_t(0));
        QVERIFY(full.capture.flows.size() > 1000);
        QCOMPARE(s.capture.flows.endpoints.size(), full.capture.flows.endpoints.size());
        QCOMPARE(reportToJson(s.analysis.report).dump(), reportToJson(full.analysis.report).dump());
        QCOMPARE(s.analysis.jobs.size(), full.analysis.jobs.size());
        for (std::size_t j = 0; j < s.analysis.jobs.size(); ++j) {
            QVERIFY(s.analysis.recognition.jobs[j].records.empty());
            QCOMPARE(s.analysis.recognition.jobs[j].nics, full.analysis.recognition.jobs[j].nics);
            QCOMPARE(s.analysis.jobs[j].timeline.segmentCount(), full.analysis.jobs[j].timeline.segmentCount());
        }
        QCOMPARE(s.notes, full.notes);

        Analysis bare = m_anomalies.analysis;
        bare.report.capture.reset();
        const std::string noSummary = tmp("no-summary.prism");
        saveSession(noSummary, m_anomalies.capture, bare, {});
        QVERIFY(query(noSummary, "SELECT json FROM report").at(0).at(0).find("\"capture\"") == std::string::npos);
        const Session again = openSession(noSummary, lean);
        QVERIFY(again.analysis.report.capture.has_value());
        QCOMPARE(reportToJson(again.analysis.report).dump(), reportToJson(m_anomalies.analysis.report).dump());
    }

    void theMetaTableRecordsTheSourceAndItsChecksum() {
        SessionMeta m = readSessionMeta(m_session);
        QCOMPARE(m.format, std::string("llmprism-session"));
        QCOMPARE(m.schemaVersion, kSessionSchemaVersion);
        QCOMPARE(m.toolVersion, std::string(LLMPRISM_VERSION));
        QVERIFY(std::regex_match(m.created, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
        QCOMPARE(m.source, m_anomalies.capture.source);
        QCOMPARE(m.records, std::uint64_t(m_anomalies.capture.flows.size()));
        FileChecksum flows = sha256File(m_anomalies.capture.flowsPath);
        QCOMPARE(m.flows.sha256, flows.sha256);
        QCOMPARE(m.flows.bytes, std::uint64_t(fs::file_size(m_anomalies.capture.flowsPath)));
        QCOMPARE(m.topology.sha256, sha256File(m_anomalies.capture.topologyPath).sha256);
        // The same through SQL, as a user would check it.
        auto rows = query(m_session, "SELECT value FROM meta WHERE key = 'flows_sha256'");
        QCOMPARE(rows.size(), std::size_t(1));
        QCOMPARE(rows[0][0], flows.sha256);
    }

    void sha256MatchesTheStandardVectorsAndSha256sum() {
        const std::pair<std::string, std::string> vectors[] = {
            {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
            {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
            {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"}};
        for (const auto& [text, digest] : vectors) {
            Sha256 h;
            h.update(text.data(), text.size());
            QCOMPARE(Sha256::hex(h.finish()), digest);
        }
        // Fed in uneven pieces or at once, every length around the block size; and a file as coreutils'
        // sha256sum reads it.
        std::mt19937 rng(5);
        std::string data(300'001, '\0');
        for (char& c : data) c = char(rng());
        for (std::size_t len : {55u, 56u, 63u, 64u, 65u, 127u, 128u, 1000u, 300'001u}) {
            Sha256 a, b;
            a.update(data.data(), len / 3);
            a.update(data.data() + len / 3, len - len / 3);
            b.update(data.data(), len);
            QCOMPARE(Sha256::hex(a.finish()), Sha256::hex(b.finish()));
        }
        const std::string path = tmp("sha.bin");
        {
            std::ofstream out(path, std::ios::binary);
            out.write(data.data(), std::streamsize(data.size()));
        }
        QProcess sum;
        sum.start("sha256sum", {QString::fromStdString(path)});
        if (!sum.waitForFinished(30000) || sum.exitCode() != 0) QSKIP("sha256sum (coreutils) did not run");
        const std::string expected = sum.readAllStandardOutput().left(64).toStdString();
        const FileChecksum file = sha256File(path);
        QCOMPARE(file.sha256, expected);
        QCOMPARE(file.bytes, std::uint64_t(data.size()));
        // One million 'a' (FIPS 180-2 test vector).
        Sha256 m;
        std::string a(1000, 'a');
        for (int i = 0; i < 1000; ++i) m.update(a.data(), a.size());
        QCOMPARE(Sha256::hex(m.finish()),
                 std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    }

    void blobChecksumsAreCrc32c() {
        QCOMPARE(store::crc32c("123456789"), 0xE3069283u); // the CRC-32C check value
        QCOMPARE(store::crc32c(""), 0u);
        std::string unaligned = "x123456789";
        QCOMPARE(store::crc32c(std::string_view(unaligned).substr(1)), 0xE3069283u);
    }

    void extremeValuesAndIpv6RoundTrip() {
        // A hand-built capture: no topology, IPv6 and IPv4, times and sizes at the limits of their types.
        Capture c;
        c.source = "hand-built";
        FlowRecord r;
        auto add = [&](std::int64_t s, std::int64_t e, const char* src, const char* dst, std::uint16_t sp,
                       std::uint16_t dp, std::uint8_t pr, std::uint64_t by, std::uint64_t pk) {
            c.flows.append({s, e, *IpAddr::parse(src), *IpAddr::parse(dst), sp, dp, pr, by, pk});
        };
        add(INT64_MIN, INT64_MAX, "::1", "fe80::1", 0, 65535, 255, UINT64_MAX, UINT64_MAX);
        add(-5, -7, "10.0.0.1", "::ffff:10.0.0.2", 65535, 0, 0, 0, 0);
        add(0, 0, "2001:db8::8:800:200c:417a", "10.0.0.1", 4791, 4791, 17, 1, 1);
        add(INT64_MAX, INT64_MIN, "10.0.0.1", "10.0.0.1", 1, 2, 6, 1ull << 63, 3);
        c.diagnostics.addWarning({"flows.csv", 3, 4, "a warning, kept in the session"});
        c.diagnostics.addError({"flows.csv", 9, 1, "a skipped row"});
        Analysis a;
        a.report.capture = summarize(c);
        SaveOptions so;
        so.recordsPerChunk = 3; // two chunks, the second short
        const std::string path = tmp("extreme.prism");
        saveSession(path, c, a, {}, so);
        Session s = openSession(path);
        compareFlows(c.flows, s.capture.flows);
        QVERIFY(!s.capture.hasTopology);
        QCOMPARE(s.capture.diagnostics.skippedRows, 1u);
        QCOMPARE(s.capture.diagnostics.warningCount, 1u);
        QCOMPARE(s.capture.diagnostics.warnings.at(0).toString(), c.diagnostics.warnings.at(0).toString());
        QCOMPARE(s.capture.diagnostics.errors.at(0).toString(), c.diagnostics.errors.at(0).toString());
        QCOMPARE(s.meta.flows.sha256, std::string()); // no source file: no checksum
        QCOMPARE(query(path, "SELECT count(DISTINCT chunk) FROM flow_chunks")[0][0], std::string("2"));
    }

    // A segment's step is not held in memory (JobTimeline::stepAt), but a session stores it, as docs/FORMATS.md
    // says: the step each segment starts in, plus one (0: none), read here as a user's script would.
    void theStoredStepOfASegmentIsTheStepItStartsIn() {
        const auto chunks = query(m_session, "SELECT job, first_rank, ranks, encoding, hex(data) FROM timeline_chunks "
                                             "WHERE column = 'step' ORDER BY job, chunk");
        QVERIFY(!chunks.empty());
        std::size_t checked = 0, inSteps = 0;
        for (const auto& row : chunks) {
            QCOMPARE(row[3], std::string("plus1-u16"));
            const JobTimeline& tl = m_anomalies.analysis.jobs.at(std::stoul(row[0])).timeline;
            const std::string& hex = row[4];
            std::size_t at = 0;
            auto nextValue = [&] {
                const unsigned v = unsigned(std::stoul(hex.substr(at, 2), nullptr, 16)) |
                                   unsigned(std::stoul(hex.substr(at + 2, 2), nullptr, 16)) << 8;
                at += 4;
                return int(v) - 1;
            };
            const std::size_t first = std::stoul(row[1]), ranks = std::stoul(row[2]);
            for (std::size_t r = first; r < first + ranks; ++r)
                for (const Segment& s : tl.ranks.at(r).segments) {
                    QVERIFY(at + 4 <= hex.size());
                    const int stored = nextValue();
                    if (stored != tl.stepAt(s.startNs))
                        QFAIL(qPrintable(QString("rank %1: segment at %2 stored in step %3, starts in step %4")
                                             .arg(r)
                                             .arg(s.startNs)
                                             .arg(stored)
                                             .arg(tl.stepAt(s.startNs))));
                    ++checked;
                    inSteps += stored >= 0;
                }
            QCOMPARE(at, hex.size());
        }
        QVERIFY(checked > 1000);
        QVERIFY(inSteps > checked / 2);
    }

    void timelinesWithValuesAtTheirLimitsRoundTrip() {
        // One hand-made job whose timeline has a step index beyond 16 bits (the column falls back to varints),
        // "none" everywhere it is allowed, extreme times and the "no time" marker in the step stats.
        Capture c;
        c.flows.append({0, 10, *IpAddr::parse("10.0.0.1"), *IpAddr::parse("10.0.0.2"), 1, 4791, 17, 1, 1});
        Analysis a;
        a.report.capture = summarize(c);
        JobInfo info;
        info.id = "job-0";
        info.gpus = {"10.0.0.1", "10.0.0.2"};
        a.report.jobs.push_back(info);
        RecognizedJob rj;
        rj.nics = {0, 1};
        rj.unknownNics = {1, 0};
        rj.records = {0};
        a.recognition.jobs.push_back(rj);
        a.jobs.emplace_back();
        JobTimeline t;
        t.startNs = INT64_MIN;
        t.endNs = INT64_MAX;
        // A segment's step is the step it starts in: the second segments start in step 70,000 (past 16 bits).
        for (int k = 0; k <= 70'000; ++k) {
            StepInfo step;
            step.index = k;
            step.startNs = k - 70'000;
            step.endNs = k - 69'999;
            t.steps.push_back(step);
        }
        for (EndpointId e : {0u, 1u}) {
            RankTimeline r;
            r.nic = e;
            r.ip = info.gpus[e];
            r.label = r.ip;
            r.segments.push_back({INT64_MIN, -1, SegmentKind::Wait, kNoMicroBatch, kNoIndex, UINT64_MAX});
            r.segments.push_back({0, INT64_MAX, SegmentKind::PpSend, 0xFFFE, 1 - e, 0});
            RankStepStats st;
            st.computeNs = INT64_MAX;
            st.ppSends = UINT32_MAX;
            r.stepStats.assign(t.steps.size(), RankStepStats{});
            r.stepStats.front() = st;
            t.ranks.push_back(r);
        }
        a.jobs.back().timeline = t;
        const std::string path = tmp("limits.prism");
        saveSession(path, c, a, {});
        QCOMPARE(query(path, "SELECT encoding FROM timeline_chunks WHERE column = 'step'")[0][0],
                 std::string("plus1-varint"));
        QCOMPARE(query(path, "SELECT encoding FROM timeline_chunks WHERE column = 'peer'")[0][0],
                 std::string("plus1-u16"));
        Session s = openSession(path);
        compareTimelines(a.jobs, s.analysis.jobs);
        QVERIFY(s.analysis.recognition.jobs.at(0).unknownNics == rj.unknownNics);
        QVERIFY(!s.analysis.jobs.at(0).division); // saved without step divisions, none come back
    }

    void moreThan65536EndpointsRoundTrip() {
        // Endpoint ids no longer fit 16 bits: the id columns switch to varints, and the table holds them in 4
        // bytes a row again (both halves). Durations of 2^32 ns and more, and ends before their starts, too.
        Capture c;
        const std::int64_t durations[] = {5, 0, -7, std::int64_t(1) << 32, 60'000'000'000, INT64_MAX};
        for (std::uint32_t i = 0; i < 70'000; ++i)
            c.flows.append({std::int64_t(i) * 10, std::int64_t(i) * 10 + durations[i % 6] % (INT64_MAX - 700'000),
                            IpAddr::v4(0x0A000000u + i), IpAddr::v4(0x0B000000u + i % 7), 1000, 4791, 17, 4096, 4});
        QVERIFY(c.flows.src.wide() && !c.flows.dst.wide() && c.flows.durationNs.wide());
        Analysis a;
        a.report.capture = summarize(c);
        const std::string path = tmp("wide.prism");
        saveSession(path, c, a, {});
        QCOMPARE(query(path, "SELECT DISTINCT encoding FROM flow_chunks WHERE column = 'src'")[0][0],
                 std::string("varint"));
        const FlowTable back = openSession(path).capture.flows;
        QVERIFY(back.startNs.compacted()); // 10 ns apart: 4 bytes a start, as a capture loaded from files
        compareFlows(c.flows, back);
        for (std::size_t i = 0; i < back.size(); ++i) {
            QCOMPARE(back.end(i), c.flows.end(i));
            QCOMPARE(back.endpoints.at(back.src[i]), IpAddr::v4(0x0A000000u + std::uint32_t(i)));
        }
        QCOMPARE(back.end(2), std::int64_t(20 - 7));
        QCOMPARE(back.end(3), std::int64_t(30) + (std::int64_t(1) << 32));
    }

    // A job's record list held packed (the GUI's, once the job is analysed) is the session's encoding of it, and
    // gives back every index in order: rising by one, by large steps, falling, at the ends of 32 bits.
    void aPackedRecordListIsTheSessionsEncodingOfIt() {
        std::mt19937 rng(3);
        RecognizedJob rj;
        for (std::uint32_t i = 0; i < 5000; ++i) rj.records.push_back(i * 2 + (rng() % 2));
        for (std::uint32_t v : {0xFFFFFFFFu, 0u, 0x80000000u, 7u, 7u, 1u << 20}) rj.records.push_back(v);
        for (int i = 0; i < 3000; ++i) rj.records.push_back(std::uint32_t(rng()));
        const std::vector<std::uint32_t> list(rj.records.begin(), rj.records.end());
        std::string session;
        store::encodeIndexList(list, session);
        rj.packRecords();
        QVERIFY(rj.records.empty());
        QCOMPARE(rj.listed(), list.size());
        QVERIFY(rj.packedRecords == session);
        std::vector<std::uint32_t> back;
        rj.forEachRecord([&](std::uint32_t r) { back.push_back(r); });
        QVERIFY(back == list);
        RecognizedJob none; // nothing listed: nothing packed
        none.packRecords();
        QCOMPARE(none.listed(), std::size_t(0));
        std::size_t calls = 0;
        none.forEachRecord([&](std::uint32_t) { ++calls; });
        QCOMPARE(calls, std::size_t(0));
    }

    void anEmptyCaptureRoundTrips() {
        Capture c;
        Analysis a = runAnalysis(c);
        const std::string path = tmp("empty.prism");
        saveSession(path, c, a, {});
        Session s = openSession(path);
        QCOMPARE(s.capture.flows.size(), std::size_t(0));
        QVERIFY(s.analysis.report.jobs.empty());
        QCOMPARE(reportToJson(s.analysis.report).dump(), reportToJson(a.report).dump());
    }

    void theCliReportOfASessionEqualsTheReportOfItsCapture() {
        const std::string dir = tmp("cli");
        Fixture f = makeFixture("two-jobs", dir + "/cap", 11);
        const QString cap = QString::fromStdString(dir + "/cap"), session = QString::fromStdString(dir + "/s.prism");
        Run imp = cli({"import", cap, "--out", session});
        QVERIFY2(imp.code == 0, qPrintable(imp.err));
        QVERIFY(imp.out.contains("wrote"));
        QVERIFY(isSessionFile(session.toStdString()));
        Run a1 = cli({"analyze", cap, "--quiet", "--json", QString::fromStdString(dir + "/r1.json")});
        Run a2 = cli({"analyze", session, "--json", QString::fromStdString(dir + "/r2.json")});
        QVERIFY2(a1.code == 0 && a2.code == 0, qPrintable(a1.err + a2.err));
        QVERIFY(a2.out.contains("Session"));
        auto r1 = nlohmann::json::parse(readBytes(dir + "/r1.json"));
        auto r2 = nlohmann::json::parse(readBytes(dir + "/r2.json"));
        QCOMPARE(r2.dump(1), r1.dump(1));
        QVERIFY(!r1["jobs"].empty());
        // A session imported from a session keeps everything.
        QVERIFY(addNote(session.toStdString(), sampleNotes(f.analysis.report)[1]) > 0);
        Run copy = cli({"import", session, "--out", QString::fromStdString(dir + "/copy.prism"), "--quiet"});
        QVERIFY2(copy.code == 0, qPrintable(copy.err));
        QCOMPARE(readNotes(dir + "/copy.prism").size(), std::size_t(1));
        QCOMPARE(readSessionMeta(dir + "/copy.prism").flows.sha256,
                 readSessionMeta(session.toStdString()).flows.sha256);
    }

    void theCliImportCommandHasHelpAndExitCodes() {
        Run help = cli({"import", "--help"});
        QCOMPARE(help.code, 0);
        QVERIFY(help.out.contains("Usage: llmprism-cli import CAPTURE... --out SESSION.prism"));
        QVERIFY(cli({"--help"}).out.contains("import"));
        Run noOut = cli({"import", QString::fromStdString(m_anomalies.dir)});
        QCOMPARE(noOut.code, 2);
        QVERIFY(noOut.err.contains("--out is required"));
        Run missing = cli({"import", QString::fromStdString(tmp("no-such-capture")), "--out",
                           QString::fromStdString(tmp("x.prism"))});
        QCOMPARE(missing.code, 1);
        QVERIFY(!fs::exists(tmp("x.prism")));
        // A damaged session given to analyze: the session's error, exit code 1.
        writeBytes(tmp("broken.prism"), "SQLite format 3");
        Run broken = cli({"analyze", QString::fromStdString(tmp("broken.prism"))});
        QCOMPARE(broken.code, 1);
        QVERIFY2(broken.err.contains("damaged") || broken.err.contains("not an LLMPrism session"),
                 qPrintable(broken.err));
    }

    void notesRoundTripAndCanBeEditedInPlace() {
        const std::string path = tmp("notes.prism");
        fs::copy_file(m_session, path, fs::copy_options::overwrite_existing);
        std::vector<Note> notes = readNotes(path);
        QCOMPARE(notes, sampleNotes(m_anomalies.analysis.report));
        const Report& report = m_anomalies.analysis.report;
        for (const Note& n : notes) QVERIFY2(checkNote(n, report).empty(), checkNote(n, report).c_str());

        Note extra = makeNote(NoteTarget::Step, report.jobs.back().id, "added later");
        extra.step = 0;
        const std::int64_t id = addNote(path, extra);
        QCOMPARE(id, notes.back().id + 1);
        notes = readNotes(path);
        QCOMPARE(notes.size(), std::size_t(5));
        QCOMPARE(notes.back().text, std::string("added later"));
        QVERIFY(notes.back().createdMs > 0);

        Note edited = notes.front();
        edited.text = "edited";
        QVERIFY(updateNote(path, edited));
        QCOMPARE(readNotes(path).front().text, std::string("edited"));
        QVERIFY(readNotes(path).front().modifiedMs >= edited.modifiedMs);
        QVERIFY(removeNote(path, edited.id));
        QVERIFY(!removeNote(path, edited.id));
        QVERIFY(!updateNote(path, edited));
        QCOMPARE(readNotes(path).size(), std::size_t(4));
        // Editing notes leaves the analysis alone and the file a valid session.
        Session s = openSession(path);
        QCOMPARE(s.notes.size(), std::size_t(4));
        QCOMPARE(reportToJson(s.analysis.report).dump(), reportToJson(report).dump());
        QCOMPARE(query(path, "PRAGMA integrity_check")[0][0], std::string("ok"));
    }

    void notesPointAtExistingPlacesAndKnowWhereToJump() {
        const Report& report = m_anomalies.analysis.report;
        const JobInfo& job = report.jobs.front();
        Note step = makeNote(NoteTarget::Step, job.id, "x");
        step.step = 1;
        QVERIFY(checkNote(step, report).empty());
        NotePlace place = notePlace(step, report);
        QCOMPARE(place.job, 0);
        QCOMPARE(place.startNs, job.steps.at(1).startNs);
        QCOMPARE(place.endNs, job.steps.at(1).endNs);
        step.step = int(job.steps.size());
        QVERIFY(checkNote(step, report).find("does not exist") != std::string::npos);

        Note rank = makeNote(NoteTarget::Rank, job.id, "x");
        rank.ip = "10.255.255.255";
        QVERIFY(checkNote(rank, report).find("no rank") != std::string::npos);
        rank.ip = job.gpus.at(1);
        QVERIFY(checkNote(rank, report).empty());
        QCOMPARE(notePlace(rank, report).ip, job.gpus.at(1));
        QCOMPARE(notePlace(rank, report).startNs, job.startNs);

        Note finding = makeNote(NoteTarget::Finding, job.id, "x");
        finding.finding = 0;
        QVERIFY(checkNote(finding, report).empty());
        const Finding& f = job.findings.at(0);
        QCOMPARE(notePlace(finding, report).startNs, job.steps.at(std::size_t(f.firstStep)).startNs);
        finding.finding = 99;
        QVERIFY(!checkNote(finding, report).empty());

        Note range = makeNote(NoteTarget::Range, job.id, "x");
        range.startNs = 10;
        range.endNs = 10;
        QVERIFY(checkNote(range, report).find("empty") != std::string::npos);
        range.endNs = 20;
        QVERIFY(checkNote(range, report).empty());
        QCOMPARE(notePlace(range, report).endNs, std::int64_t(20));
        range.text = "  \n";
        QVERIFY(checkNote(range, report).find("no text") != std::string::npos);
        range.text = "x";
        range.jobId = "job-99";
        QVERIFY(checkNote(range, report).find("no job") != std::string::npos);
        QCOMPARE(notePlace(range, report).job, -1);
    }

    void aNoteListGivesUniqueIdsAndKeepsJobNotesInTimeOrder() {
        NoteList list;
        Note a = makeNote(NoteTarget::Range, "job-0", "late");
        a.startNs = 500;
        a.endNs = 600;
        Note b = makeNote(NoteTarget::Range, "job-0", "early");
        b.startNs = 100;
        b.endNs = 200;
        Note c = makeNote(NoteTarget::Range, "job-1", "other job");
        const std::int64_t ia = list.add(a), ib = list.add(b), ic = list.add(c);
        QVERIFY(ia != ib && ib != ic && ia != ic);
        QVERIFY(list.find(ia)->createdMs > 0);
        auto job0 = list.ofJob("job-0");
        QCOMPARE(job0.size(), std::size_t(2));
        QCOMPARE(job0[0].text, std::string("early"));
        QVERIFY(list.remove(ib));
        QVERIFY(!list.remove(ib));
        QCOMPARE(list.ofJob("job-0").size(), std::size_t(1));
        Note edit = *list.find(ic);
        edit.text = "changed";
        QVERIFY(list.update(edit));
        QCOMPARE(list.find(ic)->text, std::string("changed"));
        // A list rebuilt from a session continues after the highest id; duplicates get fresh ids.
        std::vector<Note> loaded = list.all();
        loaded.push_back(loaded.front());
        NoteList again(loaded);
        QCOMPARE(again.size(), std::size_t(3));
        std::set<std::int64_t> ids;
        for (const Note& n : again.all()) ids.insert(n.id);
        QCOMPARE(ids.size(), std::size_t(3));
        QVERIFY(again.add(c) > *ids.rbegin());
    }

    void theDocumentedExampleQueriesRunOnTheAnomaliesPreset() {
        auto queries = documentedQueries();
        QCOMPARE(queries.size(), std::size_t(3));
        const Analysis& a = m_anomalies.analysis;

        // Slowest steps: ten rows, slowest first, the first is the longest step of the report.
        auto steps = query(m_session, queries.at("slowest-steps"));
        std::int64_t longest = 0;
        std::size_t total = 0;
        for (const JobInfo& j : a.report.jobs)
            for (const StepInfo& s : j.steps) longest = std::max(longest, s.durationNs()), ++total;
        QVERIFY(total > 0);
        QCOMPARE(steps.size(), std::min<std::size_t>(10, total));
        QCOMPARE(std::llround(std::stod(steps[0][2]) * 1e6), longest);
        for (std::size_t i = 1; i < steps.size(); ++i) QVERIFY(std::stod(steps[i - 1][2]) >= std::stod(steps[i][2]));

        // Stragglers per host: the slow_rank findings, counted by the host of their NIC.
        auto hosts = query(m_session, queries.at("stragglers-per-host"));
        std::map<std::string, int> expected;
        const Topology& topo = m_anomalies.capture.topology;
        for (const JobInfo& j : a.report.jobs)
            for (const Finding& f : j.findings)
                if (f.kind == "slow_rank") {
                    const Nic& nic = topo.nics[std::size_t(*topo.nicByIp(*IpAddr::parse(f.ip)))];
                    ++expected[topo.hosts[std::size_t(nic.host)].name];
                }
        QVERIFY(!expected.empty());
        QCOMPARE(hosts.size(), expected.size());
        for (const auto& row : hosts) QCOMPARE(std::stoi(row[1]), expected.at(row[0]));

        // Bytes per DP group: the DP pairs' bytes, summed per group.
        auto groups = query(m_session, queries.at("bytes-per-dp-group"));
        std::map<std::pair<std::string, int>, std::uint64_t> bytes;
        for (std::size_t j = 0; j < a.jobs.size(); ++j)
            for (const PairInfo& p : a.jobs[j].parallelism.pairs) {
                if (p.kind != PairKind::DP) continue;
                for (std::size_t g = 0; g < a.jobs[j].parallelism.dpGroups.size(); ++g) {
                    const auto& members = a.jobs[j].parallelism.dpGroups[g];
                    if (std::find(members.begin(), members.end(), p.a) != members.end())
                        bytes[{a.report.jobs[j].id, int(g)}] += p.bytesAB + p.bytesBA;
                }
            }
        QVERIFY(!bytes.empty());
        QCOMPARE(groups.size(), bytes.size());
        for (const auto& row : groups) QCOMPARE(std::stoull(row[3]), bytes.at({row[0], std::stoi(row[1])}));
        for (std::size_t i = 1; i < groups.size(); ++i)
            QVERIFY(std::stoull(groups[i - 1][3]) >= std::stoull(groups[i][3]));

        // The same text through the sqlite3 shell, when it is installed.
        const QString shell = QStandardPaths::findExecutable("sqlite3");
        if (shell.isEmpty()) return;
        for (const auto& [name, sql] : queries) {
            QProcess p;
            p.start(shell, {"-readonly", QString::fromStdString(m_session), QString::fromStdString(sql)});
            QVERIFY(p.waitForFinished(60000));
            QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
            QVERIFY2(!p.readAllStandardOutput().trimmed().isEmpty(), name.c_str());
        }
    }

    void theSqlSummariesAgreeWithTheFlows() {
        const FlowTable& f = m_anomalies.capture.flows;
        std::uint64_t roceBytes = 0, records = 0;
        for (std::size_t i = 0; i < f.size(); ++i)
            if (f.isRoce(i)) roceBytes += f.bytes[i];
        auto rows = query(m_session, "SELECT sum(records), sum(CASE WHEN roce THEN bytes ELSE 0 END) FROM flow_pairs");
        records = std::stoull(rows[0][0]);
        QCOMPARE(records, std::uint64_t(f.size()));
        QCOMPARE(std::stoull(rows[0][1]), roceBytes);
        auto nic = query(m_session, "SELECT sum(sent_bytes), sum(received_bytes) FROM nic_traffic");
        QCOMPARE(nic[0][0], nic[0][1]);
        std::uint64_t steps = 0, findings = 0;
        for (const JobInfo& j : m_anomalies.analysis.report.jobs) {
            steps += j.steps.size();
            findings += j.findings.size();
        }
        QCOMPARE(std::stoull(query(m_session, "SELECT count(*) FROM steps")[0][0]), steps);
        QCOMPARE(std::stoull(query(m_session, "SELECT count(*) FROM findings")[0][0]), findings);
        QCOMPARE(std::stoull(query(m_session, "SELECT count(*) FROM jobs")[0][0]),
                 std::uint64_t(m_anomalies.analysis.report.jobs.size()));
        // The topology as topology.json has it: a row per NIC, with its host and leaf.
        const Topology& t = m_anomalies.capture.topology;
        auto topo = query(m_session, "SELECT ip, host, switch FROM topology");
        QCOMPARE(topo.size(), t.nics.size());
        for (const auto& row : topo) {
            const auto ip = IpAddr::parse(row[0]);
            QVERIFY(ip);
            const std::optional<int> k = t.nicByIp(*ip);
            QVERIFY2(k, row[0].c_str());
            const Nic* nic = &t.nics[std::size_t(*k)];
            QCOMPARE(row[2], nic->switchName);
            QCOMPARE(row[1], t.hosts[std::size_t(nic->host)].name);
        }
    }
};

QTEST_GUILESS_MAIN(TestStore)
#include "tst_store.moc"
