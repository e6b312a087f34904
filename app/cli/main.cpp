// llmprism-cli: the headless front end of the engine (simulate, analyze, evaluate, import, convert). Every option
// is one CLI11 definition: it parses the command line and makes the --help text (and so the manual page).
#include "analysis/compare.h"
#include "analysis/evaluate.h"
#include "analysis/pipeline.h"
#include "analysis/staged.h"
#include "io/capture.h"
#include "io/clickhouse.h"
#include "io/collector_csv.h"
#include "io/file_store.h"
#include "io/report_json.h"
#include "model/units.h"
#include "sim/simulator.h"
#include "sim/trace_import.h"
#include "store/session.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace {

// Exit codes (documented in README and --help).
constexpr int kExitOk = 0;
constexpr int kExitInput = 1;     // bad or missing input file, I/O error
constexpr int kExitUsage = 2;     // bad command line
constexpr int kExitImperfect = 3; // evaluate --expect-perfect found a difference

// The help of a command: "Usage:" with a synopsis made from its options (required ones first, optional ones in
// brackets), its description, then the options. The main help lists the commands by the first line of their
// description.
class Help : public CLI::Formatter {
public:
    Help() { column_width(24); }

    std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
        std::string out = make_usage(app, name) + "\n" + app->get_description() + "\n";
        out += make_groups(app, mode) + make_subcommands(app, mode);
        return app->get_footer().empty() ? out : out + "\n" + app->get_footer() + "\n";
    }

    std::string make_usage(const CLI::App* app, std::string name) const override {
        std::string out = "Usage: " + name;
        if (!app->get_subcommands({}).empty()) return out + " COMMAND [OPTIONS]\n";
        const std::string indent(out.size() + 1, ' '); // continuation lines start under the first word
        std::size_t column = out.size();
        std::vector<const CLI::Option*> options =
            app->get_options([&](const CLI::Option* o) { return o != app->get_help_ptr(); });
        std::stable_partition(options.begin(), options.end(), [](const CLI::Option* o) { return o->get_required(); });
        for (const CLI::Option* opt : options) {
            std::string word = opt->get_positional()
                                   ? opt->get_name(true, false) + (opt->get_items_expected_max() > 1 ? "..." : "")
                                   : opt->get_name();
            if (!opt->get_option_text().empty()) word += " " + opt->get_option_text();
            if (!opt->get_required()) word = "[" + word + "]";
            if (opt->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll && !opt->get_positional())
                word += "...";
            const bool wrap = column + 1 + word.size() > 110;
            out += (wrap ? "\n" + indent : " ") + word;
            column = (wrap ? indent.size() : column + 1) + word.size();
        }
        return out + "\n";
    }

    std::string make_positionals(const CLI::App*) const override { return {}; } // in the synopsis and the text

    std::string make_subcommand(const CLI::App* sub) const override {
        const std::string& d = sub->get_description();
        std::ostringstream out;
        CLI::detail::format_help(out, sub->get_name(), d.substr(0, d.find('\n')), column_width_);
        return out.str();
    }
};

// The whole of s as a number (nothing before or after it).
template <class T>
bool parseNumber(const std::string& s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

// A command line that parsed but does not make sense: its message and the command's help on stderr.
struct UsageError {
    std::string message;
};

// What every reading command takes: the capture (or flow sources) and how to read it.
struct Source {
    std::vector<std::string> inputs;
    std::string topology, tz, idleTimeout, activeTimeout, messageGap, from, to;
    bool strict = false, quiet = false;
};

void addSourceOptions(CLI::App* cmd, Source& s, const char* positional) {
    cmd->add_option(positional, s.inputs)->required(); // described in the command's text
    cmd->add_option("--topology", s.topology, "the topology (default: topology.json next to the flow data)")
        ->option_text("T.json");
    cmd->add_option("--tz", s.tz, "zone of local-time stamps in collector CSVs: UTC (default), +02:00, Europe/Berlin")
        ->option_text("ZONE");
    cmd->add_option("--idle-timeout", s.idleTimeout,
                    "packet captures: a flow ends after US microseconds of silence (default 50)")
        ->option_text("US");
    cmd->add_option("--active-timeout", s.activeTimeout,
                    "packet captures: a flow is cut every US microseconds (default 1000)")
        ->option_text("US");
    cmd->add_option("--message-gap", s.messageGap,
                    "packet captures: a RoCE QP ends US microseconds after a message's end (default 1;\n"
                    "docs/FORMATS.md)")
        ->option_text("US");
    cmd->add_option("--from", s.from,
                    "only records starting at or after T (ns since the epoch, or 2024-01-02T03:04:05.123Z\n"
                    "in UTC)")
        ->option_text("T");
    cmd->add_option("--to", s.to, "only records starting before T")->option_text("T");
    cmd->add_flag("--strict", s.strict,
                  "stop at the first bad input row (default: skip bad rows, count and report them)");
    cmd->add_flag("--quiet", s.quiet, "print nothing but errors");
}

// --strict, --topology, --tz and the packet flow timeouts as load options; UsageError on a bad value.
prism::LoadOptions loadOptions(const Source& s, const CLI::App& cmd) {
    prism::LoadOptions lo;
    lo.strict = s.strict;
    lo.topologyPath = s.topology;
    lo.timeZone = s.tz;
    for (auto [name, value, ns] : {std::tuple{"--idle-timeout", &s.idleTimeout, &lo.idleTimeoutNs},
                                   std::tuple{"--active-timeout", &s.activeTimeout, &lo.activeTimeoutNs},
                                   std::tuple{"--message-gap", &s.messageGap, &lo.messageGapNs}}) {
        double us = 0;
        if (cmd.count(name) && (!parseNumber(*value, us) || !(us > 0 && us < 1e12)))
            throw UsageError{std::string(name) + " expects a positive number of microseconds, found \"" + *value +
                             "\""};
        if (cmd.count(name)) *ns = std::max<std::int64_t>(1, std::llround(us * 1000));
    }
    for (auto [name, value, ns] : {std::tuple{"--from", &s.from, &lo.fromNs}, std::tuple{"--to", &s.to, &lo.toNs}}) {
        if (!cmd.count(name)) continue;
        const auto t = prism::parseUtcTime(*value);
        if (!t)
            throw UsageError{std::string(name) + " expects nanoseconds since the epoch or a UTC time such as "
                             "2024-01-02T03:04:05.123Z, found \"" + *value + "\""};
        *ns = *t;
    }
    if (lo.fromNs >= lo.toNs) throw UsageError{"--from must come before --to"};
    try {
        prism::TimeZone::parse(lo.timeZone);
    } catch (const std::invalid_argument& e) {
        throw UsageError{std::string("--tz: ") + e.what()};
    }
    return lo;
}

// Copies 2..N of the flows, each after the one before with 1 s between them, as flows-K.csv[.gz] next to
// flows.csv (rows in end order, as writeCapture writes them). Restarts: each copy's connections are new ones
// (UDP source ports moved), so that each copy is a restart of the jobs.
void writeCopiesOf(prism::FlowTable table, const std::string& out, std::uint64_t copies, bool restarts, bool gzip) {
    if (table.empty()) return;
    const std::int64_t first = *std::min_element(table.startNs.begin(), table.startNs.end());
    const std::int64_t last = table.lastEnd();
    const std::int64_t shift = last - first + 1'000'000'000;
    std::vector<std::uint32_t> order(table.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return table.end(a) != table.end(b) ? table.end(a) < table.end(b) : table.startNs[a] < table.startNs[b];
    });
    for (std::uint64_t k = 1; k < copies; ++k) {
        for (std::size_t i = 0; i < table.size(); ++i) {
            table.startNs.set(i, table.startNs[i] + shift); // (its end moves with it)
            if (restarts && table.isRoce(i)) table.srcPort[i] = std::uint16_t(49152 + (table.srcPort[i] + 997) % 16384);
        }
        prism::writeFlowsCsv(table, out + "/flows-" + std::to_string(k) + (gzip ? ".csv.gz" : ".csv"),
                             {"copy " + std::to_string(k + 1) + " of " + std::to_string(copies) + " (simulate --repeat)"},
                             &order);
    }
}

