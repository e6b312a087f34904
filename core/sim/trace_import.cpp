// simulate --from-trace: a real job's per-rank operation timings (docs/FORMATS.md "Real training traces") as the
// simulator's schedule. Phases: read the meta and the trace's events, gather the compute cells, size the
// transfers from the communication times, build the cluster and job, label what the trace itself shows slow, and
// measure what fixing each of those would save.
#include "sim/trace_import.h"

#include "io/text_input.h"
#include "model/diagnostics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace prism::sim {

namespace {

using nlohmann::json;
constexpr std::int64_t kMs = 1'000'000;
constexpr std::uint64_t kMiB = std::uint64_t(1) << 20;
// A rank or stage is labelled slow at this much more work than its peers (the engine's minRankExcess), and
// beyond four robust sigmas of the job's own spread between peers.
constexpr double kSlowExcess = 0.15;
constexpr double kSigmas = 4.0;
constexpr double kMinSavedShare = 0.01;

[[noreturn]] void fail(const std::string& path, const std::string& what, std::uint64_t line = 0) {
    throw InputError({path, line, 0, what});
}

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    const auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
}

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    const auto at = v.begin() + std::ptrdiff_t(std::min(v.size() - 1, std::size_t(q * double(v.size()))));
    std::nth_element(v.begin(), at, v.end());
    return *at;
}

// ---- the meta YAML: flat "key: value" lines ----

struct Meta {
    std::string name;
    int dp = 0, pp = 0, tp = 0, cp = 0, vpp = 0, world = 0; // 0: not given
};

Meta readMeta(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        fail(path, std::string("cannot open the trace's meta file: ") + std::strerror(errno) +
                       " (expected YAML with dp_size, pp_size, tp_size)");
    Meta m;
    const std::map<std::string, int*> sizes = {{"dp_size", &m.dp},   {"pp_size", &m.pp},   {"tp_size", &m.tp},
                                               {"dsp_size", &m.cp},  {"cp_size", &m.cp},   {"vpp_size", &m.vpp},
                                               {"world_size", &m.world}};
    std::string line;
    for (std::uint64_t n = 1; std::getline(in, line); ++n) {
        if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        const auto colon = line.find(':');
        std::string key = std::string(trimField(line.substr(0, colon == std::string::npos ? line.size() : colon)));
        if (key.empty()) continue;
        if (colon == std::string::npos) fail(path, "expected \"key: value\", found " + prism::quoted(line), n);
        const std::string value(trimField(line.substr(colon + 1)));
        if (key == "trial_name") m.name = value;
        auto it = sizes.find(key);
        if (it == sizes.end()) continue;
        int v = 0;
        try {
            std::size_t used = 0;
            v = std::stoi(value, &used);
            if (used != value.size()) v = 0;
        } catch (const std::exception&) {
            v = 0;
        }
        if (v < 1 || v > 1'000'000) fail(path, key + ": expected a positive whole number, found " + prism::quoted(value), n);
        *it->second = v;
    }
    if (in.bad()) fail(path, "read error");
    return m;
}

// ---- the trace's events ----

struct Lane {
    int pp = -1, tp = -1;
};

struct Event {
    std::string name;
    int d = 0, p = 0, step = 0, mb = -1, chunk = 0;
    double ts = 0, dur = 0; // µs
};

struct Trace {
    std::vector<Event> events;
    std::set<int> dpRanks, ppRanks, tpRanks, steps;
    std::size_t negative = 0; // events with a negative duration, taken as 0
};

json parseJson(const std::string& path) {
    std::string text;
    {
        ByteSource src(path, "a trace file (JSON)");
        std::vector<char> buf(std::size_t(1) << 20);
        while (std::size_t n = src.read(buf.data(), buf.size())) text.append(buf.data(), n);
        if (!src.streamError().empty()) fail(path, src.streamError());
    }
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        const auto [line, column] = lineColumnAt(text, e.byte == 0 ? 0 : e.byte - 1);
        std::string what = e.what();
        if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        throw InputError({path, line, column, "not valid JSON: " + what});
    } catch (const json::out_of_range& e) {
        throw InputError(jsonRangeIssue(path, text, e.what(), "not valid JSON: "));
    }
}

