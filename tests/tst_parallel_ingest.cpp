// flows.csv read in parallel parts (LoadOptions::threads) gives what a sequential read gives: the same table in
// the same order, the same messages with the same line numbers; FlowTable::concatenate and the parallel
// sortByStart keep the order a sequential stable sort gives.
#include "io/capture.h"
#include "model/flow_table.h"
#include "test_util.h"

#include "util/parallel.h"

#include <QtTest>

#include <atomic>
#include <numeric>
#include <set>
#include <stdexcept>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

using namespace prism;

namespace {

// A flows.csv of `rows` records with ties in start time, IPv4 and IPv6 endpoints, CRLF lines, comments,
// blank lines and, every `badEvery` rows, a malformed row of one of several kinds. Returns how many rows a
// reader must skip.
std::uint64_t writeCsv(const std::string& path, int rows, int badEvery, bool congestion, bool finalNewline = true,
                       bool bom = false) {
    std::mt19937_64 rng(7);
    std::ostringstream out;
    if (bom) out << "\xEF\xBB\xBF";
    out << "# exported by a test\n"
        << "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets"
        << (congestion ? ",retransmits,cnps,ecn_ce" : "") << "\n";
    auto ip = [&](int k) {
        return k % 5 == 0 ? "fd10::" + std::to_string(k) : "10.0." + std::to_string(k / 200) + "." + std::to_string(k % 200);
    };
    std::uint64_t skipped = 0;
    for (int i = 0; i < rows; ++i) {
        if (badEvery && i % badEvery == badEvery - 1) {
            const int kind = (i / badEvery) % 5;
            skipped += kind == 0 || kind == 1 || kind == 4; // a comment or a blank line is no row
            switch (kind) {
            case 0: out << "1000,2000,10.0.0.300,10.0.0.1,1,4791,17,100,1\n"; break;
            case 1: out << "1000,2000,10.0.0.1\n"; break;
            case 2: out << "# a comment\n"; break;
            case 3: out << "\n"; break;
            default: out << "x,2000,10.0.0.1,10.0.0.2,1,4791,17,100,1\n"; break;
            }
            continue;
        }
        const std::int64_t start = std::int64_t(rng() % 5000) * 1000; // many ties
        const std::int64_t end = start + std::int64_t(rng() % 3) * 500;
        out << start << ',' << end << ',' << ip(int(rng() % 700)) << ',' << ip(int(rng() % 700)) << ','
            << rng() % 65536 << ",4791,17," << rng() % 100000 << ',' << rng() % 100;
        if (congestion) out << ',' << rng() % 3 << ',' << rng() % 2 << ',' << rng() % 4;
        out << (i % 7 == 0 ? "\r\n" : "\n");
    }
    std::string text = out.str();
    if (!finalNewline) text.pop_back();
    std::ofstream(path, std::ios::binary) << text;
    return skipped;
}

void compareTables(const FlowTable& a, const FlowTable& b) {
    QCOMPARE(a.size(), b.size());
    QCOMPARE(a.endpoints.size(), b.endpoints.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        const FlowRecord x = a.record(i), y = b.record(i);
        QVERIFY2(x.startNs == y.startNs && x.endNs == y.endNs && x.src == y.src && x.dst == y.dst &&
                     x.srcPort == y.srcPort && x.bytes == y.bytes && x.packets == y.packets,
                 qPrintable(QString("record %1 differs").arg(i)));
    }
    QCOMPARE(a.hasCongestion(), b.hasCongestion());
    if (a.hasCongestion()) {
        QVERIFY(a.retransmits == b.retransmits);
        QVERIFY(a.cnps == b.cnps);
        QVERIFY(a.ecnCe == b.ecnCe);
    }
}

QStringList messages(const LoadDiagnostics& d) {
    QStringList out;
    for (const InputIssue& e : d.errors) out << QString::fromStdString(e.toString());
    for (const InputIssue& w : d.warnings) out << QString::fromStdString(w.toString());
    return out;
}

// The rows that start in [from, to), in their order: what FlowTable::keepStartsIn keeps of them.
template <typename Row>
std::vector<Row> startingIn(const std::vector<Row>& rows, std::int64_t from, std::int64_t to) {
    std::vector<Row> out;
    for (const Row& r : rows)
        if (r.start >= from && r.start < to) out.push_back(r);
    return out;
}

} // namespace

class TestParallelIngest : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    std::string path(const char* name) const { return (m_dir.path() + "/" + name).toStdString(); }

