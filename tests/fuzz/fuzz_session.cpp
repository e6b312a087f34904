// libFuzzer harness for opening a session file (.prism, docs/SESSION_FORMAT.md): any bytes open as a session
// whose tables hold together, or give an InputError naming the file, never a crash, a hang or a sanitizer
// report. The input is the whole SQLite file; seeds are small sessions (scripts/fuzz.sh makes them with
// `llmprism-cli import`), so mutations reach the stored rows and the flow, index and timeline blobs.
// Built by tests/fuzz/CMakeLists.txt (-DLLMPRISM_FUZZ=ON); run by scripts/fuzz.sh.
#include "fuzz_util.h"
#include "store/session.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = fuzz::tempPath("session.prism");
    fuzz::writeFile(path, data, size);
    try {
        (void)prism::isSessionFile(path);
        (void)prism::readSessionMeta(path);
        prism::OpenOptions o;
        o.threads = 1;
        const prism::Session s = prism::openSession(path, o);
        fuzz::checkTable(s.capture.flows);
        if (s.analysis.report.jobs.size() != s.analysis.jobs.size()) __builtin_trap();
        // What the views index with must lie inside what it indexes.
        for (const prism::JobAnalysis& job : s.analysis.jobs) {
            const prism::JobTimeline& tl = job.timeline;
            for (const prism::RankTimeline& rank : tl.ranks) {
                if (!rank.stepStats.empty() && rank.stepStats.size() != tl.steps.size()) __builtin_trap();
                for (const prism::Segment& seg : rank.segments) {
                    if (seg.peer != prism::kNoIndex && seg.peer >= tl.ranks.size()) __builtin_trap();
                    if (seg.endNs < seg.startNs) __builtin_trap();
                }
            }
        }
        // The GUI's open (segments packed as read) and the CLI's report-only open (no flows) of a file that opens
        // whole: they open too, and the packed segments are the segments.
        prism::OpenOptions lean = o;
        lean.flows = false;
        lean.packSegments = true;
        prism::Session p;
        try {
            p = prism::openSession(path, lean);
        } catch (const prism::InputError&) {
            __builtin_trap(); // what opens whole opens without its flows too
        }
        if (p.analysis.jobs.size() != s.analysis.jobs.size()) __builtin_trap();
        std::vector<prism::Segment> unpacked;
        for (std::size_t j = 0; j < s.analysis.jobs.size(); ++j) {
            const auto &a = s.analysis.jobs[j].timeline.ranks, &b = p.analysis.jobs[j].timeline.ranks;
            if (a.size() != b.size()) __builtin_trap();
            for (std::size_t r = 0; r < a.size(); ++r) {
                b[r].packed.unpack(unpacked);
                const auto& all = unpacked;
                if (all.size() != a[r].segments.size()) __builtin_trap();
                for (std::size_t i = 0; i < all.size(); ++i) {
                    const prism::Segment &x = all[i], &y = a[r].segments[i];
                    if (x.startNs != y.startNs || x.endNs != y.endNs || x.kind != y.kind || x.peer != y.peer ||
                        x.microBatch != y.microBatch || x.bytes != y.bytes)
                        __builtin_trap();
                }
            }
        }
    } catch (const prism::InputError& e) {
        fuzz::checkRefusal(e);
    }
    return 0;
}
