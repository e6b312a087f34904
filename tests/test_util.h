#pragma once
// Helpers the tests share: simulator presets as captures, whole-file reads and writes (plain or gzip),
// std::string in QCOMPARE messages.
#include "io/capture.h"
#include "io/report_json.h"
#include "sim/simulator.h"

#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTest>

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

namespace QTest {
template <> inline char* toString(const std::string& s) { return qstrdup(s.c_str()); }
} // namespace QTest

namespace prism::test {

// A capture as loadCapture would make it from the simulator's output (records sorted by start).
inline Capture captureOf(const FlowTable& flows, const Topology& topology) {
    Capture c;
    c.source = "simulated";
    c.flows = flows;
    c.flows.sortByStart();
    c.flows.startNs.compact();
    c.topology = topology;
    c.hasTopology = true;
    return c;
}

inline Capture captureOf(const sim::SimResult& r) { return captureOf(r.flows, r.topology); }

inline sim::SimConfig presetConfig(const char* name, int seed) {
    auto config = sim::makePreset(name, std::uint64_t(seed));
    if (!config) throw std::runtime_error(std::string("no preset ") + name);
    return *config;
}

inline sim::SimResult simulatePreset(const char* name, int seed) { return sim::simulate(presetConfig(name, seed)); }

// A report as JSON text with the capture's source left out (a store or another path names itself), to compare
// two ways of analysing the same records.
inline std::string reportText(Report r) {
    if (r.capture) r.capture->source.clear();
    return reportToJson(r).dump(1);
}

// The first line where two texts differ, for a failure message.
inline std::string firstDifference(const std::string& a, const std::string& b) {
    std::istringstream x(a), y(b);
    std::string la, lb;
    for (int line = 1; bool(std::getline(x, la)) | bool(std::getline(y, lb)); ++line)
        if (la != lb) return "line " + std::to_string(line) + ": \"" + la + "\" vs \"" + lb + "\"";
    return "";
}

inline std::string readBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void writeBytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline void writeGzip(const std::string& path, const std::string& bytes) {
    gzFile gz = gzopen(path.c_str(), "wb");
    QVERIFY(gz);
    QCOMPARE(gzwrite(gz, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
    QCOMPARE(gzclose(gz), Z_OK);
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// llmprism-cli run to its end: exit code (-1 when it crashed), stdout and stderr.
struct CliRun {
    int code = -1;
    QString out, err;
};

inline CliRun runCli(const QStringList& args) {
    QProcess p;
    p.start(LLMPRISM_CLI, args);
    p.waitForFinished(300000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

} // namespace prism::test