struct Simulate {
    std::string preset, seed, out, format = "csv", maxPackets, ipv6Nics, channels, loss, repeat, repeatAs = "run";
    std::string fromTrace, meta, gpusPerHost, random;
    std::vector<std::string> anomalies, settings;
    bool gzip = false, clearAnomalies = false;

    void define(CLI::App* cmd) {
        cmd->add_option("--preset", preset, "one of the presets (see --list-presets), or --from-trace")
            ->option_text("NAME");
        cmd->add_option("--from-trace", fromTrace,
                        "a real job's per-rank operation timings (Chrome/Perfetto trace, JSON or .json.gz;\n"
                        "docs/FORMATS.md \"Real training traces\") run through the simulator instead of a preset:\n"
                        "every recorded forward and backward takes its recorded time")
            ->option_text("TRACE");
        cmd->add_option("--random", random,
                        "a whole configuration drawn from seed N instead of a preset (shape, schedule, style,\n"
                        "exporter, anomalies; docs/SIMULATOR.md \"Random configurations\")")
            ->option_text("N");
        cmd->add_option("--meta", meta,
                        "the trace's meta YAML (dp_size, pp_size, tp_size, dsp_size, vpp_size; default:\n"
                        "meta-X.yaml next to timeline-X.json.gz)")
            ->option_text("META.yaml");
        cmd->add_option("--gpus-per-host", gpusPerHost,
                        "--from-trace: GPUs per host (default: one TP group per host, so that every other\n"
                        "kind of traffic crosses the network)")
            ->option_text("N");
        cmd->add_option("--seed", seed, "random seed (default 1)")->option_text("N");
        cmd->add_option("--out", out, "output folder (created if missing)")->option_text("DIR")->required();
        cmd->add_flag("--gzip", gzip, "compress flows.csv with gzip");
        cmd->add_option("--format", format,
                        "csv (default), or pcap: DIR/capture.pcap instead of flows.csv, the records as RoCEv2\n"
                        "(and TCP / UDP) packets, nanosecond pcap cut at 96 bytes, with ACKs, some\n"
                        "retransmissions, CNPs and 802.1Q / QinQ tags; refused beyond --max-packets")
            ->option_text("csv|pcap");
        cmd->add_option("--max-packets", maxPackets, "packet budget of --format pcap (default 12000000; tiny fits)")
            ->option_text("N");
        cmd->add_option("--ipv6-nics", ipv6Nics,
                        "RoCE over IPv6 for the first SHARE (0 to 1) of the jobs: their NICs become\n"
                        "fd10::a:b:c for 10.a.b.c in the topology, the flows and the truth (either format)")
            ->option_text("SHARE");
        cmd->add_option("--anomaly", anomalies,
                        "inject an anomaly (repeatable), added to the preset's own:\n"
                        "  slow_rank:steps=8-12,factor=1.6[,job=J][,host=H][,gpu=G]\n"
                        "  slow_link:steps=16-20,factor=4[,job=J][,host=H][,gpu=G]\n"
                        "  slow_step:steps=24,pause_ms=150[,job=J]\n"
                        "job: index or name (default 0); host: cluster index or node-NNNN; without host or\n"
                        "gpu the seed picks one of the job's GPUs. factor: compute x (slow_rank), bandwidth /\n"
                        "(slow_link), default 2. truth.json lists every anomaly.")
            ->option_text("SPEC")
            ->allow_extra_args(false) // one SPEC per --anomaly
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        cmd->add_flag("--clear-anomalies", clearAnomalies, "drop the preset's own anomalies (the --anomaly ones stay)");
        cmd->add_option("--set", settings,
                        "change a job of the preset (repeatable): KEY=VALUE[,KEY=VALUE...][,job=J] with keys\n"
                        "tp, pp, dp, micro_batches, steps, buckets, channels, forward_ms, optimizer_ms,\n"
                        "gradient_mib (bytes each DP group all-reduces per step), activation_mib,\n"
                        "expert_mib, ep, last_stage, jitter, chunks, tied_embedding (1), active_timeout_ms; e.g.\n"
                        "--set gradient_mib=96 (a longer DP sync), --set pp=4,dp=1 (another shape)")
            ->option_text("SPEC")
            ->allow_extra_args(false)
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        cmd->add_option("--channels", channels, "NCCL channels (parallel records) per transfer for every job")
            ->option_text("N");
        cmd->add_option("--loss", loss, "fraction of flow records the exporter loses, in [0, 1)")->option_text("RATE");
        cmd->add_option("--repeat", repeat,
                        "write the flows N times back to back, 1 s apart, as N files (flows.csv, flows-1.csv...;\n"
                        "a capture N times as large; truth.json describes the first copy)")
            ->option_text("N");
        cmd->add_option("--repeat-as", repeatAs,
                        "run: the copies continue one run (the same connections); restarts: each copy is a\n"
                        "restart of the jobs (new connections)")
            ->option_text("run|restarts");
        // Runs before the checks of required options: --list-presets needs none.
        cmd->add_flag_callback(
            "--list-presets",
            [] {
                for (const auto& name : prism::sim::presetNames()) std::cout << name << '\n';
                throw CLI::Success();
            },
            "print the preset names and exit");
    }