// The number after `key` in `text` ("DP rank [3]" -> 3 for key "DP rank"), or -1.
int numberAfter(const std::string& text, const std::string& key) {
    auto at = text.find(key);
    if (at == std::string::npos) return -1;
    at += key.size();
    while (at < text.size() && (text[at] == ' ' || text[at] == '[' || text[at] == ':')) ++at;
    int v = -1;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') v = (v < 0 ? 0 : v * 10) + (text[at++] - '0');
    return v;
}

int intArg(const json& args, const char* key, int fallback) {
    auto it = args.find(key);
    if (it == args.end() || !it->is_number()) return fallback;
    return int(std::llround(it->get<double>()));
}

Trace readTrace(const std::string& path) {
    const json root = parseJson(path);
    const json* events = &root;
    if (root.is_object()) {
        auto it = root.find("traceEvents");
        if (it == root.end()) fail(path, "top level: expected an array of trace events or {\"traceEvents\": [...]}");
        events = &*it;
    }
    if (!events->is_array()) fail(path, "traceEvents: expected an array of trace events");
    // Metadata first: DP rank per process, (PP rank, TP rank) per thread.
    std::map<long long, int> dpOf;
    std::map<std::pair<long long, long long>, Lane> laneOf;
    for (const json& e : *events) {
        if (!e.is_object() || e.value("ph", "") != "M" || !e.contains("pid")) continue;
        const std::string what = e.value("name", "");
        const json args = e.value("args", json::object());
        const std::string name = args.is_object() ? args.value("name", "") : "";
        const long long pid = e["pid"].is_number() ? e["pid"].get<long long>() : -1;
        if (what == "process_name") dpOf[pid] = numberAfter(name, "DP rank");
        if (what == "thread_name" && e.contains("tid") && e["tid"].is_number())
            laneOf[{pid, e["tid"].get<long long>()}] = {numberAfter(name, "PP rank"), numberAfter(name, "TP rank")};
    }
    Trace t;
    for (std::size_t i = 0; i < events->size(); ++i) {
        const json& e = (*events)[i];
        if (!e.is_object() || e.value("ph", "") != "X") continue;
        const std::string where = "traceEvents[" + std::to_string(i) + "]";
        auto num = [&](const char* key) {
            auto it = e.find(key);
            if (it == e.end() || !it->is_number())
                fail(path, where + ": expected a number \"" + std::string(key) + "\" (a complete event, ph X)");
            return it->get<double>();
        };
        Event ev;
        ev.name = e.value("name", "");
        const long long pid = (long long)num("pid"), tid = (long long)num("tid");
        ev.ts = num("ts");
        ev.dur = num("dur");
        auto dp = dpOf.find(pid);
        ev.d = dp != dpOf.end() && dp->second >= 0 ? dp->second : int(pid);
        auto lane = laneOf.find({pid, tid});
        if (lane == laneOf.end() || lane->second.pp < 0)
            fail(path, where + " (" + ev.name + "): its thread has no name \"PP rank p, TP rank t, ...\" (a ph M "
                                                "thread_name event)");
        ev.p = lane->second.pp;
        const json args = e.value("args", json::object());
        ev.step = intArg(args, "step", INT32_MIN);
        if (ev.step == INT32_MIN) fail(path, where + " (" + ev.name + "): expected args.step, the training step");
        ev.mb = intArg(args, "mb_id", -1);
        ev.chunk = std::max(0, intArg(args, "model_chunk", 0));
        const bool compute = ev.name == "forward-compute" || ev.name == "backward-compute";
        if (compute && ev.mb < 0) fail(path, where + " (" + ev.name + "): expected args.mb_id >= 0, the micro-batch");
        if (!std::isfinite(ev.dur) || !std::isfinite(ev.ts)) fail(path, where + ": expected finite ts and dur (microseconds)");
        if (ev.dur < 0) { // a profiler's rounding (-0.08 ms in a real trace): nothing took negative time
            ev.dur = 0;
            ++t.negative;
        }
        t.dpRanks.insert(ev.d);
        t.ppRanks.insert(ev.p);
        t.tpRanks.insert(std::max(0, lane->second.tp));
        t.steps.insert(ev.step);
        t.events.push_back(std::move(ev));
    }
    if (t.events.empty()) fail(path, "no complete events (ph X): not a per-rank operation trace");
    return t;
}

