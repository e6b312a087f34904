#pragma once
// Notes: in memory (a list the GUI edits, saved with saveSession) and in a session file (each edit is one
// SQLite transaction, so the file is never half-updated and the flows need not be rewritten).
#include "model/note.h"
#include "model/report.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace prism {

// Empty when `note` points at something that exists in `report`; else what is wrong ("job-3 has 12
// steps, step 40 does not exist"). Every target needs its job; Step a step, Rank an ip of the job,
// Finding a finding, Range endNs > startNs (and, when ip is set, an ip of the job); text must not be empty.
std::string checkNote(const Note& note, const Report& report);

// Where a note points, so a view can jump there.
struct NotePlace {
    int job = -1;             // index into Report::jobs (-1: the job is gone)
    std::int64_t startNs = 0; // time range to show: the step, the finding's steps, the rank's job span, the range
    std::int64_t endNs = 0;
    std::string ip;           // rank to bring into view (Rank, Range with a rank, Finding of a rank)
};
NotePlace notePlace(const Note& note, const Report& report);

// In-memory list with ids unique in the list.
class NoteList {
public:
    NoteList() = default;
    explicit NoteList(std::vector<Note> notes);

    // Assigns the next id and, when 0, createdMs/modifiedMs (now); returns the id.
    std::int64_t add(Note note);
    // Replaces the note with the same id (modifiedMs = now); false when there is none.
    bool update(const Note& note);
    bool remove(std::int64_t id);
    const Note* find(std::int64_t id) const;
    // Notes of one job in (startNs, id) order.
    std::vector<Note> ofJob(const std::string& jobId) const;
    const std::vector<Note>& all() const { return m_notes; } // id order
    std::size_t size() const { return m_notes.size(); }
    bool empty() const { return m_notes.empty(); }

private:
    std::vector<Note> m_notes; // id order
    std::int64_t m_nextId = 1;
};

// The same operations on a session file, in place. Throw InputError like openSession for a file that is
// not a session (or is newer/damaged) and std::runtime_error when the file cannot be written.
std::vector<Note> readNotes(const std::string& sessionPath);
std::int64_t addNote(const std::string& sessionPath, Note note); // returns the id given
bool updateNote(const std::string& sessionPath, const Note& note);
bool removeNote(const std::string& sessionPath, std::int64_t id);
// Replaces every note of the session with `notes` (ids kept) in one transaction: what Save does when only the
// notes of an opened session changed, so the flows need not be rewritten.
void writeNotes(const std::string& sessionPath, const std::vector<Note>& notes);

std::int64_t nowUnixMs();

} // namespace prism
