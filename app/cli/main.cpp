// llmprism-cli: the headless front end of the engine (simulate, analyze, evaluate, import).
#include "analysis/evaluate.h"
#include "analysis/pipeline.h"
#include "io/capture.h"
#include "io/collector_csv.h"
#include "io/report_json.h"
#include "model/units.h"
#include "sim/simulator.h"
#include "store/session.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

// Exit codes (documented in README and --help).
constexpr int kExitOk = 0;
constexpr int kExitInput = 1;     // bad or missing input file, I/O error
constexpr int kExitUsage = 2;     // bad command line
constexpr int kExitImperfect = 3; // evaluate --expect-perfect found a difference

const char* kMainHelp = R"(Usage: llmprism-cli COMMAND [OPTIONS]

Black-box performance diagnosis of LLM training jobs from network flow captures.

Commands:
  simulate   generate a capture (flows.csv, topology.json) and its ground truth (truth.json)
  analyze    read a capture, print its summary and write the report
  evaluate   score a report against a truth file
  import     analyse a capture once and store it with the analysis in a session file (.prism)
  convert    write any flow source (nfdump / pmacct CSV, pcap, IPFIX, flows.csv) as flows.csv

Run `llmprism-cli COMMAND --help` for the options of a command.

Exit codes: 0 success, 1 bad or missing input (the message names file, line and what was expected),
            2 bad command line, 3 `evaluate --expect-perfect` found a difference.
)";

const char* kSimulateHelp = R"(Usage: llmprism-cli simulate --preset NAME [--seed N] --out DIR [--gzip] [--format csv|pcap]
                                [--anomaly SPEC]... [--clear-anomalies] [--channels N] [--loss RATE]
       llmprism-cli simulate --list-presets

Writes DIR/flows.csv (DIR/flows.csv.gz with --gzip), DIR/topology.json and DIR/truth.json.
The same preset, seed and options always give the same files.

Options:
  --preset NAME       one of the presets (see --list-presets)
  --seed N            random seed (default 1)
  --out DIR           output folder (created if missing)
  --gzip              compress flows.csv with gzip
  --format pcap       write DIR/capture.pcap instead of flows.csv: the records as RoCEv2 (and TCP / UDP)
                      packets, nanosecond pcap cut at 96 bytes, with ACKs, some retransmissions, CNPs and
                      802.1Q / QinQ tags; refused beyond --max-packets (default 12000000; tiny fits)
  --max-packets N     packet budget of --format pcap
  --ipv6-nics SHARE   RoCE over IPv6 for the first SHARE (0 to 1) of the jobs: their NICs become
                      fd10::a:b:c for 10.a.b.c in the topology, the flows and the truth (either format)
  --anomaly SPEC      inject an anomaly (repeatable), added to the preset's own:
                        slow_rank:steps=8-12,factor=1.6[,job=J][,host=H][,gpu=G]
                        slow_link:steps=16-20,factor=4[,job=J][,host=H][,gpu=G]
                        slow_step:steps=24,pause_ms=150[,job=J]
                      job: index or name (default 0); host: cluster index or node-NNNN; without host or
                      gpu the seed picks one of the job's GPUs. factor: compute x (slow_rank), bandwidth /
                      (slow_link), default 2. truth.json lists every anomaly.
  --clear-anomalies   drop the preset's own anomalies (the --anomaly ones stay)
  --channels N        NCCL channels (parallel records) per transfer for every job
  --loss RATE         fraction of flow records the exporter loses, in [0, 1)
  --list-presets      print the preset names and exit
)";

const char* kAnalyzeHelp = R"(Usage: llmprism-cli analyze CAPTURE... [--topology T.json] [--tz ZONE] [--strict] [--json OUT]
                               [--csv-steps OUT] [--quiet]

