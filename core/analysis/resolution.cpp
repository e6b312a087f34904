// Time resolution check: stamp granularity and record span against the median step of each job.
#include "analysis/resolution.h"

#include "analysis/stats.h"

#include "model/units.h"

#include <algorithm>
#include <string>
#include <vector>

namespace prism {
namespace {

// Below this, stamps and spans are fine for any step a training job has (tens of ms at the least).
constexpr std::int64_t kCoarseNs = 10'000'000;

std::string describeStamps(std::int64_t granularity) {
    if (granularity >= 1'000'000'000) return "whole-second stamps";
    if (granularity >= 1'000'000) return "millisecond stamps";
    if (granularity >= 1'000) return "microsecond stamps";
    return "nanosecond stamps";
}

// What would make the records fine enough, given what is coarse and the step length they must resolve
// (0 when no step was found).
std::string advice(const TimeResolution& r, bool stampsCoarse, bool spanCoarse, std::int64_t stepNs) {
    std::string out;
    if (stampsCoarse) {
        if (r.stampGranularityNs >= 1'000'000'000)
            out += " Whole-second stamps come from nfdump before 1.7.5 (-o csv): use nfdump 1.7.5 or later, or "
                   "-o csv-fast, for milliseconds; with pmacct set timestamps_secs: false; with IPFIX export "
                   "flowStartMilliseconds / flowEndMilliseconds (IEs 152, 153) or finer.";
        else
            out += " Export finer stamps (IPFIX flowStartMicroseconds / flowStartNanoseconds) or capture packets "
                   "(pcap) to time the steps.";
    }
    if (spanCoarse) {
        std::string target = stepNs > 0 ? formatDuration(std::max<std::int64_t>(stepNs / 4, 1'000'000)) : "1 s";
        out += " Set the exporter's active timeout below " + target +
               " (nfpcapd -e, softflowd -t maxlife, the router's IPFIX active timeout) so that a record does not "
               "span several steps.";
    }
    return out;
}

} // namespace

void checkResolution(const FlowTable& flows, Report& report) { checkResolution(measureResolution(flows), report); }

// Records whose stamps all fall in the first day of 1970 carry no wall-clock time: the collector took the
// exporter's times in another unit or lost its clock (softflowd -A nano exporting to nfcapd 1.7.1 does this).
void checkEpochStamps(Report& report) {
    constexpr std::int64_t kDayNs = 86'400'000'000'000;
    std::int64_t latest = 0;
    for (const JobInfo& job : report.jobs) latest = std::max(latest, job.endNs);
    if (report.jobs.empty() || latest <= 0 || latest >= kDayNs) return;
    report.notes.push_back(
        "time stamps: every record lies within the first day of 1970 (up to " + formatDuration(latest) +
        " after the epoch): the exporter's clock or its time unit did not reach the collector (softflowd -A nano "
        "exporting to nfcapd 1.7.1 does this; export -A milli, or use nfcapd 1.7.5 or later). Times are "
        "relative at best, and the jobs, steps and parallelism drawn from them may be wrong.");
}

void checkResolution(const TimeResolution& r, Report& report) {
    checkEpochStamps(report);
    if (r.records < 3) return; // too few records to tell a granularity from chance
    const std::string found = describeStamps(r.stampGranularityNs) + ", records " +
                              (r.fixedSpan ? "mostly lasting " : "typically lasting ") + formatDuration(r.typicalSpanNs) +
                              (r.fixedSpan ? " (an exporter's active timeout, presumably)" : "");
    int withoutSteps = 0;
    for (JobInfo& job : report.jobs) {
        std::vector<std::int64_t> durations;
        for (const StepInfo& s : job.steps) durations.push_back(s.durationNs());
        std::int64_t step = durations.size() >= 2 ? upperMedian(durations) : 0;
        if (step <= 0) {
            ++withoutSteps;
            continue;
        }
        bool stampsCoarse = r.stampGranularityNs * 4 >= step;
        bool spanCoarse = r.typicalSpanNs * 4 >= step;
        if (!stampsCoarse && !spanCoarse) continue;
        std::string note = "time resolution: " + found + ", against a median step of " + formatDuration(step) +
                           ": step boundaries and step timings are approximate and slow spots shorter than a record "
                           "cannot be placed." +
                           advice(r, stampsCoarse, spanCoarse, step);
        job.notes.push_back(note);
        report.notes.push_back(job.id + " " + note);
    }
    bool stampsCoarse = r.stampGranularityNs >= kCoarseNs;
    bool spanCoarse = r.typicalSpanNs >= kCoarseNs;
    if (withoutSteps > 0 && (stampsCoarse || spanCoarse)) {
        std::string note = "time resolution: " + found + "; no training steps were found in " +
                           std::to_string(withoutSteps) + " of " + std::to_string(report.jobs.size()) +
                           " jobs, and steps shorter than the records cannot be seen in them. Jobs are still told "
                           "apart by which NICs talk to each other, but their parallelism rests on the order of "
                           "transfers within a step and may be wrong at this resolution." +
                           advice(r, stampsCoarse, spanCoarse, 0);
        report.notes.push_back(note);
        for (JobInfo& job : report.jobs)
            if (job.steps.size() < 2) job.notes.push_back(note);
    }
}

} // namespace prism
