#pragma once
// A user's note attached to a place in the analysis: a step, a rank, a finding or a time range of one job.
// Notes live in the session file (.prism) next to the analysis they talk about; see core/store/notes.h.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace prism {

enum class NoteTarget : std::uint8_t {
    Step,    // one step of a job (Note::step)
    Rank,    // one rank of a job, by its NIC address (Note::ip)
    Finding, // one finding of a job (Note::finding, its position in JobInfo::findings)
    Range,   // a time range of a job (Note::startNs .. Note::endNs), optionally of one rank (Note::ip)
};

// "step", "rank", "finding", "range": the words the session file stores.
inline const char* noteTargetName(NoteTarget target) {
    switch (target) {
    case NoteTarget::Step: return "step";
    case NoteTarget::Rank: return "rank";
    case NoteTarget::Finding: return "finding";
    case NoteTarget::Range: return "range";
    }
    return "range";
}

inline std::optional<NoteTarget> parseNoteTarget(std::string_view name) {
    for (NoteTarget t : {NoteTarget::Step, NoteTarget::Rank, NoteTarget::Finding, NoteTarget::Range})
        if (name == noteTargetName(t)) return t;
    return std::nullopt;
}

struct Note {
    std::int64_t id = 0; // unique in its session, assigned when added (0: not added yet)
    NoteTarget target = NoteTarget::Range;
    std::string jobId;   // JobInfo::id, e.g. "job-0"
    int step = -1;       // Step: index into JobInfo::steps (its position, not StepInfo::index)
    std::string ip;      // Rank: the rank's NIC address; Range: optional rank the range belongs to
    int finding = -1;    // Finding: index into JobInfo::findings
    std::int64_t startNs = 0; // Range: the range; other targets: where the place was when the note was made
    std::int64_t endNs = 0;
    std::string text;
    std::string author;          // optional
    std::int64_t createdMs = 0;  // Unix time in milliseconds; set when added if 0
    std::int64_t modifiedMs = 0; // Unix time in milliseconds of the last edit

    friend bool operator==(const Note&, const Note&) = default;
};

} // namespace prism