CAPTURE is a folder holding topology.json and flow data, or flow data files, or a session file (.prism, see
`import`): its stored report is used as is, without re-analysis. Flow data is recognised by content, not
name: flows.csv[.gz], nfdump -o csv (every version) or -o csv-fast, pmacct print-plugin CSV, pcap / pcapng,
IPFIX files. Several files (or a folder holding several) are merged into one capture.
Prints a summary of the capture and the jobs found; writes the report (llmprism-report v1).

Options:
  --topology T.json the topology (default: topology.json next to the flow data)
  --tz ZONE         zone of local-time stamps in collector CSVs: UTC (default), +02:00, Europe/Berlin
  --idle-timeout US, --active-timeout US, --message-gap US
                    packet captures: a flow ends after US microseconds of silence (default 50), is cut
                    every US (default 1000), a RoCE QP ends US after a message's end (default 1; FORMATS.md)
  --strict          stop at the first bad input row (default: skip bad rows, count and report them)
  --json OUT        write the report as JSON to OUT
  --csv-steps OUT   write one row per job and step (job,index,start_ns,end_ns,duration_ns,slow) to OUT
  --quiet           print nothing but errors
)";

const char* kEvaluateHelp =
    R"(Usage: llmprism-cli evaluate --report R.json --truth T.json [--json OUT] [--expect-perfect]

Scores a report against ground truth: job recognition precision/recall, exact TP/PP/DP, DP-group and
PP-pair precision/recall, PP chain order, step count and step-duration error, finding precision/recall.
See docs/EVALUATION.md for the definition of every figure.

Options:
  --report R.json   the report (llmprism-cli analyze --json)
  --truth T.json    the ground truth (llmprism-cli simulate writes truth.json)
  --json OUT        also write every figure as JSON to OUT
  --expect-perfect  exit with code 3 unless jobs, shapes, groups, chains and steps are all exact
)";

const char* kImportHelp = R"(Usage: llmprism-cli import CAPTURE... --out SESSION.prism [--topology T.json] [--tz ZONE]
                              [--strict] [--quiet]

Reads CAPTURE (a folder holding topology.json and flow data of any kind, or flow data files: see `analyze`),
analyses it and writes one session file: the topology, every flow record, the analysis (jobs,
parallelism, steps, findings) and the SHA-256 of the source files. `analyze SESSION.prism` and the
GUI reopen it without re-analysis; `sqlite3 SESSION.prism` queries it (docs/SESSION_FORMAT.md).
The session is written atomically (an existing file is replaced only once the new one is complete);
the capture is only read. CAPTURE may itself be a session: it is copied with its notes.

Options:
  --out SESSION.prism   the session file to write
  --topology T.json     the topology (default: topology.json next to the flow data)
  --tz ZONE             zone of local-time stamps in collector CSVs (default UTC; see `analyze`)
  --idle-timeout US, --active-timeout US, --message-gap US
                        packet captures: flow timeouts in microseconds (see `analyze`)
  --strict              stop at the first bad input row (default: skip bad rows, count and report them)
  --quiet               print nothing but errors
)";

const char* kConvertHelp = R"(Usage: llmprism-cli convert SOURCE... --out flows.csv[.gz] [--topology T.json] [--tz ZONE]
                               [--strict] [--quiet]

Writes flow data of any kind as our flows.csv (gzip when the name ends in .gz): nfdump -o csv / csv-fast,
pmacct CSV, pcap / pcapng, IPFIX files, flows.csv, or folders holding them (recognised by content; several
sources are merged, sorted by start). A '#' comment at the top names the sources, how each was read (time
zone, flow timeouts) and the conversion. Columns retransmits,cnps,ecn_ce are added when the source has them
(packet captures). A topology is only checked, never written.

Options:
  --out FILE          the flows.csv or flows.csv.gz to write (replaced atomically)
  --topology T.json   check the flows against this topology (warnings only)
  --tz ZONE           zone of local-time stamps in collector CSVs: UTC (default), +02:00, Europe/Berlin
  --idle-timeout US, --active-timeout US, --message-gap US
                      packet captures: flow timeouts in microseconds (see `analyze`)
  --strict            stop at the first bad input row (default: skip bad rows, count and report them)
  --quiet             print nothing but errors
)";

