#pragma once
// Helpers the session store's tests share (tst_store.cpp, tst_store_safety.cpp): SQL on a file as a user's
// script runs it, a simulated capture loaded and analysed as a user would (its truth's anomalies standing in
// for the findings diagnosis does not report), and notes of every kind.
#include "test_util.h"
#include "analysis/pipeline.h"
#include "io/capture.h"
#include "sim/simulator.h"
#include "store/notes.h"
#include "store/session.h"

#include <QTemporaryDir>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace prism::test {

// Runs SQL on a file with the plain SQLite C API (what a user's script would do); returns rows as text.
inline std::vector<std::vector<std::string>> query(const std::string& path, const std::string& sql,
                                                   bool write = false) {
    sqlite3* db = nullptr;
    std::vector<std::vector<std::string>> rows;
    if (sqlite3_open_v2(path.c_str(), &db, write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY,
                        nullptr) != SQLITE_OK)
        throw std::runtime_error("cannot open " + path);
    sqlite3_stmt* st = nullptr;
    const char* tail = sql.c_str();
    while (*tail) {
        if (sqlite3_prepare_v2(db, tail, -1, &st, &tail) != SQLITE_OK) {
            std::string err = sqlite3_errmsg(db);
            sqlite3_close(db);
            throw std::runtime_error(err + " in: " + sql);
        }
        if (!st) break; // trailing whitespace or comments
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            std::vector<std::string> row;
            for (int c = 0; c < sqlite3_column_count(st); ++c) {
                auto t = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
                row.push_back(t ? t : "NULL");
            }
            rows.push_back(std::move(row));
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
            std::string err = sqlite3_errmsg(db);
            sqlite3_close(db);
            throw std::runtime_error(err);
        }
    }
    sqlite3_close(db);
    return rows;
}

struct Fixture {
    std::string dir;    // the capture folder
    Capture capture;
    Analysis analysis;
    Report truth;
};

// Simulates `preset` into `dir` and loads and analyses it as a user would.
inline Fixture makeFixture(const std::string& preset, const std::string& dir, std::uint64_t seed = 3) {
    Fixture f;
    f.dir = dir;
    auto sim = sim::simulate(*sim::makePreset(preset, seed));
    sim::writeCapture(sim, dir);
    f.truth = sim.truth;
    f.capture = loadCapture(dir);
    f.analysis = runAnalysis(f.capture);
    return f;
}

inline Note makeNote(NoteTarget target, const std::string& job, const std::string& text) {
    Note n;
    n.target = target;
    n.jobId = job;
    n.text = text;
    return n;
}

// The notes of every kind a user can attach, on the first job of `report`.
inline std::vector<Note> sampleNotes(const Report& report) {
    const JobInfo& job = report.jobs.front();
    std::vector<Note> notes;
    Note step = makeNote(NoteTarget::Step, job.id, "step 2 is where the slowdown starts");
    step.step = 2;
    step.startNs = job.steps.size() > 2 ? job.steps[2].startNs : 0;
    step.endNs = job.steps.size() > 2 ? job.steps[2].endNs : 0;
    notes.push_back(step);
    Note rank = makeNote(NoteTarget::Rank, job.id, "this GPU was replaced on Tuesday — ünïcödé, \"quotes\", 'x'");
    rank.ip = job.gpus.back();
    rank.author = "ops";
    notes.push_back(rank);
    Note range = makeNote(NoteTarget::Range, job.id, "checkpoint write\nsecond line");
    range.startNs = job.startNs + 1000;
    range.endNs = job.startNs + 5'000'000;
    range.ip = job.gpus.front();
    notes.push_back(range);
    Note finding = makeNote(NoteTarget::Finding, job.id, "known issue, ticket 4711");
    finding.finding = 0;
    notes.push_back(finding);
    std::int64_t id = 10;
    for (Note& n : notes) {
        n.id = id;
        id += 7;
        n.createdMs = 1'790'000'000'000 + id;
        n.modifiedMs = n.createdMs + 5;
    }
    return notes;
}

// The example queries need findings; until diagnosis reports them, the truth's anomalies stand in (the
// store saves whatever analysis it is given).
inline void findingsFromTruth(Fixture& fixture) {
    for (JobInfo& job : fixture.analysis.report.jobs) {
        if (!job.findings.empty()) continue;
        for (const JobInfo& t : fixture.truth.jobs)
            if (!t.gpus.empty() && std::find(job.gpus.begin(), job.gpus.end(), t.gpus.front()) != job.gpus.end())
                for (Finding f : t.anomalies) {
                    f.score = 3.5;
                    f.message = "from truth.json";
                    f.group.clear();
                    f.factor = 0;
                    job.findings.push_back(f);
                }
    }
}

// What both store suites start from: the `anomalies` preset analysed in a temporary folder and saved as a
// session with sampleNotes (the same bytes in both).
struct SavedAnomalies {
    QTemporaryDir dir;
    Fixture anomalies;
    std::string session;

    std::string tmp(const std::string& name) const { return dir.filePath(QString::fromStdString(name)).toStdString(); }
    void init() {
        QVERIFY(dir.isValid());
        anomalies = makeFixture("anomalies", tmp("anomalies"));
        QVERIFY(!anomalies.analysis.report.jobs.empty());
        findingsFromTruth(anomalies);
        session = tmp("anomalies.prism");
        saveSession(session, anomalies.capture, anomalies.analysis, sampleNotes(anomalies.analysis.report));
    }
};

} // namespace prism::test