// ---- what the trace holds, in the simulator's terms ----

struct Shape {
    int dp = 1, pp = 1, tp = 1, cp = 1, chunks = 1, microBatches = 1;
    int modelParallel() const { return tp * cp; }
};

Shape shapeOf(const Trace& t, const Meta& m, const std::string& path) {
    Shape s;
    s.dp = m.dp ? m.dp : int(t.dpRanks.size());
    s.pp = m.pp ? m.pp : int(t.ppRanks.size());
    s.tp = m.tp ? m.tp : int(t.tpRanks.size());
    s.cp = m.cp ? m.cp : 1;
    int chunks = 1, mbs = 1;
    for (const Event& e : t.events)
        if (e.mb >= 0) {
            chunks = std::max(chunks, e.chunk + 1);
            mbs = std::max(mbs, e.mb + 1);
        }
    s.chunks = m.vpp ? m.vpp : chunks;
    s.microBatches = mbs;
    if (*t.dpRanks.rbegin() >= s.dp || *t.ppRanks.rbegin() >= s.pp || chunks > s.chunks)
        fail(path, "the trace has DP ranks 0.." + std::to_string(*t.dpRanks.rbegin()) + ", PP ranks 0.." +
                       std::to_string(*t.ppRanks.rbegin()) + " and " + std::to_string(chunks) +
                       " model chunks, more than the meta's dp_size " + std::to_string(s.dp) + ", pp_size " +
                       std::to_string(s.pp) + ", vpp_size " + std::to_string(s.chunks));
    if (m.world && m.world != s.dp * s.pp * s.tp * s.cp)
        fail(path, "world_size " + std::to_string(m.world) + " is not dp x pp x tp x dsp = " +
                       std::to_string(s.dp * s.pp * s.tp * s.cp));
    if (s.chunks > 1 && s.microBatches % s.pp != 0)
        fail(path, "an interleaved pipeline (vpp " + std::to_string(s.chunks) + ") needs micro-batches divisible by pp");
    return s;
}

