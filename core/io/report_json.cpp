#include "io/report_json.h"

#include "io/text_input.h"
#include "model/diagnostics.h"

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace prism {

using nlohmann::json;

static json findingToJson(const Finding& f, bool truth) {
    json o;
    o["kind"] = f.kind;
    if (!f.ip.empty()) o["ip"] = f.ip;
    if (!f.srcIp.empty()) o["src_ip"] = f.srcIp;
    if (!f.dstIp.empty()) o["dst_ip"] = f.dstIp;
    if (!f.switchName.empty()) o["switch"] = f.switchName;
    if (!f.group.empty()) o["group"] = f.group;
    if (f.stage >= 0) o["stage"] = f.stage;
    o["first_step"] = f.firstStep;
    o["last_step"] = f.lastStep;
    if (f.periodSteps > 0) o["period_steps"] = f.periodSteps;
    if (!f.occurrences.empty()) o["occurrences"] = f.occurrences;
    if (!truth) o["score"] = f.score;
    if (truth && f.factor > 0) o["factor"] = f.factor;
    if (f.savesMsPerStep >= 0) o["saves_ms_per_step"] = f.savesMsPerStep;
    if (f.savesShare >= 0) o["saves_share"] = f.savesShare;
    if (truth && f.optional) o["optional"] = true;
    if (!f.message.empty()) o["message"] = f.message;
    if (!f.evidence.empty()) {
        json ev = json::object();
        for (const auto& [name, value] : f.evidence) ev[name] = value;
        o["evidence"] = std::move(ev);
    }
    return o;
}

static json jobToJson(const JobInfo& job, bool truth) {
    json o;
    if (truth)
        o["name"] = job.id;
    else {
        o["id"] = job.id;
        if (!job.name.empty()) o["name"] = job.name;
    }
    if (!job.restartOf.empty()) o["restart_of"] = job.restartOf;
    o["gpus"] = job.gpus;
    if (job.gpuCount > 0) o["gpu_count"] = job.gpuCount;
    o["hosts"] = job.hosts;
    o["tp"] = job.tp;
    o["pp"] = job.pp;
    o["dp"] = job.dp;
    o["dp_groups"] = job.dpGroups;
    o["pp_chains"] = job.ppChains;
    if (job.startNs || job.endNs) {
        o["start_ns"] = job.startNs;
        o["end_ns"] = job.endNs;
    }
    json steps = json::array();
    for (const StepInfo& s : job.steps) {
        json st{{"index", s.index}, {"start_ns", s.startNs}, {"end_ns", s.endNs}};
        if (!truth) st["slow"] = s.slow;
        steps.push_back(std::move(st));
    }
    o["steps"] = std::move(steps);
    json list = json::array();
    for (const Finding& f : truth ? job.anomalies : job.findings) list.push_back(findingToJson(f, truth));
    o[truth ? "anomalies" : "findings"] = std::move(list);
    if (!job.notes.empty()) o["notes"] = job.notes;
    return o;
}

static json summaryToJson(const CaptureSummary& c) {
    return json{{"source", c.source},
                {"records", c.records},
                {"roce_records", c.roceRecords},
                {"other_records", c.otherRecords},
                {"roce_bytes", c.roceBytes},
                {"other_bytes", c.otherBytes},
                {"hosts", c.hosts},
                {"nics", c.nics},
                {"endpoints", c.endpoints},
                {"unknown_roce_endpoints", c.unknownRoceEndpoints},
                {"roce_endpoints", c.roceEndpoints},
                {"topology", c.topologyGiven ? "given" : "none"},
                {"first_ns", c.firstNs},
                {"last_ns", c.lastNs},
                {"skipped_rows", c.skippedRows},
                {"warnings", c.warnings},
                {"messages", c.messages}};
}

json reportToJson(const Report& r) {
    json o{{"format", "llmprism-report"}, {"version", 1}};
    if (r.capture) o["capture"] = summaryToJson(*r.capture);
    json jobs = json::array();
    for (const JobInfo& j : r.jobs) jobs.push_back(jobToJson(j, false));
    o["jobs"] = std::move(jobs);
    if (!r.notes.empty()) o["notes"] = r.notes;
    return o;
}

json truthToJson(const Report& r) {
    json jobs = json::array();
    for (const JobInfo& j : r.jobs) jobs.push_back(jobToJson(j, true));
    json o{{"jobs", std::move(jobs)}};
    if (!r.notes.empty()) o["notes"] = r.notes;
    return o;
}

namespace {
struct Reader {
    std::string file;
    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw InputError({file, 0, 0, where + ": " + what});
    }
    // nlohmann converts a number of another type unchecked (1e27 into an int64 is undefined): an integer field
    // out of its type's range is refused.
    template <typename T> void checkRange(const json& v, const std::string& where) const {
        using L = std::numeric_limits<T>;
        bool inRange = true; // not a number: get() says so
        if (v.is_number_unsigned()) inRange = v.get<std::uint64_t>() <= std::uint64_t(L::max());
        else if (v.is_number_integer())
            inRange = v.get<std::int64_t>() >= std::int64_t(L::min()) &&
                      (!L::is_signed || v.get<std::int64_t>() <= std::int64_t(L::max()));
        else if (v.is_number_float())
            inRange = v.get<double>() >= double(L::min()) && v.get<double>() < double(L::max()) + 1.0;
        if (!inRange)
            fail(where, "expected an integer from " + std::to_string(L::min()) + " to " + std::to_string(L::max()) +
                            ", found " + v.dump());
    }
    template <typename T> T get(const json& o, const char* key, const std::string& where, T def, bool required) {
        auto it = o.find(key);
        if (it == o.end() || it->is_null()) {
            if (required) fail(where, std::string("missing \"") + key + "\"");
            return def;
        }
        try {
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                checkRange<T>(*it, where + "." + key);
            } else if constexpr (std::is_same_v<T, std::vector<int>>) {
                if (it->is_array())
                    for (std::size_t i = 0; i < it->size(); ++i)
                        checkRange<int>((*it)[i], where + "." + key + "[" + std::to_string(i) + "]");
            }
            return it->get<T>();
        } catch (const json::exception&) {
            fail(where + "." + key, std::string("expected ") + expected<T>() + ", found " + it->type_name());
        }
    }
    template <typename T> static const char* expected() {
        if constexpr (std::is_same_v<T, std::string>) return "a string";
        else if constexpr (std::is_same_v<T, bool>) return "true or false";
        else if constexpr (std::is_floating_point_v<T>) return "a number";
        else if constexpr (std::is_integral_v<T>) return "an integer";
        else return "a list";
    }
};
} // namespace