    // The preset, or the config a trace makes (nullopt after an error message: the trace could not be read).
    std::optional<prism::sim::SimConfig> makeConfig(const CLI::App& cmd, std::uint64_t seed,
                                                    std::vector<std::string>& notes) const {
        if (!fromTrace.empty() && !preset.empty()) throw UsageError{"--preset and --from-trace exclude each other"};
        if (fromTrace.empty() && (cmd.count("--meta") || cmd.count("--gpus-per-host")))
            throw UsageError{"--meta and --gpus-per-host go with --from-trace"};
        if (!random.empty()) {
            std::uint64_t drawn = 0;
            if (!preset.empty() || !fromTrace.empty())
                throw UsageError{"--random excludes --preset and --from-trace"};
            if (!parseNumber(random, drawn))
                throw UsageError{"--random expects a non-negative integer, found \"" + random + "\""};
            auto config = prism::sim::randomConfig(drawn);
            notes.push_back("random configuration " + random + ": " + prism::sim::describeConfig(config));
            return config;
        }
        if (fromTrace.empty()) {
            if (preset.empty()) throw UsageError{"expected --preset NAME, --from-trace TRACE or --random N"};
            auto config = prism::sim::makePreset(preset, seed);
            if (config) return config;
            std::string names;
            for (const auto& n : prism::sim::presetNames()) names += (names.empty() ? "" : ", ") + n;
            throw UsageError{"unknown preset \"" + preset + "\" (expected one of: " + names + ")"};
        }
        prism::sim::TraceOptions options;
        options.metaPath = meta;
        options.seed = seed;
        if (cmd.count("--gpus-per-host") && (!parseNumber(gpusPerHost, options.gpusPerHost) || options.gpusPerHost < 1))
            throw UsageError{"--gpus-per-host expects a positive whole number, found \"" + gpusPerHost + "\""};
        try {
            auto imported = prism::sim::importTrace(fromTrace, options);
            notes = std::move(imported.notes);
            return std::move(imported.config);
        } catch (const prism::InputError& e) {
            std::cerr << "llmprism-cli: " << e.issue().toString() << '\n';
        } catch (const std::invalid_argument& e) {
            throw UsageError{e.what()};
        }
        return std::nullopt;
    }

    int run(const CLI::App& cmd) const {
        std::uint64_t seedValue = 1;
        if (cmd.count("--seed") && !parseNumber(seed, seedValue))
            throw UsageError{"--seed expects a non-negative integer, found \"" + seed + "\""};
        std::vector<std::string> importNotes;
        auto config = makeConfig(cmd, seedValue, importNotes);
        if (!config) return kExitInput;
        if (clearAnomalies) config->anomalies.clear();
        if (cmd.count("--channels")) {
            int n = 0;
            if (!parseNumber(channels, n) || n < 1)
                throw UsageError{"--channels expects a positive integer, found \"" + channels + "\""};
            for (auto& job : config->jobs) job.channels = n;
        }
        if (cmd.count("--loss")) {
            double rate = -1;
            if (!parseNumber(loss, rate) || !(rate >= 0 && rate < 1))
                throw UsageError{"--loss expects a fraction in [0, 1), found \"" + loss + "\""};
            config->lossRate = rate;
        }
        try {
            for (const std::string& spec : settings) prism::sim::applySetting(spec, *config);
            int index = 0;
            for (const std::string& spec : anomalies)
                config->anomalies.push_back(prism::sim::parseAnomaly(spec, *config, seedValue, index++));
            prism::sim::validate(*config);
            if (!settings.empty() || !anomalies.empty() || clearAnomalies || !preset.empty())
                prism::sim::labelOwnWork(*config);
        } catch (const std::invalid_argument& e) {
            throw UsageError{e.what()};
        }
        std::uint64_t copies = 1;
        if (cmd.count("--repeat") && (!parseNumber(repeat, copies) || copies < 1 || copies > 1000))
            throw UsageError{"--repeat expects a whole number from 1 to 1000, found \"" + repeat + "\""};
        if (repeatAs != "run" && repeatAs != "restarts")
            throw UsageError{"--repeat-as expects run or restarts, found \"" + repeatAs + "\""};
        if (copies > 1 && format != "csv") throw UsageError{"--repeat applies to flows.csv, not to --format pcap"};
        if (format != "csv" && format != "pcap")
            throw UsageError{"--format expects csv or pcap, found \"" + format + "\""};
        if (format == "pcap" && gzip) throw UsageError{"--gzip applies to flows.csv, not to --format pcap"};
        prism::sim::PcapWriteOptions pcapOptions;
        pcapOptions.seed = seedValue;
        if (cmd.count("--max-packets") && !parseNumber(maxPackets, pcapOptions.maxPackets))
            throw UsageError{"--max-packets expects a non-negative integer, found \"" + maxPackets + "\""};
        double ipv6Share = 0;
        if (cmd.count("--ipv6-nics") && (!parseNumber(ipv6Nics, ipv6Share) || !(ipv6Share >= 0 && ipv6Share <= 1)))
            throw UsageError{"--ipv6-nics expects a share in [0, 1], found \"" + ipv6Nics + "\""};

        try {
            auto result = prism::sim::simulate(*config);
            if (ipv6Share > 0) result = prism::sim::withIpv6Nics(result, ipv6Share);
            result.truth.notes.insert(result.truth.notes.end(), importNotes.begin(), importNotes.end());
            std::string packets;
            if (format == "pcap")
                packets =
                    prism::formatCount(prism::sim::writePcapCapture(result, out, pcapOptions).packets) + " packets of ";
            else prism::sim::writeCapture(result, out, gzip);
            if (copies > 1) writeCopiesOf(result.flows, out, copies, repeatAs == "restarts", gzip);
            for (const std::string& note : importNotes) std::cout << note << '\n';
            std::cout << "wrote " << out << ": " << packets << prism::formatCount(result.flows.size() * copies)
                      << " flow records" << (copies > 1 ? " in " + std::to_string(copies) + " files" : std::string()) << ", " << result.topology.hosts.size() << " hosts, " << result.truth.jobs.size()
                      << " jobs\n";
        } catch (const std::exception& e) {
            std::cerr << "llmprism-cli: " << e.what() << '\n';
            return kExitInput;
        }
        return kExitOk;
    }
};

std::string counted(std::uint64_t n, const char* word) { return prism::formatCounted(n, word); }

// The median duration of a job's steps (0 without steps).
double medianStepNs(const prism::JobInfo& j) {
    std::vector<std::int64_t> d;
    for (const auto& st : j.steps) d.push_back(st.durationNs());
    if (d.empty()) return 0;
    std::nth_element(d.begin(), d.begin() + std::ptrdiff_t(d.size() / 2), d.end());
    return double(d[d.size() / 2]);
}

// Why a capture gave no job, in one line (the GUI says the same on its empty timeline).
std::string whyNoJobs(const prism::CaptureSummary& s, bool windowed) {
    if (s.records == 0 && windowed)
        return "No records between --from and --to: the window lies outside the capture (leave them out to see its "
               "span).";
    if (s.records == 0) return "No flow records in the capture.";
    if (s.roceRecords == 0)
        return "No training job: the capture holds no RoCE traffic (UDP port 4791), and jobs are recognized from the "
               "RDMA flows between GPUs.";
    return "No training job: the RoCE traffic here does not join GPUs of different hosts the way a training job's "
           "does.";
}