// Every forward and backward of every (step, DP rank, stage, chunk, micro-batch): the longest of its TP ranks;
// a cell the trace lacks takes the median of its peers in other DP ranks (said in a note).
RecordedOps gatherCompute(const Trace& t, const Shape& s, const std::string& path, std::vector<std::string>& notes) {
    RecordedOps r;
    r.dp = s.dp;
    r.pp = s.pp;
    r.chunks = s.chunks;
    r.microBatches = s.microBatches;
    r.steps = int(t.steps.size());
    std::map<int, int> stepIndex;
    for (int step : t.steps) {
        stepIndex.emplace(step, int(r.stepNames.size()));
        r.stepNames.push_back(std::to_string(step));
    }
    r.computeNs.assign(r.index(r.steps, 0, 0, 0, 0, false), -1);
    r.optimizerNs.assign(std::size_t(r.steps), 0);
    std::map<std::pair<int, int>, std::int64_t> optimizer; // (step, rank) -> its optimizer ops' time
    for (const Event& e : t.events) {
        const int k = stepIndex.at(e.step);
        const auto ns = std::int64_t(std::llround(e.dur * 1000.0));
        if (e.name == "forward-compute" || e.name == "backward-compute") {
            std::int64_t& cell = r.compute(k, e.d, e.p, e.chunk, e.mb, e.name[0] == 'b');
            cell = std::max(cell, ns);
        } else if (e.name == "optimizer" || e.name == "optimizer-clip-main-grad" || e.name == "gc") {
            optimizer[{k, e.d * s.pp + e.p}] += ns;
        }
    }
    for (const auto& [key, ns] : optimizer)
        r.optimizerNs[std::size_t(key.first)] = std::max(r.optimizerNs[std::size_t(key.first)], ns);
    std::size_t missing = 0;
    for (int k = 0; k < r.steps; ++k)
        for (int p = 0; p < r.pp; ++p)
            for (int c = 0; c < r.chunks; ++c)
                for (int mb = 0; mb < r.microBatches; ++mb)
                    for (bool bwd : {false, true}) {
                        std::vector<double> have;
                        for (int d = 0; d < r.dp; ++d)
                            if (r.compute(k, d, p, c, mb, bwd) >= 0) have.push_back(double(r.compute(k, d, p, c, mb, bwd)));
                        if (have.empty())
                            fail(path, "step " + r.stepNames[std::size_t(k)] + ", stage " + std::to_string(p) +
                                           ": no " + (bwd ? "backward" : "forward") + "-compute of micro-batch " +
                                           std::to_string(mb) + (r.chunks > 1 ? " chunk " + std::to_string(c) : "") +
                                           " in any DP rank");
                        for (int d = 0; d < r.dp; ++d)
                            if (std::int64_t& cell = r.compute(k, d, p, c, mb, bwd); cell < 0) {
                                cell = std::llround(median(have));
                                ++missing;
                            }
                    }
    if (missing)
        notes.push_back(std::to_string(missing) + " forward/backward ops missing from the trace took their DP peers' "
                                                  "median time");
    std::vector<double> opt;
    for (std::int64_t v : r.optimizerNs)
        if (v > 0) opt.push_back(double(v));
    for (std::int64_t& v : r.optimizerNs)
        if (v <= 0) v = opt.empty() ? 5 * kMs : std::llround(median(opt));
    return r;
}

// Communication times (ms) the trace shows, as the time from the last member's start to each member's end (a
// collective moves data once every member is in): per stage for the DP collectives.
struct CommTimes {
    std::vector<double> reduceScatter, allGather, allReduce; // per stage, ns; 0: none
    double embedding = 0, p2p = 0;
};

CommTimes commTimes(const Trace& t, const Shape& s) {
    CommTimes c;
    c.reduceScatter.assign(std::size_t(s.pp), 0);
    c.allGather.assign(std::size_t(s.pp), 0);
    c.allReduce.assign(std::size_t(s.pp), 0);
    // (name, step, group) -> members' (start, end) in µs
    std::map<std::tuple<std::string, int, int>, std::vector<std::pair<double, double>>> groups;
    std::vector<double> p2p;
    for (const Event& e : t.events) {
        if (e.name.find("-send") != std::string::npos || e.name.find("-recv") != std::string::npos)
            p2p.push_back(e.dur * 1000.0);
        else if (e.name == "grads-reduce-scatter" || e.name == "params-all-gather" ||
                 e.name == "separate-grads-all-reduce" || e.name == "grads-all-reduce")
            groups[{e.name, e.step, e.p}].push_back({e.ts, e.ts + e.dur});
        else if (e.name == "embedding-grads-all-reduce")
            groups[{e.name, e.step, -1 - e.d}].push_back({e.ts, e.ts + e.dur});
    }
    std::map<std::pair<std::string, int>, std::vector<double>> transfer; // (name, stage or -1) -> ns
    for (const auto& [key, members] : groups) {
        double lastIn = 0;
        for (const auto& m : members) lastIn = std::max(lastIn, m.first);
        std::vector<double> each;
        for (const auto& m : members) each.push_back(std::max(0.0, m.second - lastIn) * 1000.0);
        const int stage = std::get<2>(key) >= 0 ? std::get<2>(key) : -1;
        transfer[{std::get<0>(key), stage}].push_back(median(each));
    }
    for (int p = 0; p < s.pp; ++p) {
        c.reduceScatter[std::size_t(p)] = median(transfer[{"grads-reduce-scatter", p}]);
        c.allGather[std::size_t(p)] = median(transfer[{"params-all-gather", p}]);
        auto& ar = transfer[{"separate-grads-all-reduce", p}];
        auto& ar2 = transfer[{"grads-all-reduce", p}];
        ar.insert(ar.end(), ar2.begin(), ar2.end());
        c.allReduce[std::size_t(p)] = median(ar);
    }
    c.embedding = median(transfer[{"embedding-grads-all-reduce", -1}]);
    c.p2p = percentile(p2p, 0.1); // the quickest tenth: the transfer, not the wait for the peer
    return c;
}

