// What a view of a capture larger than memory waits for when it moves to another window of a job ("Later
// steps", "Earlier steps"): analyzeJobWindow on a FileStore, with the store's index of the files by time and
// without it (every window a whole pass over the files, as before the index). A small timed CLI:
//
//   bench_window CAPTURE [--memory BUDGET] [--windows N] [--cold] [--threads T]
//
// runs the staged analysis within BUDGET (default 4G), then loads N windows (default 4) of the job with the most
// records, spread over its steps, once with the index and once without; prints per window the records read and
// the wall time. --cold drops the flow files from the page cache before each window (posix_fadvise DONTNEED), as
// for a capture larger than memory, whose passes come from the disk. Results: docs/BENCHMARKS.md "Staged
// analysis". --threads 1 parses each pass on one core (the default: every core).
#include "analysis/staged.h"
#include "io/file_store.h"
#include "model/units.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

using namespace prism;

namespace {
double seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}
} // namespace

int main(int argc, char** argv) {
    std::string capture, memory = "4G";
    int windows = 4;
    bool cold = false;
    LoadOptions options;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--memory") && i + 1 < argc) memory = argv[++i];
        else if (!std::strcmp(argv[i], "--windows") && i + 1 < argc) windows = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--cold")) cold = true;
        else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) options.threads = unsigned(std::atoi(argv[++i]));
        else capture = argv[i];
    }
    if (capture.empty() || windows < 1) {
        std::fprintf(stderr, "usage: bench_window CAPTURE [--memory BUDGET] [--windows N]\n");
        return 2;
    }
    const std::uint64_t budget = parseSize(memory);
    if (!budget) {
        std::fprintf(stderr, "bench_window: --memory %s is no size\n", memory.c_str());
        return 2;
    }
    try {
        FileStore store({capture}, options);
        std::vector<StagedJob> jobs;
        auto t0 = std::chrono::steady_clock::now();
        const Report report = analyzeStore(store, store.topology(), store.hasTopology(), {}, nullptr, budget, &jobs);
        std::printf("staged analysis: %.1f s, %d passes, %llu records read\n", seconds(t0), store.passes(),
                    static_cast<unsigned long long>(store.recordsRead()));
        std::size_t j = 0;
        for (std::size_t k = 0; k < jobs.size(); ++k)
            if (jobs[k].records > jobs[j].records) j = k;
        if (jobs.empty() || report.jobs[j].steps.empty()) {
            std::fprintf(stderr, "bench_window: no job with steps\n");
            return 1;
        }
        const int steps = int(report.jobs[j].steps.size());
        for (bool index : {true, false}) {
            store.setTimeIndex(index);
            double total = 0;
            for (int w = 0; w < windows; ++w) {
                const auto [first, last] = windowSteps(report.jobs[j], jobs[j], steps * w / windows, budget);
                if (cold)
                    for (const FlowFile& f : store.files().files) {
                        const int fd = ::open(f.path.c_str(), O_RDONLY);
                        if (fd >= 0) {
                            ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                            ::close(fd);
                        }
                    }
                const std::uint64_t before = store.recordsRead();
                t0 = std::chrono::steady_clock::now();
                const JobWindow win =
                    analyzeJobWindow(store, store.topology(), report, jobs, j, first, last, {}, budget);
                const double s = seconds(t0);
                total += s;
                std::printf("%s index: %s steps %d-%d of %d: %llu records read, %zu held, %.2f s\n",
                            index ? "with" : "without", report.jobs[j].id.c_str(), first, last, steps,
                            static_cast<unsigned long long>(store.recordsRead() - before), win.records.size(), s);
            }
            std::printf("%s index: %.2f s a window (mean of %d)\n", index ? "with" : "without", total / windows,
                        windows);
        }
    } catch (const InputError& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