void printSummary(const prism::Report& report, const prism::Capture& capture, bool windowed = false) {
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
    std::cout << "Topology   " << s.hosts << " hosts, " << s.nics << " NICs; " << s.endpoints << " endpoints seen";
    if (s.unknownRoceEndpoints) std::cout << ", " << s.unknownRoceEndpoints << " RoCE endpoints not in the topology";
    std::cout << '\n';
    // Said where it is read first, not only among the warnings: without the hosts every job comes out split.
    if (const std::string misfit = topologyMisfit(s); !misfit.empty()) std::cout << "  ! " << misfit << '\n';
    if (s.records)
        std::cout << "Span       " << formatTimestamp(s.firstNs) << "  +" << formatDuration(s.lastNs - s.firstNs)
                  << '\n';
    std::cout << "Input      " << counted(s.skippedRows, "row") << " skipped, " << counted(s.warnings, "warning")
              << (s.messages.empty() ? "" : " (on stderr)") << '\n';
    // Warnings are diagnostics: on stderr, where scripts that read the summary do not take them for it.
    for (const auto& m : s.messages) std::cerr << m << '\n';
    std::cout << "Jobs       " << report.jobs.size() << '\n';
    if (report.jobs.empty()) std::cout << "  " << whyNoJobs(s, windowed) << '\n';
    for (const JobInfo& j : report.jobs) {
        std::cout << "  " << j.id << ": " << j.gpuTotal() << " GPUs on " << counted(j.hosts.size(), "host") << ", TP "
                  << j.tp << " x PP " << j.pp << " x DP " << j.dp << ", " << counted(j.steps.size(), "step");
        if (const double median = medianStepNs(j); median > 0)
            std::cout << " (median " << formatDuration(std::int64_t(median)) << ")";
        if (j.endNs > j.startNs)
            std::cout << ", " << formatTimestamp(j.startNs) << " +" << formatDuration(j.endNs - j.startNs);
        if (!j.findings.empty()) std::cout << ", " << counted(j.findings.size(), "finding");
        if (!j.restartOf.empty()) std::cout << ", restart of " << j.restartOf;
        std::cout << '\n';
        for (const auto& f : j.findings) std::cout << "    [" << f.kind << "] " << f.message << '\n';
        // What the engine noted about the job (expert all-to-all, intra-host parallelism read as TP, steps it
        // could not see): said here as the GUI's banner says it.
        for (const auto& n : j.notes) std::cout << "    note: " << n << '\n';
    }
    for (const auto& n : report.notes) std::cout << "Note       " << n << '\n';
}

// The folder an output file goes in, made when missing (as simulate --out makes its folder); an error says why
// it could not be.
void makeParentFolder(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (parent.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) throw std::runtime_error(path + ": cannot make its folder " + parent.string() + " (" + ec.message() + ")");
}

// A --json output: its folder made when missing, then the file.
void writeJsonOutput(const nlohmann::json& j, const std::string& path) {
    makeParentFolder(path);
    prism::writeJsonFile(j, path);
}

// A session's note as the summary lists it: where it is attached, by whom, and what it says.
void printNote(const prism::Note& n) {
    std::string where = n.jobId + " " + prism::noteTargetName(n.target);
    if (n.target == prism::NoteTarget::Step) where += " " + std::to_string(n.step);
    if (n.target == prism::NoteTarget::Finding) where += " " + std::to_string(n.finding);
    if (!n.ip.empty()) where += " " + n.ip;
    if (n.target == prism::NoteTarget::Range)
        where += " " + prism::formatTimestamp(n.startNs) + " +" + prism::formatDuration(n.endNs - n.startNs);
    std::cout << "  note     [" << where << "]" << (n.author.empty() ? "" : " " + n.author + ":") << ' ' << n.text
              << '\n';
}

// A path names a session when it is one, or claims to be one by its extension (so a damaged session gives
// the session's error rather than a CSV parse error).
bool looksLikeSession(const std::string& path) {
    return prism::isSessionFile(path) || std::filesystem::path(path).extension() == prism::kSessionExtension;
}

// The capture of `inputs`: the flows a session holds (a session is taken wherever a capture is, alone), or the
// files read with `lo`. `what` names the command's argument for the message.
prism::Capture captureOf(const std::vector<std::string>& inputs, const prism::LoadOptions& lo, const char* what) {
    if (!inputs.empty() && looksLikeSession(inputs.front())) {
        if (inputs.size() > 1) throw UsageError{std::string("a session file is given alone as ") + what};
        return prism::openSession(inputs.front()).capture;
    }
    return prism::loadCapture(inputs, lo);
}

// A ClickHouse table analysed where it lies (analysis/staged.h): the server groups the RoCE records for
// recognition, then each job's records are fetched alone. `capture` gets what printSummary shows.
// `budget` (bytes): jobs fetched together within it, a job over it analysed window by window (--memory; by
// default 80% of the memory available, so that one job larger than memory is not fetched whole).
prism::Report analyzeClickHouse(const std::string& text, const prism::LoadOptions& lo, std::uint64_t budget,
                                prism::Capture& capture) {
    const prism::ClickHouseUrl url = prism::ClickHouseUrl::parse(text);
    capture.source = url.display();
    capture.topologyPath = lo.topologyPath;
    if (!lo.topologyPath.empty()) {
        capture.topology = prism::readTopologyJson(lo.topologyPath);
        capture.hasTopology = true;
    }
    prism::ClickHouseStore store(url, {lo.fromNs, lo.toNs});
    prism::StagedStats stats;
    prism::Report report = prism::analyzeStore(store, capture.topology, capture.hasTopology, {}, &stats, budget);
    capture.flowsPath = url.display();
    capture.flowsPaths = {url.display()};
    capture.flowsKinds = {"ClickHouse table; recognition on " + prism::formatCount(stats.groupedRows) +
                          " grouped rows, then each job's records alone (largest " +
                          prism::formatCount(stats.largestJob) + ")"};
    if (!capture.hasTopology) { // as loadCapture says it for files
        report.capture->warnings += 1;
        report.capture->messages.push_back("warning: " + url.display() +
                                           ": no topology (--topology): each NIC is treated as its own host");
    }
    return report;
}

// A capture analysed in stages from its files (analysis/staged.h): never held whole.
prism::Report analyzeInStages(const std::vector<std::string>& inputs, const prism::LoadOptions& lo,
                              std::uint64_t budget, prism::Capture& capture) {
    prism::FileStore store(inputs, lo);
    prism::StagedStats stats;
    prism::Report report = prism::analyzeStore(store, store.topology(), store.hasTopology(), {}, &stats, budget);
    capture.source = store.files().source;
    capture.topologyPath = store.files().topologyPath;
    for (const prism::FlowFile& f : store.files().files) {
        capture.flowsPaths.push_back(f.path);
        capture.flowsKinds.push_back(f.info.what + (f.info.gzip ? " (gzip)" : ""));
    }
    if (!capture.flowsPaths.empty()) capture.flowsPath = capture.flowsPaths.front();
    capture.flowsKinds.front() += "; in stages within " + prism::formatBytes(budget) + ": " +
                                  std::to_string(store.passes()) + " passes over the files, " +
                                  std::to_string(stats.fetches) + " of them fetching jobs, largest job " +
                                  prism::formatCount(stats.largestJob) + " records";
    return report;
}