// ---- the simulated job ----

JobSpec jobOf(const RecordedOps& r, const Shape& s, const CommTimes& comm, double bytesPerNs, const Meta& meta,
              int gpusPerHost) {
    JobSpec j;
    j.name = meta.name.empty() ? "job-a" : "job-" + meta.name;
    j.tp = s.modelParallel();
    j.pp = s.pp;
    j.dp = s.dp;
    for (int h = 0; h < s.dp * s.pp * s.modelParallel() / gpusPerHost; ++h) j.hosts.push_back(h);
    j.microBatches = s.microBatches;
    j.steps = r.steps;
    j.virtualStages = s.chunks;
    j.startOffsetNs = 5 * kMs;
    j.computeJitter = 0; // the recorded times vary as they did
    std::vector<double> fwd, bwd, opt;
    for (int k = 0; k < r.steps; ++k) {
        opt.push_back(double(r.optimizerNs[std::size_t(k)]));
        for (int d = 0; d < r.dp; ++d)
            for (int p = 0; p < r.pp; ++p) {
                fwd.push_back(double(r.compute(k, d, p, 0, 0, false)));
                bwd.push_back(double(r.compute(k, d, p, 0, 0, true)));
            }
    }
    j.forwardNs = std::max<std::int64_t>(1, std::llround(median(fwd)));
    j.backwardRatio = std::max(0.1, median(bwd) / double(j.forwardNs));
    j.optimizerNs = std::llround(median(opt));
    auto bytes = [&](double ns, double share, std::uint64_t least) {
        return std::max(least, std::uint64_t(std::llround(ns * bytesPerNs * share)));
    };
    // Activations are split over the TP ranks; each rank's share takes the p2p time.
    j.activationBytes = bytes(comm.p2p > 0 ? comm.p2p : 1e6, s.modelParallel(), kMiB / 4 * std::uint64_t(j.tp));
    const bool sharded = std::any_of(comm.reduceScatter.begin(), comm.reduceScatter.end(), [](double v) { return v > 0; });
    j.distributedOptimizer = sharded && s.dp > 1;
    if (s.dp > 1) {
        // A ring reduce-scatter moves (dp - 1) / dp of the gradients through each member; an all-reduce twice that.
        const double perMember = double(s.dp) / double(s.dp - 1);
        for (int p = 0; p < s.pp; ++p) {
            const double ns = sharded ? comm.reduceScatter[std::size_t(p)] : comm.allReduce[std::size_t(p)] / 2.0;
            j.stageGradientBytes.push_back(bytes(ns > 0 ? ns : 1e6, perMember, kMiB));
        }
        j.gradientBytes = j.stageGradientBytes.front();
    }
    j.tiedEmbedding = s.pp > 1 && comm.embedding > 0;
    if (j.tiedEmbedding) j.embeddingBytes = bytes(comm.embedding, 1.0, kMiB);
    return j;
}

// ---- what the trace shows slow ----