private slots:
    void partsGiveTheSequentialTableAndMessages_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("badEvery");
        QTest::addColumn<bool>("congestion");
        QTest::addColumn<bool>("finalNewline");
        QTest::addColumn<bool>("bom");
        QTest::newRow("clean") << 30000 << 0 << false << true << false;
        QTest::newRow("bad rows (more than the 20 messages kept)") << 30000 << 997 << false << true << false;
        QTest::newRow("bad rows, few, a byte-order mark") << 30000 << 4001 << false << false << true;
        QTest::newRow("congestion columns") << 20000 << 1501 << true << true << false;
        QTest::newRow("fewer lines than threads") << 2 << 0 << false << false << true;
    }
    void partsGiveTheSequentialTableAndMessages() {
        QFETCH(int, rows);
        QFETCH(int, badEvery);
        QFETCH(bool, congestion);
        QFETCH(bool, finalNewline);
        QFETCH(bool, bom);
        const std::string file = path("flows.csv");
        const std::uint64_t skipped = writeCsv(file, rows, badEvery, congestion, finalNewline, bom);
        LoadOptions one;
        one.threads = 1;
        LoadDiagnostics d1;
        const FlowTable sequential = readFlowsCsv(file, one, d1);
        QVERIFY(sequential.size() > 0);
        QCOMPARE(d1.skippedRows, skipped);
        for (unsigned threads : {2u, 3u, 5u, 16u}) {
            LoadOptions many;
            many.threads = threads;
            many.parallelFromBytes = 0;
            LoadDiagnostics dn;
            const FlowTable parallel = readFlowsCsv(file, many, dn);
            compareTables(sequential, parallel);
            QCOMPARE(dn.skippedRows, d1.skippedRows);
            QCOMPARE(dn.warningCount, d1.warningCount);
            QCOMPARE(messages(dn), messages(d1));
        }
    }

    // .gz: inflated on a thread of its own while the rows are parsed (ReadAhead); a truncated stream keeps the
    // rows before the break and says so, as the sequential read does.
    void aGzipFileReadAheadGivesTheSequentialResult_data() {
        QTest::addColumn<bool>("truncated");
        QTest::newRow("whole") << false;
        QTest::newRow("truncated") << true;
    }
    void aGzipFileReadAheadGivesTheSequentialResult() {
        QFETCH(bool, truncated);
        const std::string plain = path("gz.csv"), gz = path(truncated ? "cut.csv.gz" : "gz.csv.gz");
        writeCsv(plain, 60000, 2003, false);
        test::writeGzip(gz, test::readBytes(plain));
        if (truncated) std::filesystem::resize_file(gz, std::filesystem::file_size(gz) / 2);
        LoadOptions one, two;
        one.threads = 1;
        two.threads = 2;
        LoadDiagnostics d1, d2;
        const FlowTable a = readFlowsCsv(gz, one, d1), b = readFlowsCsv(gz, two, d2);
        QVERIFY(a.size() > 1000);
        compareTables(a, b);
        QCOMPARE(messages(d2), messages(d1));
        QCOMPARE(d2.skippedRows, d1.skippedRows);
        if (truncated) QVERIFY(messages(d1).join('\n').contains("truncated .gz file"));
        int calls = 0; // cancelled while the other thread inflates: it stops too
        two.progress = [&](double) { return ++calls < 2; };
        LoadDiagnostics d3;
        QVERIFY_THROWS_EXCEPTION(Cancelled, readFlowsCsv(gz, two, d3));
    }

    void aCancelledParallelReadStops() {
        const std::string file = path("cancel.csv");
        writeCsv(file, 50000, 0, false);
        LoadOptions o;
        o.threads = 2;
        o.parallelFromBytes = 0;
        int calls = 0;
        o.progress = [&](double) { return ++calls < 2; };
        LoadDiagnostics d;
        QVERIFY_THROWS_EXCEPTION(Cancelled, readFlowsCsv(file, o, d));
    }

    void concatenatedPartsKeepTheirOrderAndEndpoints() {
        FlowTable a, b, c;
        a.append({5, 6, *IpAddr::parse("10.0.0.1"), *IpAddr::parse("10.0.0.2"), 1, 4791, 17, 10, 1});
        b.append({1, 2, *IpAddr::parse("10.0.0.2"), *IpAddr::parse("fd10::9"), 2, 4791, 17, 20, 2});
        const EndpointId s3 = b.endpoints.intern(*IpAddr::parse("10.0.0.3"));
        b.append(3, 4, s3, b.endpoints.find(*IpAddr::parse("10.0.0.2")), 3, 4791, 17, 30, 3, 7, 8, 9);
        c.append({0, 1, *IpAddr::parse("10.0.0.1"), *IpAddr::parse("10.0.0.3"), 4, 4791, 17, 40, 4});
        const FlowTable t = FlowTable::concatenate({a, b, c});
        QCOMPARE(t.size(), std::size_t(4));
        QCOMPARE(t.endpoints.size(), std::size_t(4));
        const std::int64_t starts[] = {5, 1, 3, 0};
        const char* srcs[] = {"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1"};
        const char* dsts[] = {"10.0.0.2", "fd10::9", "10.0.0.2", "10.0.0.3"};
        for (std::size_t i = 0; i < 4; ++i) {
            QCOMPARE(t.startNs[i], starts[i]);
            QCOMPARE(QString::fromStdString(t.record(i).src.toString()), QString(srcs[i]));
            QCOMPARE(QString::fromStdString(t.record(i).dst.toString()), QString(dsts[i]));
            QCOMPARE(t.bytes[i], std::uint64_t(10 * (i + 1)));
        }
        QVERIFY(t.hasCongestion());
        QCOMPARE(t.retransmits, (std::vector<std::uint32_t>{0, 0, 7, 0}));
        QCOMPARE(t.ecnCe, (std::vector<std::uint32_t>{0, 0, 9, 0}));
    }

    // A table's fingerprint is the same for the same records read again and changes with any field of any
    // record or any endpoint address; releasing the records keeps the endpoints.
    void aFingerprintTellsTheSameRecords() {
        auto make = [] {
            FlowTable t;
            t.append({5, 6, *IpAddr::parse("10.0.0.1"), *IpAddr::parse("10.0.0.2"), 1, 4791, 17, 10, 1});
            t.append({7, 9, *IpAddr::parse("10.0.0.2"), *IpAddr::parse("fd10::9"), 2, 4791, 17, 20, 2});
            t.enableCongestion();
            return t;
        };
        const FlowTable base = make();
        QCOMPARE(make().fingerprint(), base.fingerprint());
        std::vector<FlowTable> changed(13, make());
        changed[0].startNs.set(1, changed[0].startNs[1] + 1);
        changed[1].setEnd(0, changed[1].end(0) + 1);
        const EndpointId s1 = changed[2].src[1];
        changed[2].src.set(1, changed[2].dst[1]);
        changed[2].dst.set(1, s1);
        changed[3].srcPort[0] = 3;
        changed[4].dstPort[1] = 53;
        changed[5].proto[0] = 6;
        changed[6].bytes = CountColumn();
        for (std::uint64_t v : {std::uint64_t(10), std::uint64_t(21)}) changed[6].bytes.push_back(v);
        changed[7].packets = CountColumn();
        for (std::uint64_t v : {std::uint64_t(1), std::uint64_t(3)}) changed[7].packets.push_back(v);
        changed[8].append({8, 9, *IpAddr::parse("10.0.0.1"), *IpAddr::parse("10.0.0.2"), 1, 4791, 17, 10, 1});
        changed[9].endpoints.intern(*IpAddr::parse("10.0.0.7"));
        changed[10].ecnCe[1] = 1;
        changed[11].retransmits[0] = 1;
        changed[12].cnps[1] = 1;
        for (std::size_t k = 0; k < changed.size(); ++k)
            QVERIFY2(changed[k].fingerprint() != base.fingerprint(), qPrintable(QString("change %1").arg(k)));
        // Longer columns (digested in four interleaved lanes): a change in any row, or two rows swapped, tells.
        FlowTable longer;
        for (int i = 0; i < 11; ++i)
            longer.append(
                {100 + i, 200 + 3 * i, *IpAddr::parse("10.0.0.1"), *IpAddr::parse("10.0.0.2"), 1, 4791, 17, 10, 1});
        std::set<std::uint64_t> seen{longer.fingerprint()};
        for (std::size_t i = 0; i < 11; ++i) {
            FlowTable t = longer;
            t.startNs.set(i, t.startNs[i] + 1);
            QVERIFY2(seen.insert(t.fingerprint()).second, qPrintable(QString("row %1").arg(i)));
        }
        auto swapDurations = [](FlowTable& t, std::size_t a, std::size_t b) { // (distinct in `longer`)
            const std::uint64_t d = t.durationNs[a];
            t.durationNs.set(a, t.durationNs[b]);
            t.durationNs.set(b, d);
        };
        for (std::size_t i : {std::size_t(0), std::size_t(3), std::size_t(6)}) { // i + 4 < 11
            FlowTable t = longer;
            swapDurations(t, i, i + 1);
            QVERIFY2(seen.insert(t.fingerprint()).second, qPrintable(QString("swap %1").arg(i)));
            swapDurations(t, i, i + 1);
            swapDurations(t, i, i + 4); // the same lane
            QVERIFY2(seen.insert(t.fingerprint()).second, qPrintable(QString("lane swap %1").arg(i)));
        }
        FlowTable released = make();
        released.releaseRecords();
        QCOMPARE(released.size(), std::size_t(0));
        QCOMPARE(released.endpoints.size(), base.endpoints.size());
        QCOMPARE(released.endpoints.find(*IpAddr::parse("fd10::9")), base.endpoints.find(*IpAddr::parse("fd10::9")));
    }

    // Aside: the work beside the caller's is done by wait() (on its thread, or then on the caller's), and what it
    // threw comes out of every wait(); a destroyed Aside has waited.
    void asideWorkIsDoneByWaitAndItsErrorsComeOut() {
        for (bool onThread : {true, false}) {
            int done = 0;
            {
                Aside a([&] { ++done; }, onThread);
                a.wait();
                QCOMPARE(done, 1);
                a.wait();
                QCOMPARE(done, 1);
            }
            Aside failing([] { throw std::runtime_error("no"); }, onThread);
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, failing.wait());
            QVERIFY_THROWS_EXCEPTION(std::runtime_error, failing.wait());
            std::atomic<int> later{0};
            {
                Aside never([&] { later = 1; }, onThread); // not waited for: done before it is gone, if on a thread
            }
            QCOMPARE(later.load(), onThread ? 1 : 0);
        }
    }

    // Byte and packet counts of 2^32 and more (CountColumn then holds high halves) stay with their rows through every
    // way a table is built and reshaped: appends, concatenation, the sort, a window of starts, counts set later
    // (a sampling rate that comes after its records), a resize.
    void countsOf32BitsAndMoreStayWithTheirRows() {
        std::mt19937_64 rng(5);
        const std::uint64_t edges[] = {0, 1, 0xFFFFFFFEull, 0xFFFFFFFFull, 0x100000000ull, UINT64_MAX};
        auto count = [&] { return rng() % 4 == 0 ? edges[rng() % 6] : rng() % 100000; };
        struct Row {
            std::int64_t start;
            std::uint64_t bytes, packets;
        };
        std::vector<Row> rows;
        std::vector<FlowTable> parts(3);
        auto narrow = [&] { return count() & 0xFFFFFFFFull; };
        for (int i = 0; i < 30000; ++i) { // the first part's counts all fit 32 bits, the others' do not
            const Row r = i < 10000 ? Row{std::int64_t(rng() % 5000), narrow(), narrow()}
                                    : Row{std::int64_t(rng() % 5000), count(), count()};
            rows.push_back(r);
            FlowTable& part = parts[std::size_t(i * 3 / 30000)];
            const EndpointId e = part.endpoints.intern(IpAddr::v4(1));
            part.append(r.start, r.start + 1, e, e, 1, 4791, 17, r.bytes, r.packets);
        }
        auto check = [&](const FlowTable& t, const std::vector<Row>& want, const char* what) {
            QVERIFY2(t.size() == want.size(), what);
            for (std::size_t i = 0; i < want.size(); ++i)
                if (t.startNs[i] != want[i].start || t.bytes[i] != want[i].bytes || t.packets[i] != want[i].packets)
                    QFAIL(qPrintable(QString("%1: row %2 has %3 bytes, %4 packets; expected %5, %6")
                                         .arg(what)
                                         .arg(i)
                                         .arg(t.bytes[i])
                                         .arg(t.packets[i])
                                         .arg(want[i].bytes)
                                         .arg(want[i].packets)));
        };
        FlowTable t = FlowTable::concatenate(parts);
        QVERIFY(t.bytes.wide() && t.packets.wide());
        check(t, rows, "concatenated");
        std::vector<Row> sorted = rows;
        std::stable_sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) { return a.start < b.start; });
        t.sortByStart(2);
        check(t, sorted, "sorted");
        for (int k = 0; k < 2000; ++k) { // set anywhere: narrow to wide, wide to narrow, wide to wide
            const std::size_t i = std::size_t(rng() % sorted.size());
            sorted[i].bytes = count();
            t.bytes.set(i, sorted[i].bytes);
        }
        check(t, sorted, "set");
        FlowTable w = t;
        w.keepStartsIn(1000, 3000);
        check(w, startingIn(sorted, 1000, 3000), "window");
        // Nearly by start (each row within 50 of its place): the columns are permuted in place through a ring.
        FlowTable near;
        std::vector<Row> nearRows;
        const EndpointId e = near.endpoints.intern(IpAddr::v4(1));
        for (int i = 0; i < 30000; ++i) {
            const Row r{std::int64_t(i) + std::int64_t(rng() % 50), narrow(), narrow()};
            nearRows.push_back(r);
            near.append(r.start, r.start + 1, e, e, 1, 4791, 17, r.bytes, r.packets);
        }
        std::stable_sort(nearRows.begin(), nearRows.end(),
                         [](const Row& a, const Row& b) { return a.start < b.start; });
        near.sortByStart(2);
        QVERIFY(!near.bytes.wide());
        check(near, nearRows, "nearly sorted");
        nearRows[77].bytes = UINT64_MAX; // the first count beyond 32 bits: the column takes its high halves
        near.bytes.set(77, UINT64_MAX);
        QVERIFY(near.bytes.wide());
        check(near, nearRows, "widened");
        near.sortByStart(2); // sorted already: nothing moves
        FlowTable joined = FlowTable::concatenate({near, near});
        nearRows.insert(nearRows.end(), nearRows.begin(), nearRows.end());
        check(joined, nearRows, "a wide table after itself");
        t.bytes.resize(100);
        t.packets.resize(100);
        for (std::size_t i = 0; i < 100; ++i) {
            QCOMPARE(t.bytes[i], sorted[i].bytes);
            QCOMPARE(t.packets[i], sorted[i].packets);
        }
        t.bytes.resize(150);
        for (std::size_t i = 100; i < 150; ++i) QCOMPARE(t.bytes[i], std::uint64_t(0));
    }

    // Records' ends (held as durations: 32 bits each while every one is under 2^32 ns, else both halves) and
    // endpoint ids (16 bits each while every one is under 2^16) stay with their rows through every way a table is
    // built and reshaped: appends, concatenation of parts with endpoints of their own, the sort (ties on the start
    // broken by the end), a window of starts, an end set later; ends before their starts included.
    void endsAndEndpointIdsOfEveryWidthStayWithTheirRows() {
        std::mt19937_64 rng(9);
        const std::int64_t edges[] = {0, 1, -1, 0xFFFFFFFFll, 0x100000000ll, 3'600'000'000'000ll, INT64_MIN / 4};
        struct Row {
            std::int64_t start, end;
            std::uint32_t src, dst; // an address each (10.x.y.z, 11.x.y.z)
        };
        std::vector<Row> rows;
        std::vector<FlowTable> parts(3);
        for (int i = 0; i < 90000; ++i) { // the first part narrow throughout; the others reach 80,000 addresses
            const bool narrow = i < 30000;
            const std::int64_t start = std::int64_t(rng() % 5000);
            const std::int64_t d = narrow || rng() % 4 ? std::int64_t(rng() % 1000) : edges[rng() % 7];
            const Row r{start, start + d, std::uint32_t(narrow ? rng() % 200 : 200 + i),
                        std::uint32_t(narrow ? rng() % 300 : rng() % 20000)};
            rows.push_back(r);
            FlowTable& part = parts[std::size_t(i / 30000)];
            part.append(
                {r.start, r.end, IpAddr::v4(0x0A000000u + r.src), IpAddr::v4(0x0B000000u + r.dst), 1, 4791, 17, 1, 1});
        }
        QVERIFY(!parts[0].durationNs.wide() && !parts[0].src.wide());
        QVERIFY(parts[1].durationNs.wide() && !parts[1].src.wide()); // its own endpoints: fewer than 2^16
        auto check = [&](const FlowTable& t, const std::vector<Row>& want, const char* what) {
            QVERIFY2(t.size() == want.size(), what);
            for (std::size_t i = 0; i < want.size(); ++i) {
                const FlowRecord r = t.record(i);
                if (r.startNs != want[i].start || r.endNs != want[i].end || t.end(i) != want[i].end ||
                    r.src != IpAddr::v4(0x0A000000u + want[i].src) || r.dst != IpAddr::v4(0x0B000000u + want[i].dst))
                    QFAIL(qPrintable(QString("%1: row %2 is %3..%4; expected %5..%6")
                                         .arg(what)
                                         .arg(i)
                                         .arg(r.startNs)
                                         .arg(r.endNs)
                                         .arg(want[i].start)
                                         .arg(want[i].end)));
            }
        };
        FlowTable t = FlowTable::concatenate(parts);
        QVERIFY(t.endpoints.size() > 65536);
        QVERIFY(t.durationNs.wide() && t.src.wide() && t.dst.wide());
        check(t, rows, "concatenated");
        std::vector<Row> sorted = rows;
        std::stable_sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) {
            return a.start != b.start ? a.start < b.start : a.end < b.end;
        });
        t.sortByStart(2);
        check(t, sorted, "sorted");
        QVERIFY(t.isSortedByStart());
        for (int k = 0; k < 2000; ++k) { // an end set anywhere, the start kept
            const std::size_t i = std::size_t(rng() % sorted.size());
            sorted[i].end = sorted[i].start + edges[rng() % 7];
            t.setEnd(i, sorted[i].end);
        }
        check(t, sorted, "ends set");
        FlowTable w = t;
        w.keepStartsIn(1000, 3000);
        check(w, startingIn(sorted, 1000, 3000), "window");
        QVERIFY(w.endpoints.size() < t.endpoints.size());
        std::int64_t last = INT64_MIN;
        for (const Row& r : sorted) last = std::max(last, r.end);
        QCOMPARE(t.lastEnd(), last);
    }

    // Start times compacted (a base per block of 2^16 rows, 4 bytes a row) read as they were, through every way a
    // table is read and reshaped after: algorithms over them, the fingerprint, a start set that fits or does not
    // (the column then goes back to 8 bytes a row), concatenation, a window, a sort. A block whose rows span 2^32
    // ns or more (a pause) keeps its rows at 8 bytes beside the others; more than half the rows in such blocks,
    // and the column stays as it was.
    void compactedStartsReadAsTheyWere() {
        std::mt19937_64 rng(11);
        FlowTable t;
        const EndpointId a = t.endpoints.intern(IpAddr::v4(1)), b = t.endpoints.intern(IpAddr::v4(2));
        std::int64_t at = 1'700'000'000'000'000'000;
        std::vector<std::int64_t> starts;
        for (int i = 0; i < 200'000; ++i) { // 4 blocks and a part, each well within 4.3 s
            at += std::int64_t(rng() % 20'000);
            starts.push_back(at);
            t.append(at, at + 500, a, b, 1, 4791, 17, 10, 1);
        }
        const FlowTable before = t;
        QVERIFY(t.startNs.compact(2));
        QVERIFY(t.startNs.compacted());
        QVERIFY(t.startNs.memoryBytes() < before.startNs.memoryBytes() * 6 / 10);
        QVERIFY(t.startNs == before.startNs);
        QCOMPARE(t.fingerprint(), before.fingerprint());
        for (std::size_t i = 0; i < starts.size(); ++i)
            if (t.startNs[i] != starts[i] || t.end(i) != starts[i] + 500) QFAIL(qPrintable(QString("row %1").arg(i)));
        QVERIFY(std::equal(t.startNs.begin(), t.startNs.end(), starts.begin(), starts.end()));
        QCOMPARE(std::lower_bound(t.startNs.begin(), t.startNs.end(), starts[123'456]) - t.startNs.begin(),
                 std::ptrdiff_t(123'456));
        QCOMPARE(*std::max_element(t.startNs.begin(), t.startNs.end()), starts.back());
        FlowTable w = t; // a window of a compacted table: compacted again
        w.keepStartsIn(starts[70'000], starts[140'000]);
        QVERIFY(w.startNs.compacted());
        QCOMPARE(w.size(), std::size_t(70'000));
        for (std::size_t i = 0; i < w.size(); ++i)
            if (w.startNs[i] != starts[70'000 + i]) QFAIL("window");
        FlowTable two = FlowTable::concatenate({t, before}); // compacted, then not
        QCOMPARE(two.size(), 2 * starts.size());
        for (std::size_t i = 0; i < two.size(); ++i)
            if (two.startNs[i] != starts[i % starts.size()]) QFAIL("concatenated");
        two.sortByStart(2);
        QVERIFY(two.isSortedByStart());
        t.startNs.set(5, starts[5] + 1); // fits its block: stays compacted
        QVERIFY(t.startNs.compacted());
        QCOMPARE(t.startNs[5], starts[5] + 1);
        QCOMPARE(t.end(5), starts[5] + 501);                   // the end moves with the start
        t.startNs.set(7, starts[7] + (std::int64_t(1) << 33)); // past its block's reach: back to 8 bytes a row
        QVERIFY(!t.startNs.compacted());
        QCOMPARE(t.startNs[7], starts[7] + (std::int64_t(1) << 33));
        QVERIFY(t.startNs.compact(2)); // its block now spans 2^33 ns: 8-byte rows there, the others compacted
        QCOMPARE(t.startNs[7], starts[7] + (std::int64_t(1) << 33));
        t.startNs.set(7, starts[7]);
        t.startNs.expand();
        QVERIFY(t.startNs.compact(2));                   // every block compacted again
        t.startNs.set(6, starts[6] - 1'000'000'000'000); // below its block's base: back to 8 bytes a row
        QVERIFY(!t.startNs.compacted());
        QCOMPARE(t.startNs[6], starts[6] - 1'000'000'000'000);
        QCOMPARE(t.startNs[5], starts[5] + 1);
        QCOMPARE(t.startNs[199'999], starts[199'999]);
        // A pause of an hour in the second block, an INT64_MIN start in the last: those two blocks keep 8-byte
        // rows, the other three are compacted.
        FlowTable paused = before;
        std::vector<std::int64_t> want = starts;
        for (std::size_t i = 70'000; i < want.size(); ++i) want[i] += 3'600'000'000'000;
        want[199'999] = INT64_MIN;
        for (std::size_t i = 70'000; i < want.size(); ++i) paused.startNs.set(i, want[i]);
        QVERIFY(paused.startNs.compact(2));
        QVERIFY(paused.startNs.memoryBytes() < before.startNs.memoryBytes() * 9 / 10); // (4 B a row + 8 B a wide one)
        for (std::size_t i = 0; i < want.size(); ++i)
            if (paused.startNs[i] != want[i]) QFAIL(qPrintable(QString("paused row %1").arg(i)));
        paused.startNs.set(70'001, want[70'001] + 3); // in a wide block: stays compacted
        paused.startNs.set(10, want[10] + 3);         // in a compacted one, fitting
        QVERIFY(paused.startNs.compacted());
        QCOMPARE(paused.startNs[70'001], want[70'001] + 3);
        QCOMPARE(paused.startNs[10], want[10] + 3);
        paused.startNs.expand();
        QCOMPARE(paused.startNs[70'001], want[70'001] + 3);
        QCOMPARE(paused.startNs[199'999], INT64_MIN);
        FlowTable sparse = before; // pauses in three blocks of four and a part: more than half wide, not compacted
        for (std::size_t i : {std::size_t(70'000), std::size_t(140'000), std::size_t(196'000)})
            sparse.startNs.set(i, starts[i] + (std::int64_t(1) << 32));
        QVERIFY(!sparse.startNs.compact(2));
        QVERIFY(!sparse.startNs.compacted());
        QCOMPARE(sparse.startNs[70'000], starts[70'000] + (std::int64_t(1) << 32));
        QCOMPARE(sparse.startNs[69'999], starts[69'999]);
        for (std::size_t n : {std::size_t(65'536), std::size_t(65'537)}) { // exactly a block, and one row more
            StartColumn c;
            for (std::size_t i = 0; i < n; ++i) c.push_back(std::int64_t(i) * 7 - 1'000);
            QVERIFY(c.compact(2));
            QCOMPARE(c.size(), n);
            QCOMPARE(c.back(), std::int64_t(n - 1) * 7 - 1'000);
            QCOMPARE(c[0], std::int64_t(-1'000));
        }
        FlowTable empty;
        QVERIFY(!empty.startNs.compact());
    }

    // The order is a stable sort's by (start, end) whatever the input: nearly by start (records written as flows
    // end: each row a little out of place; blocks joined by merging where they overlap), with a few rows far out
    // of place (the blocks after one are merged pairwise), and in no order at all; with ties throughout.
    void theSortIsTheStableSortForEveryShapeOfInput_data() {
        QTest::addColumn<int>("shape");
        QTest::newRow("nearly by start") << 0;
        QTest::newRow("nearly, a few rows far out of place") << 1;
        QTest::newRow("no order") << 2;
        QTest::newRow("already sorted but for one last row") << 3;
        QTest::newRow("nearly, a block's starts over 2^31 ns apart (three radix passes)") << 4;
        QTest::newRow("nearly, a pause of 72 minutes (a block spans 2^32 ns or more)") << 5;
    }
    void theSortIsTheStableSortForEveryShapeOfInput() {
        QFETCH(int, shape);
        std::mt19937_64 rng(7 + std::uint64_t(shape));
        FlowTable t;
        const int n = 200000;
        for (int i = 0; i < n; ++i) {
            std::int64_t start = std::int64_t(i) * 3;
            if (shape == 0 || shape == 1 || shape == 5) start += std::int64_t(rng() % 5000) - 2500; // about 800 rows
            if (shape == 1 && rng() % 20000 == 0) start = std::int64_t(rng() % (3 * std::uint64_t(n)));
            if (shape == 2) start = std::int64_t(rng() % 100000);
            if (shape == 3 && i == n - 1) start = 5;
            if (shape == 4) start = std::int64_t(i) * 100'000 + std::int64_t(rng() % 5'000'000) / 1000 * 1000;
            if (shape == 5 && i >= n / 3) start += std::int64_t(1000) << 32; // 72 minutes, a multiple of 2^32 ns
            t.append(start, start + std::int64_t(rng() % 3), 0, 0, 1, 4791, 17, std::uint64_t(i), 1);
        }
        std::vector<std::uint32_t> want(t.size());
        std::iota(want.begin(), want.end(), 0u);
        std::stable_sort(want.begin(), want.end(), [&](std::uint32_t a, std::uint32_t b) {
            return std::pair(t.startNs[a], t.end(a)) < std::pair(t.startNs[b], t.end(b));
        });
        for (unsigned threads : {1u, 2u}) {
            FlowTable sorted = t;
            sorted.sortByStart(threads);
            QVERIFY(sorted.isSortedByStart());
            for (std::size_t i = 0; i < sorted.size(); ++i)
                if (sorted.bytes[i] != want[i])
                    QFAIL(qPrintable(QString("row %1: appended row %2, a stable sort puts %3 there")
                                         .arg(i)
                                         .arg(sorted.bytes[i])
                                         .arg(want[i])));
            for (std::size_t i = 0; i < sorted.size(); ++i) QCOMPARE(sorted.startNs[i], t.startNs[sorted.bytes[i]]);
        }
    }

    void theParallelSortIsTheStableSort() {
        std::mt19937_64 rng(3);
        FlowTable t;
        for (int i = 0; i < 300000; ++i) // ties in start and end: stability decides the order
            t.append(std::int64_t(rng() % 1000), std::int64_t(1000 + rng() % 3),
                     t.endpoints.intern(IpAddr::v4(std::uint32_t(i % 50))), 0, std::uint16_t(i % 65536), 4791, 17,
                     std::uint64_t(i), 1, std::uint32_t(i % 7), std::uint32_t(i % 11), std::uint32_t(i % 13));
        FlowTable one = t, many = t;
        one.sortByStart(1);
        many.sortByStart(3);
        compareTables(one, many);
        QCOMPARE(one.retransmits, many.retransmits);
        for (std::size_t i = 1; i < one.size(); ++i)
            if (one.startNs[i] == one.startNs[i - 1] && one.end(i) == one.end(i - 1))
                QVERIFY(one.bytes[i] > one.bytes[i - 1]); // appended order kept among equals
        // Every column moved with its row (each a function of the appended position, kept in bytes).
        for (std::size_t i = 0; i < many.size(); ++i) {
            const std::uint64_t at = many.bytes[i];
            QCOMPARE(many.src[i], t.src[at]);
            QCOMPARE(many.srcPort[i], std::uint16_t(at % 65536));
            QCOMPARE(many.startNs[i], t.startNs[at]);
            QCOMPARE(many.end(i), t.end(at));
            QCOMPARE(many.retransmits[i], std::uint32_t(at % 7));
            QCOMPARE(many.cnps[i], std::uint32_t(at % 11));
            QCOMPARE(many.ecnCe[i], std::uint32_t(at % 13));
        }
    }
};

QTEST_APPLESS_MAIN(TestParallelIngest)
#include "tst_parallel_ingest.moc"