struct Args {
    std::vector<std::string> positional;
    std::map<std::string, std::string> values;              // the last value of each option
    std::map<std::string, std::vector<std::string>> repeated; // every value, in order
    std::map<std::string, bool> flags;
};

// Parses `--name value` options (names in `withValue`) and `--flag` switches (names in `switches`).
bool parseArgs(int argc, char** argv, int first, const std::vector<std::string>& withValue,
               const std::vector<std::string>& switches, Args& out, std::string& error) {
    for (int i = first; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) == 0 && a.size() > 2) {
            std::string name = a.substr(2), value;
            bool inlineValue = false;
            if (auto eq = name.find('='); eq != std::string::npos) {
                value = name.substr(eq + 1);
                name = name.substr(0, eq);
                inlineValue = true;
            }
            if (std::find(withValue.begin(), withValue.end(), name) != withValue.end()) {
                if (!inlineValue) {
                    if (i + 1 >= argc) {
                        error = "option --" + name + " needs a value";
                        return false;
                    }
                    value = argv[++i];
                }
                out.values[name] = value;
                out.repeated[name].push_back(value);
            } else if (std::find(switches.begin(), switches.end(), name) != switches.end() && !inlineValue) {
                out.flags[name] = true;
            } else {
                error = "unknown option " + a;
                return false;
            }
        } else {
            out.positional.push_back(a);
        }
    }
    return true;
}