// Work of every (step, d, p) against its peers': the other DP ranks of the stage in the step (their median, or
// with two the faster), or with one DP rank its own median over the steps.
std::vector<double> workRatios(const RecordedOps& r) {
    std::vector<double> ratio(std::size_t(r.steps) * r.dp * r.pp, 1.0);
    for (int p = 0; p < r.pp; ++p)
        for (int k = 0; k < r.steps; ++k)
            for (int d = 0; d < r.dp; ++d) {
                std::vector<double> peers;
                if (r.dp == 1)
                    for (int kk = 0; kk < r.steps; ++kk) peers.push_back(double(r.work(kk, d, p)));
                else
                    for (int dd = 0; dd < r.dp; ++dd)
                        if (dd != d) peers.push_back(double(r.work(k, dd, p)));
                const double ref = r.dp == 2 ? *std::min_element(peers.begin(), peers.end()) : median(peers);
                ratio[(std::size_t(k) * r.dp + d) * r.pp + p] = ref > 0 ? double(r.work(k, d, p)) / ref : 1.0;
            }
    return ratio;
}

// A stage whose work per step is kSlowExcess over the other stages' (median over DP ranks and steps).
void labelSlowStages(const RecordedOps& r, int job, std::vector<AnomalySpec>& out) {
    if (r.pp < 2) return;
    std::vector<double> stage(std::size_t(r.pp));
    for (int p = 0; p < r.pp; ++p) {
        std::vector<double> w;
        for (int k = 0; k < r.steps; ++k)
            for (int d = 0; d < r.dp; ++d) w.push_back(double(r.work(k, d, p)));
        stage[std::size_t(p)] = median(w);
    }
    for (int p = 0; p < r.pp; ++p) {
        std::vector<double> others;
        for (int q = 0; q < r.pp; ++q)
            if (q != p) others.push_back(stage[std::size_t(q)]);
        const double ratio = stage[std::size_t(p)] / median(others);
        if (ratio < 1.0 + kSlowExcess) continue;
        AnomalySpec a;
        a.kind = "slow_stage";
        a.job = job;
        a.stage = p;
        a.firstStep = 0;
        a.lastStep = r.steps - 1;
        a.factor = ratio;
        a.recorded = true;
        out.push_back(a);
    }
}

// (d, p) in the steps where its work stands out from its peers' by kSlowExcess and kSigmas of the job's own
// spread (robust: the median and 1.4826 MAD of every ratio), flagged steps at most one apart joined into episodes,
// optional within a quarter of the bar's excess; measureSavings drops those whose fix would save less than
// kMinSavedShare of a step.
void labelSlowRanks(const RecordedOps& r, const Shape& s, const std::vector<AnomalySpec>& stages, int job,
                    int gpusPerHost, std::vector<AnomalySpec>& out) {
    std::vector<double> ratio = workRatios(r);
    const double mid = median(ratio);
    std::vector<double> dev;
    for (double x : ratio) dev.push_back(std::abs(x - mid));
    const double sigma = 1.4826 * median(dev);
    const double bar = std::max(1.0 + kSlowExcess, mid + kSigmas * sigma);
    for (int p = 0; p < r.pp; ++p)
        for (int d = 0; d < r.dp; ++d) {
            // A rank of a slow stage with one DP rank is that stage.
            if (r.dp == 1 && std::any_of(stages.begin(), stages.end(), [&](const AnomalySpec& a) { return a.stage == p; }))
                continue;
            int first = -1, last = -2;
            std::vector<double> in;
            auto close = [&] {
                if (first < 0) return;
                AnomalySpec a;
                a.kind = "slow_rank";
                a.job = job;
                const int rank = s.modelParallel() * (d + r.dp * p);
                a.host = rank / gpusPerHost;
                a.gpu = rank % gpusPerHost;
                a.firstStep = first;
                a.lastStep = last;
                a.factor = median(in);
                a.recorded = true;
                // Near the bar (within a quarter of its excess, as the simulator's drawn slowdowns): the engine
                // measures the work through the network, a few % off, and may fall either side.
                a.optional = a.factor - 1.0 < 1.25 * (bar - 1.0);
                out.push_back(a);
                first = -1;
                in.clear();
            };
            for (int k = 0; k < r.steps; ++k) {
                const double x = ratio[(std::size_t(k) * r.dp + d) * r.pp + p];
                if (x < bar) continue;
                if (first >= 0 && k > last + 2) close();
                if (first < 0) first = k;
                last = k;
                in.push_back(x);
            }
            close();
        }
}