// analyze --csv-ranks: per job, rank and step, the timeline's statistics.
void writeRankCsv(const prism::Analysis& analysis, const std::string& path) {
    std::ofstream out(path + ".tmp", std::ios::trunc);
    out << "job,step,rank,ip,stage,dp_group,compute_ms,wait_ms,pp_send_ms,pp_recv_ms,dp_sync_ms,dp_start_lag_ms,dp_wait_ms,"
           "forward_compute_ms,backward_compute_ms,warmup_compute_ms,forward_samples,backward_samples,warmup_samples,"
           "pp_sends,pp_recvs\n";
    auto ms = [](std::int64_t ns) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3f", double(ns) / 1e6);
        return std::string(buf);
    };
    for (std::size_t j = 0; j < analysis.jobs.size(); ++j) {
        const prism::JobTimeline& tl = analysis.jobs[j].timeline;
        for (std::size_t k = 0; k < tl.steps.size(); ++k)
            for (const prism::RankTimeline& r : tl.ranks) {
                const prism::RankStepStats& s = r.stepStats[k];
                out << analysis.report.jobs[j].id << ',' << tl.steps[k].index << ',' << r.label << ',' << r.ip << ','
                    << r.stage << ',' << r.dpGroup << ',' << ms(s.computeNs) << ',' << ms(s.waitNs) << ','
                    << ms(s.ppSendNs) << ',' << ms(s.ppRecvNs) << ',' << ms(s.dpSyncNs) << ',' << ms(s.dpStartLagNs) << ',' << ms(s.dpWaitNs)
                    << ',' << ms(s.forwardComputeNs) << ',' << ms(s.backwardComputeNs) << ',' << ms(s.warmupComputeNs)
                    << ',' << s.forwardSamples << ',' << s.backwardSamples << ',' << s.warmupSamples << ','
                    << s.ppSends << ',' << s.ppRecvs << '\n';
            }
    }
    out.close();
    if (!out || std::rename((path + ".tmp").c_str(), path.c_str()) != 0) throw std::runtime_error(path + ": cannot write");
}

struct Analyze {
    Source source;
    std::string json, csvSteps, csvRanks, memory;

    void define(CLI::App* cmd) {
        addSourceOptions(cmd, source, "CAPTURE");
        cmd->add_option("--json", json, "write the report as JSON to OUT")->option_text("OUT");
        cmd->add_option("--csv-steps", csvSteps,
                        "write one row per job and step (job,index,start_ns,end_ns,duration_ns,slow) to OUT")
            ->option_text("OUT");
        cmd->add_option("--csv-ranks", csvRanks,
                        "write one row per job, rank and step: where its time went (compute, waiting, PP,\n"
                        "DP sync, in ms) and what diagnosis compares (compute before PP sends, DP start lag);\n"
                        "the capture is analysed whole, with its timelines")
            ->option_text("OUT");
        cmd->add_option("--memory", memory,
                        "analyse in stages within SIZE (8G, 512M): the capture is streamed, never held whole,\n"
                        "one job at a time (default: in stages only when the capture would not fit in memory;\n"
                        "a ClickHouse table always, within 80% of the memory available)")
            ->option_text("SIZE");
    }

    int run(const CLI::App& cmd) const {
        const std::vector<std::string>& inputs = source.inputs;
        if (inputs.size() > 1 && looksLikeSession(inputs.front())) throw UsageError{"a session file is analysed alone"};
        const prism::LoadOptions lo = loadOptions(source, cmd);
        std::uint64_t budget = 0; // --memory
        if (cmd.count("--memory") && !(budget = prism::parseSize(memory)))
            throw UsageError{"--memory expects a size such as 8G or 512M, found \"" + memory + "\""};
        prism::Capture capture;
        prism::Report report;
        if (looksLikeSession(inputs.front())) {
            prism::OpenOptions oo;
            oo.timelines = false; // the report is all analyze prints
            oo.flows = false;
            prism::Session session = prism::openSession(inputs.front(), oo);
            capture = std::move(session.capture);
            report = std::move(session.analysis.report);
            if (!source.quiet) {
                std::cout << "Session    " << inputs.front() << "  (saved " << session.meta.created << " by LLMPrism "
                          << session.meta.toolVersion << ", " << counted(session.notes.size(), "note") << ")\n";
                for (const prism::Note& n : session.notes) printNote(n);
            }
        } else if (prism::ClickHouseUrl::looksLikeUrl(inputs.front())) {
            if (inputs.size() > 1) throw UsageError{"a ClickHouse table is analysed alone"};
            report = analyzeClickHouse(inputs.front(), lo, budget ? budget : prism::availableMemory() / 10 * 8, capture);
        } else {
            std::optional<prism::CaptureFiles> found; // (looked for once, read whole below where they fit)
            if (!budget) {
                // Would the whole capture fit? If not, in stages within what there is, rather than be killed.
                found = prism::findCaptureFiles(inputs, lo);
                const std::uint64_t avail = prism::availableMemory(), need = prism::wholeLoadEstimate(*found);
                if (avail && need > avail / 10 * 8) {
                    budget = avail / 10 * 8;
                    if (!source.quiet)
                        std::cout << "Memory     the capture needs about " << prism::formatBytes(need)
                                  << " to analyse whole, more than the " << prism::formatBytes(avail)
                                  << " available: analysed in stages (--memory)\n";
                }
            }
            if (budget && cmd.count("--csv-ranks"))
                throw UsageError{"--csv-ranks needs the capture whole, not in stages (--memory)"};
            if (budget) {
                report = analyzeInStages(inputs, lo, budget, capture);
            } else if (cmd.count("--csv-ranks")) {
                prism::LoadOptions whole = lo;
                whole.maxRecords = prism::maxRecordsInMemory();
                capture = prism::loadCapture(std::move(*found), whole);
                prism::Analysis analysis = prism::runAnalysis(capture);
                writeRankCsv(analysis, csvRanks);
                report = std::move(analysis.report);
            } else {
                prism::LoadOptions whole = lo; // a .gz that inflates far beyond its size stops before memory does
                whole.maxRecords = prism::maxRecordsInMemory();
                capture = prism::loadCapture(std::move(*found), whole);
                report = prism::analyzeCaptureReleasing(capture); // only the report is wanted of it
            }
        }
        const bool windowed = cmd.count("--from") || cmd.count("--to");
        if (!source.quiet) printSummary(report, capture, windowed);
        if (cmd.count("--json")) writeJsonOutput(prism::reportToJson(report), json);
        if (cmd.count("--csv-steps")) {
            std::ofstream out(csvSteps + ".tmp", std::ios::trunc);
            out << "job,index,start_ns,end_ns,duration_ns,slow\n";
            for (const auto& j : report.jobs)
                for (const auto& s : j.steps)
                    out << j.id << ',' << s.index << ',' << s.startNs << ',' << s.endNs << ',' << s.durationNs() << ','
                        << (s.slow ? 1 : 0) << '\n';
            out.close();
            if (!out || std::rename((csvSteps + ".tmp").c_str(), csvSteps.c_str()) != 0)
                throw std::runtime_error(csvSteps + ": cannot write");
        }
        // A window with nothing in it is a mistake to report, not an empty result (the report is still written).
        if (windowed && report.capture && report.capture->records == 0) {
            std::cerr << "error: no records between --from and --to in " << capture.source << '\n';
            return kExitInput;
        }
        return kExitOk;
    }
};

