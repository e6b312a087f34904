#include "store/notes.h"

#include "model/diagnostics.h"
#include "store/session_db.h"

#include <algorithm>
#include <chrono>

namespace prism {
namespace {

const JobInfo* findJob(const Report& report, const std::string& id, int* index = nullptr) {
    for (std::size_t j = 0; j < report.jobs.size(); ++j)
        if (report.jobs[j].id == id) {
            if (index) *index = int(j);
            return &report.jobs[j];
        }
    return nullptr;
}

bool hasRank(const JobInfo& job, const std::string& ip) {
    return std::find(job.gpus.begin(), job.gpus.end(), ip) != job.gpus.end();
}

// Time span of steps [first, last] of a job (clamped to the steps it has).
std::pair<std::int64_t, std::int64_t> stepSpan(const JobInfo& job, int first, int last) {
    if (job.steps.empty()) return {job.startNs, job.endNs};
    auto clamp = [&](int k) { return std::size_t(std::clamp(k, 0, int(job.steps.size()) - 1)); };
    return {job.steps[clamp(first)].startNs, job.steps[clamp(std::max(first, last))].endNs};
}

} // namespace

std::int64_t nowUnixMs() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string checkNote(const Note& note, const Report& report) {
    if (note.text.find_first_not_of(" \t\r\n") == std::string::npos) return "the note has no text";
    const JobInfo* job = findJob(report, note.jobId);
    if (!job) return "there is no job \"" + note.jobId + "\"";
    switch (note.target) {
    case NoteTarget::Step:
        if (note.step < 0 || std::size_t(note.step) >= job->steps.size())
            return note.jobId + " has " + std::to_string(job->steps.size()) + " steps, step " +
                   std::to_string(note.step) + " does not exist";
        break;
    case NoteTarget::Rank:
        if (!hasRank(*job, note.ip)) return note.jobId + " has no rank \"" + note.ip + "\"";
        break;
    case NoteTarget::Finding:
        if (note.finding < 0 || std::size_t(note.finding) >= job->findings.size())
            return note.jobId + " has " + std::to_string(job->findings.size()) + " findings, finding " +
                   std::to_string(note.finding) + " does not exist";
        break;
    case NoteTarget::Range:
        if (note.endNs <= note.startNs) return "the time range is empty (end is not after start)";
        if (!note.ip.empty() && !hasRank(*job, note.ip)) return note.jobId + " has no rank \"" + note.ip + "\"";
        break;
    }
    return {};
}

NotePlace notePlace(const Note& note, const Report& report) {
    NotePlace place;
    place.startNs = note.startNs;
    place.endNs = note.endNs;
    const JobInfo* job = findJob(report, note.jobId, &place.job);
    if (!job) return place;
    switch (note.target) {
    case NoteTarget::Step:
        if (note.step >= 0 && std::size_t(note.step) < job->steps.size()) {
            place.startNs = job->steps[std::size_t(note.step)].startNs;
            place.endNs = job->steps[std::size_t(note.step)].endNs;
        }
        break;
    case NoteTarget::Rank:
        place.ip = note.ip;
        place.startNs = job->startNs;
        place.endNs = job->endNs;
        break;
    case NoteTarget::Finding:
        if (note.finding >= 0 && std::size_t(note.finding) < job->findings.size()) {
            const Finding& f = job->findings[std::size_t(note.finding)];
            std::tie(place.startNs, place.endNs) = stepSpan(*job, f.firstStep, f.lastStep);
            place.ip = !f.ip.empty() ? f.ip : f.srcIp;
        }
        break;
    case NoteTarget::Range:
        place.ip = note.ip;
        break;
    }
    return place;
}

NoteList::NoteList(std::vector<Note> notes) : m_notes(std::move(notes)) {
    std::sort(m_notes.begin(), m_notes.end(), [](const Note& a, const Note& b) { return a.id < b.id; });
    for (Note& n : m_notes) {
        if (n.id <= 0 || n.id < m_nextId) n.id = m_nextId; // unset or duplicate ids get fresh ones
        m_nextId = n.id + 1;
    }
}

std::int64_t NoteList::add(Note note) {
    note.id = m_nextId++;
    if (!note.createdMs) note.createdMs = nowUnixMs();
    if (!note.modifiedMs) note.modifiedMs = note.createdMs;
    m_notes.push_back(std::move(note));
    return m_notes.back().id;
}

bool NoteList::update(const Note& note) {
    for (Note& n : m_notes)
        if (n.id == note.id) {
            n = note;
            n.modifiedMs = nowUnixMs();
            return true;
        }
    return false;
}

bool NoteList::remove(std::int64_t id) {
    auto it = std::find_if(m_notes.begin(), m_notes.end(), [&](const Note& n) { return n.id == id; });
    if (it == m_notes.end()) return false;
    m_notes.erase(it);
    return true;
}

const Note* NoteList::find(std::int64_t id) const {
    for (const Note& n : m_notes)
        if (n.id == id) return &n;
    return nullptr;
}

std::vector<Note> NoteList::ofJob(const std::string& jobId) const {
    std::vector<Note> out;
    for (const Note& n : m_notes)
        if (n.jobId == jobId) out.push_back(n);
    std::stable_sort(out.begin(), out.end(), [](const Note& a, const Note& b) { return a.startNs < b.startNs; });
    return out;
}

// ------------------------------------------------------------------------------------------ in the file

namespace {

// Runs `body` in one write transaction on the session at `path`; SQLite's rollback journal makes the
// edit all-or-nothing.
template <typename F> auto editSession(const std::string& path, F body) {
    std::unique_ptr<store::Database> db;
    try {
        db = store::openSessionDatabase(path, true);
        db->exec("PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL; BEGIN IMMEDIATE");
    } catch (...) {
        store::rethrowReadError(path);
    }
    try {
        auto result = body(*db);
        db->exec("COMMIT");
        return result;
    } catch (const store::SqliteError& e) {
        try {
            db->exec("ROLLBACK");
        } catch (const store::SqliteError&) {
        }
        if (e.damaged())
            throw InputError({path, 0, 0, std::string("the session file is damaged (") + e.what() + ")"});
        throw std::runtime_error(path + ": cannot save the note (" + e.what() + "); the session is unchanged");
    }
}

} // namespace

std::vector<Note> readNotes(const std::string& path) {
    try {
        auto db = store::openSessionDatabase(path, false);
        return store::selectNotes(*db, path);
    } catch (...) {
        store::rethrowReadError(path);
    }
}

std::int64_t addNote(const std::string& path, Note note) {
    return editSession(path, [&](store::Database& db) {
        note.id = db.scalar("SELECT coalesce(max(note), 0) + 1 FROM notes");
        if (!note.createdMs) note.createdMs = nowUnixMs();
        if (!note.modifiedMs) note.modifiedMs = note.createdMs;
        store::insertNotes(db, {note});
        return note.id;
    });
}

bool updateNote(const std::string& path, const Note& note) {
    return editSession(path, [&](store::Database& db) {
        store::Statement s(db, "DELETE FROM notes WHERE note = ?");
        s.bind(1, note.id);
        s.run();
        if (db.changes() == 0) return false;
        Note n = note;
        n.modifiedMs = nowUnixMs();
        store::insertNotes(db, {n});
        return true;
    });
}

bool removeNote(const std::string& path, std::int64_t id) {
    return editSession(path, [&](store::Database& db) {
        store::Statement s(db, "DELETE FROM notes WHERE note = ?");
        s.bind(1, id);
        s.run();
        return db.changes() > 0;
    });
}

void writeNotes(const std::string& path, const std::vector<Note>& notes) {
    editSession(path, [&](store::Database& db) {
        db.exec("DELETE FROM notes");
        store::insertNotes(db, notes);
        return true;
    });
}

} // namespace prism