// The same job with the anomaly's work at its peers' pace: a slow rank's cells scaled to its peers' work in each
// step of the episode, a slow stage's cells by its ratio to the other stages.
RecordedOps withoutAnomaly(const RecordedOps& r, const AnomalySpec& a, const Shape& s, int gpusPerHost) {
    RecordedOps fixed = r;
    const std::vector<double> ratio = workRatios(r);
    for (int k = a.firstStep; k <= a.lastStep; ++k)
        for (int d = 0; d < r.dp; ++d)
            for (int p = 0; p < r.pp; ++p) {
                double scale = 1.0;
                if (a.kind == "slow_stage" && p == a.stage) scale = 1.0 / a.factor;
                const int rank = a.host * gpusPerHost + a.gpu;
                if (a.kind == "slow_rank" && rank == s.modelParallel() * (d + r.dp * p))
                    scale = 1.0 / std::max(1.0, ratio[(std::size_t(k) * r.dp + d) * r.pp + p]);
                if (scale == 1.0) continue;
                for (int c = 0; c < r.chunks; ++c)
                    for (int mb = 0; mb < r.microBatches; ++mb)
                        for (bool bwd : {false, true}) {
                            std::int64_t& cell = fixed.compute(k, d, p, c, mb, bwd);
                            cell = std::llround(double(cell) * scale);
                        }
            }
    return fixed;
}

// Step durations of the config's job 0, timed only: no exporter splits, no noise (the times do not depend on them).
std::vector<double> stepDurations(SimConfig c) {
    c.activeTimeoutNs = std::int64_t(1) << 50;
    c.lossRate = 0;
    c.storageRatePerHost = c.managementRatePerHost = c.ipv6Rate = 0;
    const SimResult res = simulate(c);
    std::vector<double> out;
    for (const StepInfo& s : res.truth.jobs.front().steps) out.push_back(double(s.durationNs()));
    return out;
}

// What fixing each labelled anomaly would save: per step of it (ms) and as a share of the job's time.
void measureSavings(SimConfig& c, const RecordedOps& r, const Shape& s, int gpusPerHost) {
    const std::vector<double> base = stepDurations(c);
    double total = 0;
    for (std::size_t k = 1; k < base.size(); ++k) total += base[k]; // step 0 starts at the first flow: partial
    for (AnomalySpec& a : c.anomalies) {
        SimConfig whatIf = c;
        whatIf.jobs[0].recorded = std::make_shared<RecordedOps>(withoutAnomaly(r, a, s, gpusPerHost));
        const std::vector<double> fixed = stepDurations(whatIf);
        double saved = 0;
        int steps = 0;
        for (int k = std::max(1, a.firstStep); k <= a.lastStep && k < int(fixed.size()); ++k, ++steps)
            saved += base[std::size_t(k)] - fixed[std::size_t(k)];
        a.savesMsPerStep = steps ? std::max(0.0, saved / steps / 1e6) : 0.0;
        a.savesShare = total > 0 ? std::max(0.0, saved / total) : 0.0;
    }
    // A rank whose fix saves less than a hundredth of a step (its peers nearly as slow that step) does not make the
    // job slow: not an anomaly (the engine's DiagnosisParams::minSavedShare).
    std::vector<double> sorted(base.begin() + 1, base.end());
    std::sort(sorted.begin(), sorted.end());
    const double medianStep = sorted.empty() ? 0 : sorted[sorted.size() / 2];
    std::erase_if(c.anomalies, [&](const AnomalySpec& a) {
        return a.kind == "slow_rank" && a.savesMsPerStep * 1e6 < kMinSavedShare * medianStep;
    });
}

std::string describeShape(const Shape& s) {
    std::string out = "TP " + std::to_string(s.tp) + " x PP " + std::to_string(s.pp) + " x DP " + std::to_string(s.dp);
    if (s.cp > 1) out += " x context parallel " + std::to_string(s.cp);
    if (s.chunks > 1) out += ", " + std::to_string(s.chunks) + " model chunks per stage";
    return out;
}

} // namespace