struct Import {
    Source source;
    std::string out;

    void define(CLI::App* cmd) {
        addSourceOptions(cmd, source, "CAPTURE");
        cmd->add_option("--out", out, "the session file to write")->option_text("SESSION.prism")->required();
    }

    int run(const CLI::App& cmd) const {
        const std::vector<std::string>& inputs = source.inputs;
        if (inputs.size() > 1 && looksLikeSession(inputs.front())) throw UsageError{"a session file is imported alone"};
        const prism::LoadOptions lo = loadOptions(source, cmd);
        prism::Session session;
        prism::SaveOptions so;
        if (looksLikeSession(inputs.front())) {
            session = prism::openSession(inputs.front());
            so.flowsChecksum = session.meta.flows; // the source files as they were when first imported
            so.topologyChecksum = session.meta.topology;
        } else {
            session.capture = prism::loadCapture(inputs, lo);
            // The checksums read the source files again: overlap that with the analysis.
            const prism::Capture& c = session.capture;
            auto hash = [](const std::string& path) {
                return path.empty() || prism::ClickHouseUrl::looksLikeUrl(path) ? prism::FileChecksum{}
                                                                                : prism::sha256File(path);
            };
            auto flowsSum = std::async(std::launch::async, hash, c.flowsPath);
            session.analysis = prism::runAnalysis(c);
            so.topologyChecksum = hash(c.topologyPath);
            so.flowsChecksum = flowsSum.get();
        }
        if (!source.quiet) printSummary(session.analysis.report, session.capture);
        makeParentFolder(out);
        prism::saveSession(out, session.capture, session.analysis, session.notes, so);
        if (!source.quiet) {
            std::error_code ec;
            std::cout << "wrote " << out << ": " << prism::formatCount(session.capture.flows.size())
                      << " flow records, " << session.analysis.report.jobs.size() << " jobs, "
                      << prism::formatBytes(std::filesystem::file_size(out, ec)) << '\n';
        }
        return kExitOk;
    }
};

struct Convert {
    Source source;
    std::string out;

    void define(CLI::App* cmd) {
        addSourceOptions(cmd, source, "SOURCE");
        cmd->add_option("--out", out, "the flows.csv or flows.csv.gz to write (replaced atomically)")
            ->option_text("FILE")
            ->required();
        cmd->get_option("--topology")->description("check the flows against this topology (warnings only)");
    }

    int run(const CLI::App& cmd) const {
        const prism::LoadOptions lo = loadOptions(source, cmd);
        prism::Capture capture = captureOf(source.inputs, lo, "SOURCE");
        std::vector<std::string> comment{"converted by llmprism-cli " LLMPRISM_VERSION " convert from:"};
        if (looksLikeSession(source.inputs.front()))
            comment.push_back("  " + source.inputs.front() + " (session; its capture was " + capture.source + ")");
        else
            for (std::size_t k = 0; k < capture.flowsPaths.size(); ++k)
                comment.push_back("  " + capture.flowsPaths[k] + " (" +
                                  (k < capture.flowsKinds.size() ? capture.flowsKinds[k] : std::string("flows")) + ")");
        comment.push_back(prism::formatCount(capture.flows.size()) + " records, " +
                          prism::formatCount(capture.diagnostics.skippedRows) + " input rows skipped");
        makeParentFolder(out);
        prism::writeFlowsCsv(capture.flows, out, comment);
        if (!source.quiet) {
            for (const std::string& line : comment) std::cout << line << '\n';
            prism::CaptureSummary s = prism::summarize(capture);
            for (const auto& m : s.messages) std::cerr << m << '\n'; // the input's warnings: diagnostics
            std::cout << "wrote " << out << '\n';
        }
        return kExitOk;
    }
};

struct ExportClickHouse {
    Source source;
    std::string url;
    bool append = false;

    void define(CLI::App* cmd) {
        addSourceOptions(cmd, source, "CAPTURE");
        cmd->add_option("--url", url, "the table: clickhouse://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE.TABLE")
            ->option_text("URL")
            ->required();
        cmd->add_flag("--append", append, "add to a table that already holds records (default: refuse)");
        cmd->get_option("--topology")->description("check the flows against this topology (warnings only)");
    }

    int run(const CLI::App& cmd) const {
        const prism::ClickHouseUrl target = prism::ClickHouseUrl::parse(url); // a bad URL before a long read
        const prism::LoadOptions lo = loadOptions(source, cmd);
        prism::Capture capture = captureOf(source.inputs, lo, "CAPTURE");
        const std::uint64_t n = prism::exportToClickHouse(capture.flows, target, append);
        if (!source.quiet) {
            prism::CaptureSummary s = prism::summarize(capture);
            for (const auto& m : s.messages) std::cout << "  " << m << '\n';
            std::cout << "wrote " << prism::formatCount(n) << " flow records to " << target.display() << '\n';
        }
        return kExitOk;
    }
};

struct Evaluate {
    std::string report, truth, json;
    bool expectPerfect = false;

    void define(CLI::App* cmd) {
        cmd->add_option("--report", report, "the report (llmprism-cli analyze --json)")
            ->option_text("R.json")
            ->required();
        cmd->add_option("--truth", truth, "the ground truth (llmprism-cli simulate writes truth.json)")
            ->option_text("T.json")
            ->required();
        cmd->add_option("--json", json, "also write every figure as JSON to OUT")->option_text("OUT");
        cmd->add_flag("--expect-perfect", expectPerfect,
                      "exit with code 3 unless jobs, shapes, groups, chains and steps are all exact");
    }

    int run(const CLI::App& cmd) const {
        const prism::Report r = prism::readReportFile(report); // the report's errors first
        prism::EvaluationResult result = prism::evaluate(r, prism::readReportFile(truth));
        std::cout << result.toText();
        if (cmd.count("--json")) writeJsonOutput(result.toJson(), json);
        return expectPerfect && !result.perfect() ? kExitImperfect : kExitOk;
    }
};

// `topology`: our topology.json from what a cluster has (topology.json files, hostfiles with addresses).
struct TopologyCommand {
    std::vector<std::string> sources;
    std::string out;

    void define(CLI::App* cmd) {
        cmd->add_option("SOURCE", sources, "a topology.json or a hostfile ip,host[,switch[,gpus]]; several are merged")
            ->required();
        cmd->add_option("--out", out, "the topology.json to write (its folder is made)")
            ->option_text("topology.json")
            ->required();
    }