Report reportFromJson(const json& j, const std::string& src) {
    Reader rd{src};
    if (!j.is_object()) rd.fail("top level", std::string("expected an object, found ") + j.type_name());
    Report r;
    if (j.contains("format")) {
        auto fmt = rd.get<std::string>(j, "format", "top level", "", false);
        if (fmt != "llmprism-report") rd.fail("format", "expected \"llmprism-report\", found \"" + fmt + "\"");
        r.version = rd.get<int>(j, "version", "top level", 1, false);
        if (r.version > 1)
            rd.fail("version", "version " + std::to_string(r.version) + " is newer than this tool reads (1)");
    }
    auto jobsIt = j.find("jobs");
    if (jobsIt == j.end() || !jobsIt->is_array()) rd.fail("top level", "expected a \"jobs\" list");
    int n = 0;
    for (const json& jj : *jobsIt) {
        std::string where = "jobs[" + std::to_string(n++) + "]";
        if (!jj.is_object()) rd.fail(where, "expected an object");
        JobInfo job;
        job.id = rd.get<std::string>(jj, "id", where, "", false);
        job.name = rd.get<std::string>(jj, "name", where, "", false);
        if (job.id.empty()) job.id = job.name.empty() ? "job-" + std::to_string(n - 1) : job.name;
        job.gpus = rd.get<std::vector<std::string>>(jj, "gpus", where, {}, true);
        job.hosts = rd.get<std::vector<std::string>>(jj, "hosts", where, {}, false);
        job.tp = rd.get<int>(jj, "tp", where, 0, false);
        job.pp = rd.get<int>(jj, "pp", where, 0, false);
        job.dp = rd.get<int>(jj, "dp", where, 0, false);
        job.dpGroups = rd.get<std::vector<std::vector<std::string>>>(jj, "dp_groups", where, {}, false);
        job.ppChains = rd.get<std::vector<std::vector<std::string>>>(jj, "pp_chains", where, {}, false);
        job.notes = rd.get<std::vector<std::string>>(jj, "notes", where, {}, false);
        job.restartOf = rd.get<std::string>(jj, "restart_of", where, "", false);
        job.gpuCount = rd.get<int>(jj, "gpu_count", where, 0, false);
        job.startNs = rd.get<std::int64_t>(jj, "start_ns", where, 0, false);
        job.endNs = rd.get<std::int64_t>(jj, "end_ns", where, 0, false);
        if (auto it = jj.find("steps"); it != jj.end()) {
            if (!it->is_array()) rd.fail(where + ".steps", "expected a list");
            int k = 0;
            for (const json& s : *it) {
                std::string w = where + ".steps[" + std::to_string(k++) + "]";
                if (!s.is_object()) rd.fail(w, "expected an object");
                StepInfo st;
                st.index = rd.get<int>(s, "index", w, k - 1, false);
                st.startNs = rd.get<std::int64_t>(s, "start_ns", w, 0, true);
                st.endNs = rd.get<std::int64_t>(s, "end_ns", w, 0, true);
                st.slow = rd.get<bool>(s, "slow", w, false, false);
                if (st.endNs < st.startNs) rd.fail(w, "end_ns is before start_ns");
                job.steps.push_back(st);
            }
        }
        for (const char* key : {"findings", "anomalies"}) {
            auto it = jj.find(key);
            if (it == jj.end()) continue;
            if (!it->is_array()) rd.fail(where + "." + key, "expected a list");
            int k = 0;
            for (const json& f : *it) {
                std::string w = where + "." + key + "[" + std::to_string(k++) + "]";
                if (!f.is_object()) rd.fail(w, "expected an object");
                Finding fi;
                fi.kind = rd.get<std::string>(f, "kind", w, "", true);
                fi.ip = rd.get<std::string>(f, "ip", w, "", false);
                fi.srcIp = rd.get<std::string>(f, "src_ip", w, "", false);
                fi.dstIp = rd.get<std::string>(f, "dst_ip", w, "", false);
                fi.switchName = rd.get<std::string>(f, "switch", w, "", false);
                fi.group = rd.get<std::vector<std::string>>(f, "group", w, {}, false);
                fi.firstStep = rd.get<int>(f, "first_step", w, 0, false);
                fi.lastStep = rd.get<int>(f, "last_step", w, fi.firstStep, false);
                fi.stage = rd.get<int>(f, "stage", w, -1, false);
                fi.periodSteps = rd.get<int>(f, "period_steps", w, 0, false);
                fi.occurrences = rd.get<std::vector<int>>(f, "occurrences", w, {}, false);
                fi.score = rd.get<double>(f, "score", w, 0.0, false);
                fi.factor = rd.get<double>(f, "factor", w, 0.0, false);
                fi.savesMsPerStep = rd.get<double>(f, "saves_ms_per_step", w, -1.0, false);
                fi.savesShare = rd.get<double>(f, "saves_share", w, -1.0, false);
                fi.optional = rd.get<bool>(f, "optional", w, false, false);
                fi.message = rd.get<std::string>(f, "message", w, "", false);
                if (auto ev = f.find("evidence"); ev != f.end() && !ev->is_null()) {
                    if (!ev->is_object()) rd.fail(w + ".evidence", "expected an object of numbers");
                    for (const auto& [name, value] : ev->items()) {
                        if (!value.is_number()) rd.fail(w + ".evidence." + name, "expected a number");
                        fi.evidence.emplace_back(name, value.get<double>());
                    }
                }
                (std::string(key) == "findings" ? job.findings : job.anomalies).push_back(std::move(fi));
            }
        }
        r.jobs.push_back(std::move(job));
    }
    r.notes = rd.get<std::vector<std::string>>(j, "notes", "top level", {}, false);
    return r;
}

void writeJsonFile(const json& j, const std::string& path) {
    std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
        out << j.dump(1) << '\n';
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw std::runtime_error(path + ": write failed (disk full?)");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot replace the file");
    }
}

Report readReportFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError({path, 0, 0, std::string("cannot open the file: ") + std::strerror(errno)});
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        // The byte offset as line:column for the message.
        const auto [line, col] = lineColumnAt(text, e.byte == 0 ? 0 : e.byte - 1);
        std::string what = e.what();
        if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
        throw InputError({path, line, col, "not valid JSON: " + what});
    } catch (const json::out_of_range& e) { // a number too large for any type ("1e999")
        throw InputError(jsonRangeIssue(path, text, e.what(), "not valid JSON: "));
    }
    return reportFromJson(j, path);
}

} // namespace prism