std::int64_t RecordedOps::work(int step, int d, int p) const {
    std::int64_t sum = 0;
    for (int c = 0; c < chunks; ++c)
        for (int mb = 0; mb < microBatches; ++mb) sum += compute(step, d, p, c, mb, false) + compute(step, d, p, c, mb, true);
    return sum;
}

std::string siblingMetaPath(const std::string& tracePath) {
    namespace fs = std::filesystem;
    const fs::path p(tracePath);
    std::string stem = p.filename().string();
    for (const char* ext : {".gz", ".json"})
        if (stem.size() > std::strlen(ext) && stem.compare(stem.size() - std::strlen(ext), std::string::npos, ext) == 0)
            stem.erase(stem.size() - std::strlen(ext));
    if (stem.rfind("timeline-", 0) == 0) stem.erase(0, 9);
    const fs::path meta = p.parent_path() / ("meta-" + stem + ".yaml");
    std::error_code ec;
    return fs::is_regular_file(meta, ec) ? meta.string() : std::string();
}

TraceImport importTrace(const std::string& tracePath, const TraceOptions& options) {
    TraceImport out;
    const std::string metaPath = options.metaPath.empty() ? siblingMetaPath(tracePath) : options.metaPath;
    const Meta meta = metaPath.empty() ? Meta{} : readMeta(metaPath);
    const Trace trace = readTrace(tracePath);
    const Shape shape = shapeOf(trace, meta, metaPath.empty() ? tracePath : metaPath);
    auto recorded = std::make_shared<RecordedOps>(gatherCompute(trace, shape, tracePath, out.notes));
    if (trace.negative)
        out.notes.push_back(std::to_string(trace.negative) + " events with a negative duration were taken as 0");

    SimConfig& c = out.config;
    c.seed = options.seed;
    c.preset = "from-trace " + std::filesystem::path(tracePath).filename().string();
    const int mp = shape.modelParallel();
    const int gpusPerHost = options.gpusPerHost > 0 ? options.gpusPerHost : mp;
    const int world = shape.dp * shape.pp * mp;
    if (gpusPerHost % mp != 0 || world % gpusPerHost != 0 || world / gpusPerHost < 2)
        throw std::invalid_argument("--gpus-per-host " + std::to_string(gpusPerHost) + ": a host must hold whole " +
                                    "model-parallel groups of " + std::to_string(mp) + " GPUs, and the job's " +
                                    std::to_string(world) + " GPUs at least two hosts");
    c.gpusPerHost = gpusPerHost;
    c.hosts = world / gpusPerHost;
    const double bytesPerNs = c.linkGbps / 8.0 / c.gpusPerNic;
    JobSpec job = jobOf(*recorded, shape, commTimes(trace, shape), bytesPerNs, meta, gpusPerHost);
    job.recorded = recorded;
    c.jobs = {job};
    labelSlowStages(*recorded, 0, c.anomalies);
    const std::vector<AnomalySpec> stages = c.anomalies;
    labelSlowRanks(*recorded, shape, stages, 0, gpusPerHost, c.anomalies);
    validate(c);
    if (options.whatIf) {
        measureSavings(c, *recorded, shape, gpusPerHost);
        labelOwnWork(c);
    }

    std::string steps;
    for (std::size_t k = 0; k < recorded->stepNames.size() && k < 12; ++k)
        steps += (k ? ", " : "") + recorded->stepNames[k];
    if (recorded->stepNames.size() > 12) steps += ", ...";
    out.notes.insert(out.notes.begin(),
                     "recorded job " + (meta.name.empty() ? tracePath : meta.name) + ": " + describeShape(shape) + ", " +
                         std::to_string(shape.microBatches) + " micro-batches, " + std::to_string(recorded->steps) +
                         " steps (the trace's steps " + steps + ", run back to back)");
    if (shape.cp > 1)
        out.notes.push_back("context parallel ranks share a host with their TP group: tp in the truth is tp x dsp = " +
                            std::to_string(mp));
    return out;
}

} // namespace prism::sim