    int run(const CLI::App&) const {
        const prism::Topology t = prism::readTopologyFiles(sources); // every source's errors before a write
        makeParentFolder(out);
        prism::writeTopologyJson(t, out);
        std::cout << "wrote " << out << ": " << counted(t.hosts.size(), "host") << ", " << counted(t.nics.size(), "NIC")
                  << ", " << counted(std::uint64_t(t.gpuCount()), "GPU") << ", " << prism::formatCount(t.switches.size())
                  << (t.switches.size() == 1 ? " switch" : " switches")
                  << " (from " << counted(sources.size(), "source") << ")\n";
        return kExitOk;
    }
};

// One side of `compare`: a capture analysed with its per-rank timelines, or a session as it was saved.
struct Run {
    prism::Capture capture;
    prism::Analysis analysis;
};

Run loadRun(const std::string& path, const prism::LoadOptions& lo) {
    Run run;
    if (looksLikeSession(path)) {
        prism::Session session = prism::openSession(path);
        run.capture = std::move(session.capture);
        run.analysis = std::move(session.analysis);
    } else {
        prism::LoadOptions whole = lo;
        whole.maxRecords = prism::maxRecordsInMemory();
        run.capture = prism::loadCapture({path}, whole);
        run.analysis = prism::runAnalysis(run.capture);
    }
    return run;
}

struct Compare {
    std::string a, b, jobA, jobB, json, tz, topology;
    bool strict = false, quiet = false;

    void define(CLI::App* cmd) {
        cmd->add_option("A", a)->required(); // described in the command's text
        cmd->add_option("B", b)->required();
        cmd->add_option("--job-a", jobA, "compare this job of A (an id of its report: job-0, ...)")->option_text("ID");
        cmd->add_option("--job-b", jobB, "with this job of B (default: the jobs are matched by GPUs, else shape)")
            ->option_text("ID");
        cmd->add_option("--json", json, "write the comparison as JSON to OUT (llmprism-compare v1)")
            ->option_text("OUT");
        cmd->add_option("--tz", tz, "zone of local-time stamps in collector CSVs: UTC (default), +02:00, Europe/Berlin")
            ->option_text("ZONE");
        cmd->add_option("--topology", topology,
                        "the topology of A and B where each is flow data (default: topology.json next to it)")
            ->option_text("T.json");
        cmd->add_flag("--strict", strict, "stop at the first bad input row (default: skip bad rows)");
        cmd->add_flag("--quiet", quiet, "print nothing but errors");
    }

    int run(const CLI::App& cmd) const {
        prism::LoadOptions lo;
        lo.strict = strict;
        lo.timeZone = tz;
        lo.topologyPath = topology;
        try {
            prism::TimeZone::parse(lo.timeZone);
        } catch (const std::invalid_argument& e) {
            throw UsageError{std::string("--tz: ") + e.what()};
        }
        const Run runA = loadRun(a, lo), runB = loadRun(b, lo);
        const prism::RunData da{a, &runA.capture, &runA.analysis}, db{b, &runB.capture, &runB.analysis};
        // A job named on one side only: its partner is the other side's job matched to it, else its only job.
        auto pick = [](const std::string& option, const std::string& id, const std::string& path, const prism::Report& r) {
            const int j = prism::jobIndexById(r, id);
            if (j >= 0) return j;
            std::string ids;
            for (const auto& job : r.jobs) ids += (ids.empty() ? "" : ", ") + job.id;
            throw UsageError{option + ": " + path + " has no job \"" + id + "\" (its jobs: " +
                             (ids.empty() ? "none" : ids) + ")"};
        };
        prism::Comparison comparison;
        if (cmd.count("--job-a") || cmd.count("--job-b")) {
            int ja = cmd.count("--job-a") ? pick("--job-a", jobA, a, runA.analysis.report) : -1;
            int jb = cmd.count("--job-b") ? pick("--job-b", jobB, b, runB.analysis.report) : -1;
            const prism::Comparison all = prism::compareRuns(da, db);
            for (const prism::JobComparison& j : all.jobs) {
                if (ja < 0 && j.jobB == jb) ja = j.jobA;
                if (jb < 0 && j.jobA == ja) jb = j.jobB;
            }
            if (ja < 0 || jb < 0)
                throw UsageError{"no job of " + (ja < 0 ? a : b) + " matches " + (ja < 0 ? "--job-b " + jobB : "--job-a " + jobA) +
                                 ": name both (--job-a and --job-b)"};
            comparison.sourceA = a;
            comparison.sourceB = b;
            comparison.jobs.push_back(prism::compareJobs(da, ja, db, jb));
        } else {
            comparison = prism::compareRuns(da, db);
        }
        if (!quiet) std::cout << prism::comparisonToText(comparison);
        if (cmd.count("--json")) writeJsonOutput(prism::comparisonToJson(comparison), json);
        return kExitOk;
    }
};