// The whole of s as a number (nothing before or after it).
template <class T>
bool parseNumber(const std::string& s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

int usageError(const std::string& msg, const char* help) {
    std::cerr << "llmprism-cli: " << msg << "\n\n" << help;
    return kExitUsage;
}

int cmdSimulate(int argc, char** argv) {
    Args args;
    std::string err;
    if (!parseArgs(argc, argv, 2, {"preset", "seed", "out", "anomaly", "channels", "loss", "format", "max-packets", "ipv6-nics"},
                   {"gzip", "list-presets", "help", "clear-anomalies"}, args, err))
        return usageError(err, kSimulateHelp);
    if (args.flags["help"]) {
        std::cout << kSimulateHelp;
        return kExitOk;
    }
    if (args.flags["list-presets"]) {
        for (const auto& name : prism::sim::presetNames()) std::cout << name << '\n';
        return kExitOk;
    }
    if (!args.positional.empty()) return usageError("unexpected argument " + args.positional.front(), kSimulateHelp);
    if (!args.values.count("preset")) return usageError("--preset is required", kSimulateHelp);
    if (!args.values.count("out")) return usageError("--out is required", kSimulateHelp);
    std::uint64_t seed = 1;
    if (args.values.count("seed")) {
        const std::string& s = args.values["seed"];
        if (!parseNumber(s, seed))
            return usageError("--seed expects a non-negative integer, found \"" + s + "\"", kSimulateHelp);
    }
    auto config = prism::sim::makePreset(args.values["preset"], seed);
    if (!config) {
        std::string names;
        for (const auto& n : prism::sim::presetNames()) names += (names.empty() ? "" : ", ") + n;
        return usageError("unknown preset \"" + args.values["preset"] + "\" (expected one of: " + names + ")",
                          kSimulateHelp);
    }
    if (args.flags["clear-anomalies"]) config->anomalies.clear();
    if (args.values.count("channels")) {
        const std::string& s = args.values["channels"];
        int channels = 0;
        if (!parseNumber(s, channels) || channels < 1)
            return usageError("--channels expects a positive integer, found \"" + s + "\"", kSimulateHelp);
        for (auto& job : config->jobs) job.channels = channels;
    }
    if (args.values.count("loss")) {
        const std::string& s = args.values["loss"];
        double loss = -1;
        if (!parseNumber(s, loss) || !(loss >= 0 && loss < 1))
            return usageError("--loss expects a fraction in [0, 1), found \"" + s + "\"", kSimulateHelp);
        config->lossRate = loss;
    }
    try {
        int index = 0;
        for (const std::string& spec : args.repeated["anomaly"])
            config->anomalies.push_back(prism::sim::parseAnomaly(spec, *config, seed, index++));
        prism::sim::validate(*config);
    } catch (const std::invalid_argument& e) {
        return usageError(e.what(), kSimulateHelp);
    }
    const std::string format = args.values.count("format") ? args.values["format"] : "csv";
    if (format != "csv" && format != "pcap")
        return usageError("--format expects csv or pcap, found \"" + format + "\"", kSimulateHelp);
    if (format == "pcap" && args.flags["gzip"]) return usageError("--gzip applies to flows.csv, not to --format pcap", kSimulateHelp);
    prism::sim::PcapWriteOptions pcapOptions;
    pcapOptions.seed = seed;
    if (args.values.count("max-packets")) {
        const std::string& s = args.values["max-packets"];
        if (!parseNumber(s, pcapOptions.maxPackets))
            return usageError("--max-packets expects a non-negative integer, found \"" + s + "\"", kSimulateHelp);
    }
    double ipv6Share = 0;
    if (args.values.count("ipv6-nics")) {
        const std::string& s = args.values["ipv6-nics"];
        if (!parseNumber(s, ipv6Share) || !(ipv6Share >= 0 && ipv6Share <= 1))
            return usageError("--ipv6-nics expects a share in [0, 1], found \"" + s + "\"", kSimulateHelp);
    }
    try {
        auto result = prism::sim::simulate(*config);
        if (ipv6Share > 0) result = prism::sim::withIpv6Nics(result, ipv6Share);
        if (format == "pcap") {
            const auto st = prism::sim::writePcapCapture(result, args.values["out"], pcapOptions);
            std::cout << "wrote " << args.values["out"] << ": " << prism::formatCount(st.packets) << " packets of "
                      << prism::formatCount(result.flows.size()) << " flow records, "
                      << result.topology.hosts.size() << " hosts, " << result.truth.jobs.size() << " jobs\n";
            return kExitOk;
        }
        prism::sim::writeCapture(result, args.values["out"], args.flags["gzip"]);
        std::cout << "wrote " << args.values["out"] << ": " << prism::formatCount(result.flows.size())
                  << " flow records, " << result.topology.hosts.size() << " hosts, " << result.truth.jobs.size()
                  << " jobs\n";
    } catch (const std::exception& e) {
        std::cerr << "llmprism-cli: " << e.what() << '\n';
        return kExitInput;
    }
    return kExitOk;
}

void printSummary(const prism::Report& report, const prism::Capture& capture) {
    using namespace prism;
    const CaptureSummary& s = *report.capture;
    std::cout << "Capture    " << capture.source << '\n';
    for (std::size_t k = 0; k < capture.flowsPaths.size(); ++k)
        std::cout << "  flows    " << capture.flowsPaths[k] << "  (" << capture.flowsKinds[k] << ")\n";
    if (capture.flowsPaths.empty()) std::cout << "  flows    " << capture.flowsPath << '\n';
    std::cout << "  topology " << (capture.topologyPath.empty() ? "(none)" : capture.topologyPath) << '\n';
    std::cout << "Records    " << formatCount(s.records) << "  (RoCE " << formatCount(s.roceRecords) << ", "
              << formatBytes(s.roceBytes) << "; other " << formatCount(s.otherRecords) << ", "
              << formatBytes(s.otherBytes) << ")\n";
    std::cout << "Topology   " << s.hosts << " hosts, " << s.nics << " NICs; " << s.endpoints
              << " endpoints seen";
    if (s.unknownRoceEndpoints) std::cout << ", " << s.unknownRoceEndpoints << " RoCE endpoints not in the topology";
    std::cout << '\n';
    if (s.records)
        std::cout << "Span       " << formatTimestamp(s.firstNs) << "  +" << formatDuration(s.lastNs - s.firstNs)
                  << '\n';
    std::cout << "Input      " << formatCount(s.skippedRows) << " rows skipped, " << formatCount(s.warnings)
              << " warnings\n";
    for (const auto& m : s.messages) std::cout << "  " << m << '\n';
    std::cout << "Jobs       " << report.jobs.size() << '\n';
    for (const JobInfo& j : report.jobs) {
        std::cout << "  " << j.id << ": " << j.gpuTotal() << " GPUs on " << j.hosts.size() << " hosts, TP " << j.tp
                  << " x PP " << j.pp << " x DP " << j.dp << ", " << j.steps.size() << " steps";
        if (j.endNs > j.startNs)
            std::cout << ", " << formatTimestamp(j.startNs) << " +" << formatDuration(j.endNs - j.startNs);
        if (!j.findings.empty()) std::cout << ", " << j.findings.size() << " findings";
        if (!j.restartOf.empty()) std::cout << ", restart of " << j.restartOf;
        std::cout << '\n';
        for (const auto& f : j.findings) std::cout << "    [" << f.kind << "] " << f.message << '\n';
    }
    for (const auto& n : report.notes) std::cout << "Note       " << n << '\n';
}

// A path names a session when it is one, or claims to be one by its extension (so a damaged session gives
// the session's error rather than a CSV parse error).
bool looksLikeSession(const std::string& path) {
    return prism::isSessionFile(path) || std::filesystem::path(path).extension() == prism::kSessionExtension;
}

// The options with a value that sourceOptions reads, after a command's own ones.
std::vector<std::string> withSourceOptions(std::vector<std::string> own) {
    for (const char* o : {"topology", "tz", "idle-timeout", "active-timeout", "message-gap"}) own.push_back(o);
    return own;
}

// --strict, --topology, --tz and the packet flow timeouts into load options; false (with `error`) on a bad value.
bool sourceOptions(Args& args, prism::LoadOptions& lo, std::string& error) {
    lo.strict = args.flags["strict"];
    lo.topologyPath = args.values["topology"];
    lo.timeZone = args.values["tz"];
    for (auto [name, ns] : {std::pair{"idle-timeout", &lo.idleTimeoutNs}, std::pair{"active-timeout", &lo.activeTimeoutNs},
                            std::pair{"message-gap", &lo.messageGapNs}}) {
        if (!args.values.count(name)) continue;
        double us = 0;
        if (!parseNumber(args.values[name], us) || !(us > 0 && us < 1e12)) {
            error = std::string("--") + name + " expects a positive number of microseconds, found \"" +
                    args.values[name] + "\"";
            return false;
        }
        *ns = std::max<std::int64_t>(1, std::llround(us * 1000));
    }
    try {
        prism::TimeZone::parse(lo.timeZone);
    } catch (const std::invalid_argument& e) {
        error = std::string("--tz: ") + e.what();
        return false;
    }
    return true;
}

int cmdAnalyze(int argc, char** argv) {
    Args args;
    std::string err;
    if (!parseArgs(argc, argv, 2, withSourceOptions({"json", "csv-steps"}), {"strict", "quiet", "help"}, args, err))
        return usageError(err, kAnalyzeHelp);
    if (args.flags["help"]) {
        std::cout << kAnalyzeHelp;
        return kExitOk;
    }
    if (args.positional.empty()) return usageError("expected a CAPTURE", kAnalyzeHelp);
    if (args.positional.size() > 1 && looksLikeSession(args.positional.front()))
        return usageError("a session file is analysed alone", kAnalyzeHelp);
    prism::LoadOptions lo;
    if (!sourceOptions(args, lo, err)) return usageError(err, kAnalyzeHelp);
    try {
        prism::Capture capture;
        prism::Report report;
        if (looksLikeSession(args.positional.front())) {
            prism::OpenOptions oo;
            oo.timelines = false; // the report is all analyze prints
            prism::Session session = prism::openSession(args.positional.front(), oo);
            capture = std::move(session.capture);
            report = std::move(session.analysis.report);
            if (!args.flags["quiet"])
                std::cout << "Session    " << args.positional.front() << "  (saved " << session.meta.created
                          << " by LLMPrism " << session.meta.toolVersion << ", " << session.notes.size()
                          << " notes)\n";
        } else {
            capture = prism::loadCapture(args.positional, lo);
            report = prism::analyzeCapture(capture);
        }
        if (!args.flags["quiet"]) printSummary(report, capture);
        if (args.values.count("json")) prism::writeJsonFile(prism::reportToJson(report), args.values["json"]);
        if (args.values.count("csv-steps")) {
            const std::string& path = args.values["csv-steps"];
            std::ofstream out(path + ".tmp", std::ios::trunc);
            out << "job,index,start_ns,end_ns,duration_ns,slow\n";
            for (const auto& j : report.jobs)
                for (const auto& s : j.steps)
                    out << j.id << ',' << s.index << ',' << s.startNs << ',' << s.endNs << ',' << s.durationNs() << ','
                        << (s.slow ? 1 : 0) << '\n';
            out.close();
            if (!out || std::rename((path + ".tmp").c_str(), path.c_str()) != 0)
                throw std::runtime_error(path + ": cannot write");
        }
    } catch (const prism::InputError& e) {
        std::cerr << "llmprism-cli: error: " << e.what() << '\n';
        return kExitInput;
    } catch (const std::exception& e) {
        std::cerr << "llmprism-cli: error: " << e.what() << '\n';
        return kExitInput;
    }
    return kExitOk;
}

int cmdImport(int argc, char** argv) {
    Args args;
    std::string err;
    if (!parseArgs(argc, argv, 2, withSourceOptions({"out"}), {"strict", "quiet", "help"}, args, err))
        return usageError(err, kImportHelp);
    if (args.flags["help"]) {
        std::cout << kImportHelp;
        return kExitOk;
    }
    if (args.positional.empty()) return usageError("expected a CAPTURE", kImportHelp);
    if (args.positional.size() > 1 && looksLikeSession(args.positional.front()))
        return usageError("a session file is imported alone", kImportHelp);
    prism::LoadOptions lo;
    if (!sourceOptions(args, lo, err)) return usageError(err, kImportHelp);
    if (!args.values.count("out")) return usageError("--out is required", kImportHelp);
    const std::string& input = args.positional.front();
    const std::string& out = args.values["out"];
    try {
        prism::Session session;
        prism::SaveOptions so;
        if (looksLikeSession(input)) {
            session = prism::openSession(input);
            so.flowsChecksum = session.meta.flows; // the source files as they were when first imported
            so.topologyChecksum = session.meta.topology;
        } else {
            session.capture = prism::loadCapture(args.positional, lo);
            // The checksums read the source files again: overlap that with the analysis.
            const prism::Capture& c = session.capture;
            auto hash = [](const std::string& path) {
                return path.empty() ? prism::FileChecksum{} : prism::sha256File(path);
            };
            auto flowsSum = std::async(std::launch::async, hash, c.flowsPath);
            session.analysis = prism::runAnalysis(c);
            so.topologyChecksum = hash(c.topologyPath);
            so.flowsChecksum = flowsSum.get();
        }
        if (!args.flags["quiet"]) printSummary(session.analysis.report, session.capture);
        prism::saveSession(out, session.capture, session.analysis, session.notes, so);
        if (!args.flags["quiet"]) {
            std::error_code ec;
            std::cout << "wrote " << out << ": " << prism::formatCount(session.capture.flows.size())
                      << " flow records, " << session.analysis.report.jobs.size() << " jobs, "
                      << prism::formatBytes(std::filesystem::file_size(out, ec)) << '\n';
        }
    } catch (const std::exception& e) {
        std::cerr << "llmprism-cli: error: " << e.what() << '\n';
        return kExitInput;
    }
    return kExitOk;
}

int cmdConvert(int argc, char** argv) {
    Args args;
    std::string err;
    if (!parseArgs(argc, argv, 2, withSourceOptions({"out"}), {"strict", "quiet", "help"}, args, err))
        return usageError(err, kConvertHelp);
    if (args.flags["help"]) {
        std::cout << kConvertHelp;
        return kExitOk;
    }
    if (args.positional.empty()) return usageError("expected a SOURCE", kConvertHelp);
    if (!args.values.count("out")) return usageError("--out is required", kConvertHelp);
    prism::LoadOptions lo;
    if (!sourceOptions(args, lo, err)) return usageError(err, kConvertHelp);
    const std::string& out = args.values["out"];
    try {
        prism::Capture capture = prism::loadCapture(args.positional, lo);
        std::vector<std::string> comment{"converted by llmprism-cli " LLMPRISM_VERSION " convert from:"};
        for (std::size_t k = 0; k < capture.flowsPaths.size(); ++k)
            comment.push_back("  " + capture.flowsPaths[k] + " (" + capture.flowsKinds[k] + ")");
        comment.push_back(prism::formatCount(capture.flows.size()) + " records, " +
                          prism::formatCount(capture.diagnostics.skippedRows) + " input rows skipped");
        prism::writeFlowsCsv(capture.flows, out, comment);
        if (!args.flags["quiet"]) {
            for (const std::string& line : comment) std::cout << line << '\n';
            prism::CaptureSummary s = prism::summarize(capture);
            for (const auto& m : s.messages) std::cout << "  " << m << '\n';
            std::cout << "wrote " << out << '\n';
        }
    } catch (const std::exception& e) {
        std::cerr << "llmprism-cli: error: " << e.what() << '\n';
        return kExitInput;
    }
    return kExitOk;
}

int cmdEvaluate(int argc, char** argv) {
    Args args;
    std::string err;
    if (!parseArgs(argc, argv, 2, {"report", "truth", "json"}, {"expect-perfect", "help"}, args, err))
        return usageError(err, kEvaluateHelp);
    if (args.flags["help"]) {
        std::cout << kEvaluateHelp;
        return kExitOk;
    }
    if (!args.positional.empty()) return usageError("unexpected argument " + args.positional.front(), kEvaluateHelp);
    if (!args.values.count("report") || !args.values.count("truth"))
        return usageError("--report and --truth are required", kEvaluateHelp);
    try {
        prism::Report report = prism::readReportFile(args.values["report"]);
        prism::Report truth = prism::readReportFile(args.values["truth"]);
        prism::EvaluationResult result = prism::evaluate(report, truth);
        std::cout << result.toText();
        if (args.values.count("json")) prism::writeJsonFile(result.toJson(), args.values["json"]);
        if (args.flags["expect-perfect"] && !result.perfect()) return kExitImperfect;
    } catch (const std::exception& e) {
        std::cerr << "llmprism-cli: error: " << e.what() << '\n';
        return kExitInput;
    }
    return kExitOk;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << kMainHelp;
        return kExitUsage;
    }
    std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
        std::cout << kMainHelp;
        return kExitOk;
    }
    if (cmd == "--version") {
        std::cout << "llmprism-cli " << LLMPRISM_VERSION << '\n';
        return kExitOk;
    }
    if (cmd == "simulate") return cmdSimulate(argc, argv);
    if (cmd == "analyze") return cmdAnalyze(argc, argv);
    if (cmd == "evaluate") return cmdEvaluate(argc, argv);
    if (cmd == "import") return cmdImport(argc, argv);
    if (cmd == "convert") return cmdConvert(argc, argv);
    return usageError("unknown command \"" + cmd + "\"", kMainHelp);
}