// CLI11's message for a command line it refused, in the words of our help: the unknown option or argument,
// the option without its value, the missing CAPTURE.
std::string usageMessage(const CLI::ParseError& e, const CLI::App& cmd) {
    const std::string what = e.what();
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.ends_with(" missing"))
        return "option " + what.substr(0, what.find(':')) + " needs a value";
    if (dynamic_cast<const CLI::RequiredError*>(&e))
        for (const CLI::Option* opt : cmd.get_options())
            if (opt->get_positional() && opt->get_required() && !opt->count()) return "expected a " + opt->get_name();
    return what;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app("Black-box performance diagnosis of LLM training jobs from network flow captures.", "llmprism-cli");
    app.formatter(std::make_shared<Help>());
    app.set_help_flag("-h,--help", "print this help and exit");
    app.set_version_flag("--version", "llmprism-cli " LLMPRISM_VERSION, "print the version and exit");
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast); // the last of a repeated option
    app.allow_extras();                                                           // refused below, in our words
    app.require_subcommand(0, 1); // a later word named like a command is an argument of the first
    app.footer("Run `llmprism-cli COMMAND --help` for the options of a command.\n\n"
               "Exit codes: 0 success, 1 bad or missing input (the message names file, line and what was expected),\n"
               "            2 bad command line, 3 `evaluate --expect-perfect` found a difference.");

    Simulate simulate;
    Analyze analyze;
    Evaluate evaluate;
    Import import;
    Convert convert;
    ExportClickHouse exportClickHouse;
    Compare compare;
    TopologyCommand topology;
    simulate.define(app.add_subcommand(
        "simulate", "generate a capture (flows.csv, topology.json) and its ground truth (truth.json)\n\n"
                    "Writes DIR/flows.csv (DIR/flows.csv.gz with --gzip), DIR/topology.json and DIR/truth.json.\n"
                    "The same preset, seed and options always give the same files."));
    analyze.define(app.add_subcommand(
        "analyze",
        "read a capture, print its summary and write the report\n\n"
        "CAPTURE is a folder holding topology.json and flow data, or flow data files, or a session file (.prism, see\n"
        "`import`): its stored report is used as is, without re-analysis. Flow data is recognised by content, not\n"
        "name: flows.csv[.gz], nfdump -o csv (every version) or -o csv-fast, pmacct print-plugin CSV, pcap / pcapng,\n"
        "IPFIX files. Several files (or a folder holding several) are merged into one capture.\n"
        "CAPTURE may be a ClickHouse table, clickhouse://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE.TABLE (with\n"
        "--topology): analysed where it lies, the server grouping the records for recognition and\n"
        "handing over one job's records at a time (docs/ENGINE.md \"Staged analysis\").\n"
        "Prints a summary of the capture and the jobs found; writes the report (llmprism-report v1)."));
    evaluate.define(app.add_subcommand(
        "evaluate",
        "score a report against a truth file\n\n"
        "Scores a report against ground truth: job recognition precision/recall, exact TP/PP/DP, DP-group and\n"
        "PP-pair precision/recall, PP chain order, step count and step-duration error, finding precision/recall.\n"
        "See docs/EVALUATION.md for the definition of every figure."));
    import.define(app.add_subcommand(
        "import",
        "analyse a capture once and store it with the analysis in a session file (.prism)\n\n"
        "Reads CAPTURE (a folder holding topology.json and flow data of any kind, or flow data files: see `analyze`),\n"
        "analyses it and writes one session file: the topology, every flow record, the analysis (jobs,\n"
        "parallelism, steps, findings) and the SHA-256 of the source files. `analyze SESSION.prism` and the\n"
        "GUI reopen it without re-analysis; `sqlite3 SESSION.prism` queries it (docs/SESSION_FORMAT.md).\n"
        "The session is written atomically (an existing file is replaced only once the new one is complete);\n"
        "the capture is only read. CAPTURE may itself be a session: it is copied with its notes."));
    convert.define(app.add_subcommand(
        "convert",
        "write any flow source (nfdump / pmacct CSV, pcap, IPFIX, flows.csv) as flows.csv\n\n"
        "Writes flow data of any kind as our flows.csv (gzip when the name ends in .gz): nfdump -o csv / csv-fast,\n"
        "pmacct CSV, pcap / pcapng, IPFIX files, flows.csv, or folders holding them (recognised by content; several\n"
        "sources are merged, sorted by start). A '#' comment at the top names the sources, how each was read (time\n"
        "zone, flow timeouts) and the conversion. Columns retransmits,cnps,ecn_ce are added when the source has them\n"
        "(packet captures). A topology is only checked, never written."));
    exportClickHouse.define(app.add_subcommand(
        "export-clickhouse",
        "load flow data of any kind into a ClickHouse table\n\n"
        "Reads CAPTURE (flow data of any kind, as `analyze` does) and inserts every record into the table of --url\n"
        "over ClickHouse's HTTP interface, creating the database and the table (docs/FORMATS.md \"ClickHouse\n"
        "table\") when missing. `analyze clickhouse://HOST:PORT/DB.TABLE --topology T.json` then analyses it where\n"
        "it lies: the server groups the records for recognition and hands over one job's records at a time."));
    compare.define(app.add_subcommand(
        "compare",
        "what changed between two runs: jobs matched, steps, per-rank breakdown and links compared\n\n"
        "A and B are captures (a folder or a flow file, as `analyze` takes them) or sessions (.prism), A the\n"
        "earlier run. Jobs are matched by their GPUs (NIC sets overlapping by half or more), else by shape\n"
        "(TP, PP, DP, GPU count), else the only job left on each side; --job-a / --job-b pick a pair. Ranks\n"
        "correspond by role (PP stage, DP group, place in it). For each rank the time per step in compute, PP\n"
        "send/receive, DP sync and waiting, and for each NIC and NIC pair the time its transfers take per byte,\n"
        "are compared; a change counts only when it stands out of the step-to-step spread of both runs.\n"
        "Prints a summary; --json writes the differences, largest first (llmprism-compare v1,\n"
        "docs/FORMATS.md)."));
    topology.define(app.add_subcommand(
        "topology",
        "write our topology.json from what a cluster has\n\n"
        "Reads each SOURCE — a topology.json, or a hostfile with addresses (CSV lines ip,host[,switch[,gpus]],\n"
        "docs/FORMATS.md \"Topology from a hostfile\"), told apart by content — and writes them as one topology.json\n"
        "(atomically) for the user to check and keep; a NIC or host listed in two sources is an error naming both.\n"
        "Every command's --topology takes these sources as they are; this writes them once, in the form others read."));
    for (CLI::App* cmd : app.get_subcommands({})) {
        cmd->group("Commands");
        cmd->footer("");
        cmd->set_help_flag("--help", "print this help and exit");
    }

    // The command first: the main help, the version, or one of the commands.
    const std::string name = argc < 2 ? "" : argv[1];
    const std::vector<CLI::App*> named = app.get_subcommands([&](CLI::App* c) { return c->get_name() == name; });
    if (argc < 2) {
        std::cerr << app.help();
        return kExitUsage;
    }
    if (name == "help") {
        std::cout << app.help();
        return kExitOk;
    }
    if (named.empty() && name != "--help" && name != "-h" && name != "--version") {
        std::cerr << "llmprism-cli: unknown command \"" << name << "\"\n\n" << app.help();
        return kExitUsage;
    }
    CLI::App* cmd = named.empty() ? &app : named.front();
    // A usage error is its one line, the command's synopsis and where the rest is: not the whole help.
    auto usageError = [&](const std::string& message) {
        const std::string full = cmd == &app ? "llmprism-cli" : "llmprism-cli " + cmd->get_name();
        std::cerr << "llmprism-cli: " << message << "\n\n"
                  << Help().make_usage(cmd, full) << "Run '" << full << " --help' for every option.\n";
        return kExitUsage;
    };
    try {
        app.parse(argc, argv);
        for (const std::string& extra : cmd->remaining())
            if (extra != "--") // the end of the options, as CLI11 reads it
                return usageError((extra.size() > 1 && extra[0] == '-' ? "unknown option " : "unexpected argument ") +
                                  extra);
        if (cmd->get_name() == "simulate") return simulate.run(*cmd);
        if (cmd->get_name() == "analyze") return analyze.run(*cmd);
        if (cmd->get_name() == "evaluate") return evaluate.run(*cmd);
        if (cmd->get_name() == "import") return import.run(*cmd);
        if (cmd->get_name() == "convert") return convert.run(*cmd);
        if (cmd->get_name() == "export-clickhouse") return exportClickHouse.run(*cmd);
        if (cmd->get_name() == "compare") return compare.run(*cmd);
        if (cmd->get_name() == "topology") return topology.run(*cmd);
    } catch (const CLI::CallForHelp&) {
        std::cout << (cmd == &app ? app.help() : cmd->help("llmprism-cli"));
        return kExitOk;
    } catch (const CLI::CallForVersion& e) {
        std::cout << e.what() << '\n';
        return kExitOk;
    } catch (const CLI::Success&) {
        return kExitOk;
    } catch (const CLI::ParseError& e) {
        return usageError(usageMessage(e, *cmd));
    } catch (const UsageError& e) {
        return usageError(e.message);
    } catch (const std::exception& e) {
        std::cerr << "llmprism-cli: error: " << e.what() << '\n';
        return kExitInput;
    }
    return kExitOk;
}
