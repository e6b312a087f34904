// The capture readers: flows.csv (plain and gzip), topology.json and loadCapture/summarize, on good inputs
// in every accepted form and on malformed ones (each error must say where and what).
#include "test_util.h"
#include "io/capture.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

using namespace prism;
using namespace prism::test;
using namespace std::string_literals;

namespace {

namespace fs = std::filesystem;

std::string data(const std::string& name) { return std::string(LLMPRISM_TEST_DATA) + "/readers/" + name; }

void writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
    for (std::size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
    return s;
}

using Row =
    std::tuple<std::int64_t, std::int64_t, std::string, std::string, int, int, int, std::uint64_t, std::uint64_t>;

std::vector<Row> rows(const FlowTable& t) {
    std::vector<Row> out;
    for (std::size_t i = 0; i < t.size(); ++i) {
        FlowRecord r = t.record(i);
        out.emplace_back(r.startNs, r.endNs, r.src.toString(), r.dst.toString(), r.srcPort, r.dstPort, r.proto, r.bytes,
                         r.packets);
    }
    return out;
}

// The data rows of a plain CSV in the standard column order, parsed here independently of the reader.
std::vector<Row> expectedRows(const std::string& path) {
    std::vector<Row> out;
    std::istringstream in(readBytes(path));
    std::string line;
    bool header = false;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (!header) {
            header = true;
            continue;
        }
        std::vector<std::string> f;
        std::istringstream ls(line);
        for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
        out.emplace_back(std::stoll(f[0]), std::stoll(f[1]), f[2], f[3], std::stoi(f[4]), std::stoi(f[5]),
                         std::stoi(f[6]), std::stoull(f[7]), f.size() > 8 ? std::stoull(f[8]) : 0);
    }
    std::stable_sort(out.begin(), out.end(), [](const Row& a, const Row& b) {
        return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    return out;
}

FlowTable readCsv(const std::string& path, bool strict, LoadDiagnostics& diag) {
    LoadOptions o;
    o.strict = strict;
    return readFlowsCsv(path, o, diag);
}

std::string describe(const Row& r) {
    return std::to_string(std::get<0>(r)) + "," + std::to_string(std::get<1>(r)) + "," + std::get<2>(r) + "," +
           std::get<3>(r) + "," + std::to_string(std::get<4>(r)) + "," + std::to_string(std::get<5>(r)) + "," +
           std::to_string(std::get<6>(r)) + "," + std::to_string(std::get<7>(r)) + "," + std::to_string(std::get<8>(r));
}

// Empty when equal, else the first difference (QCOMPARE cannot print these).
std::string rowsDiff(const std::vector<Row>& got, const std::vector<Row>& want) {
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
        if (got[i] != want[i])
            return "row " + std::to_string(i) + ": got " + describe(got[i]) + ", want " + describe(want[i]);
    if (got.size() != want.size())
        return "got " + std::to_string(got.size()) + " rows, want " + std::to_string(want.size());
    return {};
}

#define COMPARE_ROWS(got, want)                                                                                        \
    do {                                                                                                               \
        std::string diff_ = rowsDiff(got, want);                                                                       \
        QVERIFY2(diff_.empty(), diff_.c_str());                                                                        \
    } while (0)

std::string keywordsMissing(const std::string& text, const QStringList& keywords) {
    std::string missing;
    for (const QString& k : keywords)
        if (!contains(text, k.toStdString())) missing.append(1, '[').append(k.toStdString()).append("] ");
    return missing;
}

// A well-formed CSV of n rows, times spread so the file is not sorted.
std::string syntheticCsv(std::size_t n) {
    std::string s = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n";
    for (std::size_t i = 0; i < n; ++i) {
        std::int64_t start = std::int64_t((i * 7919) % n) * 1000 + 1'700'000'000'000'000'000;
        s += std::to_string(start) + "," + std::to_string(start + 500 + std::int64_t(i % 97)) + ",10.0." +
             std::to_string(i % 4) + "." + std::to_string(1 + i % 200) + ",10.1." + std::to_string(i % 4) + "." +
             std::to_string(1 + (i * 13) % 200) + "," + std::to_string(49152 + i % 1000) + ",4791,17," +
             std::to_string(4096 * (1 + i % 64)) + "," + std::to_string(1 + i % 64) + "\n";
    }
    return s;
}

} // namespace

class ReadersTest : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_tmp;
    std::map<std::string, std::string> m_fixtures; // path -> bytes, before any test read them

    std::string tmp(const std::string& name) const {
        return m_tmp.filePath(QString::fromStdString(name)).toStdString();
    }

    void malformedRowsData() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<qulonglong>("line");
        QTest::addColumn<uint>("column");
        QTest::addColumn<QStringList>("keywords");
        QTest::addColumn<int>("goodRows");
        QTest::newRow("non-numeric field") << "bad_non_numeric.csv" << 4ull << 8u
                                           << QStringList{"bytes", "\"12x\"", "expected a non-negative integer"} << 3;
        QTest::newRow("end before start")
            << "bad_end_before_start.csv" << 3ull << 2u << QStringList{"end_ns 100 is before start_ns 200"} << 2;
        QTest::newRow("bad IP") << "bad_ip.csv" << 5ull << 3u
                                << QStringList{"src_ip \"10.0.0.300\" is not an IPv4 or IPv6 address"} << 3;
        QTest::newRow("negative bytes") << "bad_negative_bytes.csv" << 3ull << 8u
                                        << QStringList{"bytes \"-5\": expected a non-negative integer"} << 2;
        QTest::newRow("truncated last line")
            << "bad_truncated_last.csv" << 4ull << 5u << QStringList{"expected 9 fields, found 4", "truncated"} << 2;
        QTest::newRow("port out of range")
            << "bad_port.csv" << 3ull << 6u << QStringList{"dst_port 70000 out of range 0..65535"} << 2;
        QTest::newRow("proto out of range")
            << "bad_proto.csv" << 4ull << 7u << QStringList{"proto 300 out of range 0..255"} << 2;
        QTest::newRow("too many fields") << "bad_too_many_fields.csv" << 2ull << 10u
                                         << QStringList{"expected 9 fields, found 10"} << 1;
    }

private slots:
    // A .gz that inflates a thousandfold (valid rows, one repeated) stops at the record limit a whole load is
    // given (the memory available), in the sequential, the gzip and the parallel reader, with a message that
    // says what to do instead.
    void aThousandfoldGzipStopsAtTheRecordLimit() {
        std::string text = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n";
        const std::string row = "1000,2000,10.0.0.1,10.0.0.2,49152,4791,17,4096,4\n";
        for (int i = 0; i < 200000; ++i) text += row;
        const std::string gz = tmp("bomb.csv.gz"), plain = tmp("big.csv");
        test::writeGzip(gz, text);
        test::writeBytes(plain, text);
        QVERIFY(std::filesystem::file_size(gz) * 200 < text.size()); // inflates > 200x (about 1000x here)
        for (const std::string& file : {gz, plain})
            for (std::uint64_t parallelFrom : {std::uint64_t(16) << 20, std::uint64_t(1)}) {
                LoadOptions o;
                o.maxRecords = 50000;
                o.parallelFromBytes = parallelFrom;
                LoadDiagnostics diag;
                try {
                    readFlowsCsv(file, o, diag);
                    QFAIL("expected InputError");
                } catch (const InputError& e) {
                    QCOMPARE(e.issue().file, file);
                    QVERIFY2(e.issue().message.find("more than 50,000 records, more than fit in the memory available") == 0 &&
                                 e.issue().message.find("llmprism-cli analyze --memory SIZE") != std::string::npos,
                             e.what());
                    QCOMPARE(file == gz, e.issue().message.find("inflates") != std::string::npos);
                }
                o.maxRecords = 0; // no limit: all of it
                QCOMPARE(readFlowsCsv(file, o, diag).size(), std::size_t(200000));
            }
    }

    void initTestCase() {
        QVERIFY(m_tmp.isValid());
        for (const auto& e : fs::recursive_directory_iterator(data("")))
            if (e.is_regular_file()) m_fixtures[e.path().string()] = readBytes(e.path().string());
        QVERIFY(m_fixtures.size() > 20);
    }

    void standardFileReadsEveryFieldAndInternsEndpoints() {
        LoadDiagnostics diag;
        FlowTable t = readCsv(data("good_basic.csv"), true, diag);
        QVERIFY(diag.clean());
        COMPARE_ROWS(rows(t), expectedRows(data("good_basic.csv")));
        QCOMPARE(t.size(), std::size_t(6));
        // 10.0.0.1, 10.0.1.1, 10.0.0.2, 10.0.1.2 and the storage server 10.100.0.5, each interned once
        QCOMPARE(t.endpoints.size(), std::size_t(5));
        QCOMPARE(t.src[0], t.dst[1]);
        QVERIFY(t.isRoce(0));
        QVERIFY(!t.isRoce(3));
    }

    void acceptedVariantsReadLikeTheBasicFile_data() {
        QTest::addColumn<QString>("variant");
        for (const char* v : {"columns reordered with extras", "comments and blank lines", "rows out of order", "CRLF",
                              "UTF-8 BOM", "BOM and CRLF", "gzip named .csv.gz", "gzip named .csv",
                              "plain named .csv.gz", "no final newline", "spaces around fields"})
            QTest::newRow(v) << QString(v);
    }

    void acceptedVariantsReadLikeTheBasicFile() {
        QFETCH(QString, variant);
        const std::string basic = readBytes(data("good_basic.csv"));
        std::string path;
        std::string v = variant.toStdString();
        std::string file = tmp("variant-" + std::to_string(std::hash<std::string>{}(v)));
        if (v == "columns reordered with extras")
            path = data("good_reordered_extra.csv");
        else if (v == "comments and blank lines")
            path = data("good_comments.csv");
        else if (v == "rows out of order")
            path = data("good_unsorted.csv");
        else if (v == "CRLF")
            writeBytes(path = file + ".csv", replaceAll(basic, "\n", "\r\n"));
        else if (v == "UTF-8 BOM")
            writeBytes(path = file + ".csv", "\xEF\xBB\xBF" + basic);
        else if (v == "BOM and CRLF")
            writeBytes(path = file + ".csv", "\xEF\xBB\xBF" + replaceAll(basic, "\n", "\r\n"));
        else if (v == "gzip named .csv.gz")
            writeGzip(path = file + ".csv.gz", basic);
        else if (v == "gzip named .csv")
            writeGzip(path = file + ".csv", basic);
        else if (v == "plain named .csv.gz")
            writeBytes(path = file + ".csv.gz", basic);
        else if (v == "no final newline")
            writeBytes(path = file + ".csv", basic.substr(0, basic.size() - 1));
        else if (v == "spaces around fields")
            writeBytes(path = file + ".csv", replaceAll(replaceAll(basic, ",", " , "), "\n", " \n"));
        QVERIFY(!path.empty());
        for (bool strict : {true, false}) {
            LoadDiagnostics diag;
            FlowTable t = readCsv(path, strict, diag);
            QVERIFY2(diag.clean(), diag.errors.empty() ? "warnings" : diag.errors[0].toString().c_str());
            COMPARE_ROWS(rows(t), expectedRows(data("good_basic.csv")));
            QVERIFY(t.isSortedByStart());
        }
    }

    void numbersOfEveryLengthParseExactly() {
        // 1 to 20 digits (the fast path reads 8 at a time), the int64 and uint64 limits, and one past them
        std::string s = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n";
        std::vector<std::uint64_t> values;
        for (std::uint64_t p = 1; p <= 1'000'000'000'000'000'000ull; p *= 10) {
            values.push_back(p - 1);
            values.push_back(p);
            values.push_back(p + p / 3);
        }
        values.push_back(UINT64_MAX);
        values.push_back(10'000'000'000'000'000'000ull);
        for (std::size_t i = 0; i < values.size(); ++i)
            s += std::to_string(i) + "," + std::to_string(i) + ",10.0.0.1,10.0.0.2,0,65535,255," +
                 std::to_string(values[i]) + "," + std::to_string(values[values.size() - 1 - i]) + "\n";
        s += "-9223372036854775808,9223372036854775807,10.0.0.1,10.0.0.2,65535,0,0,0,0\n";
        const std::size_t good = values.size() + 1;
        s += "1,2,10.0.0.1,10.0.0.2,1,2,3,18446744073709551616,0\n";                  // UINT64_MAX + 1
        s += "1,2,10.0.0.1,10.0.0.2,1,2,3,123456789012345678901,0\n";                 // 21 digits
        s += "9223372036854775808,9223372036854775809,10.0.0.1,10.0.0.2,1,2,3,4,5\n"; // INT64_MAX + 1
        s += "1,2,10.0.0.1,10.0.0.2,65536,2,3,4,5\n";
        s += "1,2,10.0.0.1,10.0.0.2,1,2,256,4,5\n";
        writeBytes(tmp("numbers.csv"), s);
        LoadDiagnostics diag;
        FlowTable t = readCsv(tmp("numbers.csv"), false, diag);
        QCOMPARE(t.size(), good);
        QCOMPARE(diag.skippedRows, std::uint64_t(5));
        QVERIFY2(contains(diag.errors[0].message, "out of range 0..18446744073709551615"),
                 diag.errors[0].message.c_str());
        QCOMPARE(diag.errors[0].column, std::uint32_t(8));
        QCOMPARE(diag.errors[2].column, std::uint32_t(1));
        QVERIFY(contains(diag.errors[3].message, "src_port 65536 out of range"));
        QVERIFY(contains(diag.errors[4].message, "proto 256 out of range"));
        QCOMPARE(t.startNs.front(), INT64_MIN); // sorted first
        QCOMPARE(t.end(0), INT64_MAX);
        for (std::size_t r = 1; r < t.size(); ++r) {
            std::size_t i = std::size_t(t.startNs[r]);
            QCOMPARE(t.bytes[r], values[i]);
            QCOMPARE(t.packets[r], values[values.size() - 1 - i]);
            QCOMPARE(t.dstPort[r], std::uint16_t(65535));
            QCOMPARE(t.proto[r], std::uint8_t(255));
        }
    }

    // Stamps under the canonical header reuse the value of their first 8 digits where the last stamp had the same:
    // start and end of a row, rows one after another, of any length from 8 digits up, and rows that are not well
    // formed after such digits (sent to the full check, which reports them).
    void stampsSharingTheirLeadingDigitsParseExactly() {
        const std::vector<std::pair<std::string, std::string>> stamps = {{"1793491200000010847", "1793491200000070374"},
                                                                         {"1793491200000015847", "1793491299999999999"},
                                                                         {"12345678", "12345678"},
                                                                         {"12345678", "123456789"},
                                                                         {"1234567812345678", "1234567812345679"},
                                                                         {"1793491", "17934912"},
                                                                         {"17934912", "1793491200"},
                                                                         {"9223372036854775806", "9223372036854775807"},
                                                                         {"92233720", "922337203685477580"},
                                                                         {"10000000", "100000000000000000"}};
        std::string text = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n";
        std::vector<Row> want;
        for (const auto& [start, end] : stamps) {
            text += start + "," + end + ",10.0.0.1,10.0.0.2,1,4791,17,100,1\n";
            want.emplace_back(std::stoll(start), std::stoll(end), "10.0.0.1", "10.0.0.2", 1, 4791, 17, 100, 1);
        }
        text += "1234567812345678,1234567812345678x,10.0.0.1,10.0.0.2,1,4791,17,100,1\n";      // a cached head, then x
        text += "9223372036854775806,9223372036854775808,10.0.0.1,10.0.0.2,1,4791,17,100,1\n"; // INT64_MAX + 1
        writeBytes(tmp("stamps.csv"), text);
        std::stable_sort(want.begin(), want.end(), [](const Row& a, const Row& b) {
            return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
        });
        LoadDiagnostics diag;
        const FlowTable t = readCsv(tmp("stamps.csv"), false, diag);
        COMPARE_ROWS(rows(t), want);
        QCOMPARE(diag.skippedRows, std::uint64_t(2));
        QCOMPARE(diag.errors.size(), std::size_t(2));
        QCOMPARE(diag.errors[0].line, std::uint64_t(stamps.size() + 2));
        QCOMPARE(diag.errors[1].line, std::uint64_t(stamps.size() + 3));
    }

    // A row is read to its line end without looking for it first: "\r\n" ends a line, a lone CR does not (the
    // two rows it stands between are one line, not well formed, reported), and a stray CR before "\r\n" is taken
    // as the line is when its end is looked for first (trimmed: the row is read).
    void aLoneCarriageReturnEndsNoLine() {
        const std::string row = "1000,2000,10.0.0.1,10.0.0.2,49152,4791,17,4096,4";
        writeBytes(tmp("lone-cr.csv"), "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n" + row +
                                           "\r" + row + "\n" + row + "\r\r\n" + row + "\r\n");
        LoadDiagnostics diag;
        const FlowTable t = readCsv(tmp("lone-cr.csv"), false, diag);
        QCOMPARE(t.size(), std::size_t(2));
        QCOMPARE(diag.skippedRows, std::uint64_t(1));
        QCOMPARE(diag.errors.at(0).line, std::uint64_t(2));
        for (std::size_t i = 0; i < t.size(); ++i) QCOMPARE(t.packets[i], std::uint64_t(4));
    }

    void headerProblemsThatAreNotFatalBecomeWarnings() {
        std::string basic = readBytes(data("good_basic.csv"));
        std::string dup = replaceAll(basic, "packets\n", "packets,Bytes\n");
        std::size_t firstRow = dup.find('\n') + 1;
        dup = dup.substr(0, firstRow) + replaceAll(dup.substr(firstRow), "\n", ",7\n");
        writeBytes(tmp("dup-column.csv"), dup);
        LoadDiagnostics diag;
        FlowTable t = readCsv(tmp("dup-column.csv"), true, diag);
        COMPARE_ROWS(rows(t), expectedRows(data("good_basic.csv"))); // the first "bytes" column is used
        QCOMPARE(diag.warningCount, std::uint64_t(1));
        QCOMPARE(diag.warnings[0].column, std::uint32_t(10));
        QVERIFY2(contains(diag.warnings[0].message, "appears twice"), diag.warnings[0].message.c_str());
    }

    void classicMacLineEndsAreRejectedNotReadAsOneLine() {
        writeBytes(tmp("cr.csv"), replaceAll(readBytes(data("good_basic.csv")), "\n", "\r"));
        LoadDiagnostics diag;
        try {
            readCsv(tmp("cr.csv"), false, diag);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(contains(e.issue().message, "lone CR"), e.what());
        }
    }

    void missingPacketsColumnReadsAsZero() {
        LoadDiagnostics diag;
        FlowTable t = readCsv(data("good_no_packets.csv"), true, diag);
        QVERIFY(diag.clean());
        auto expected = expectedRows(data("good_basic.csv"));
        for (auto& r : expected) std::get<8>(r) = 0;
        COMPARE_ROWS(rows(t), expected);
    }

    void ipv6EndpointsAreParsedAndInternedByAddress() {
        LoadDiagnostics diag;
        FlowTable t = readCsv(data("good_ipv6.csv"), true, diag);
        QVERIFY(diag.clean());
        QCOMPARE(t.size(), std::size_t(4));
        QCOMPARE(t.endpoints.at(t.src[0]).toString(), std::string("fd00::1"));
        QVERIFY(t.endpoints.at(t.src[0]).v6);
        QCOMPARE(t.dst[1], t.src[0]); // FD00:0:0:0:0:0:0:1 is fd00::1
        QCOMPARE(t.src[2], t.dst[2]); // ::ffff:10.0.0.1 is 10.0.0.1
        QVERIFY(!t.endpoints.at(t.src[2]).v6);
        QCOMPARE(t.endpoints.at(t.src[3]).toString(), std::string("2001:db8:85a3::8a2e:370:7334"));
        QCOMPARE(t.endpoints.size(), std::size_t(4));
    }

    void inputsWithoutRowsGiveAnEmptyTable_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("warnsNoHeader");
        QTest::newRow("zero bytes") << "empty.csv" << true;
        QTest::newRow("only a #") << "only_comment.csv" << true;
        QTest::newRow("header only") << "header_only.csv" << false;
    }

    void inputsWithoutRowsGiveAnEmptyTable() {
        QFETCH(QString, file);
        QFETCH(bool, warnsNoHeader);
        for (bool strict : {true, false}) {
            LoadDiagnostics diag;
            FlowTable t = readCsv(data(file.toStdString()), strict, diag);
            QVERIFY(t.empty());
            QCOMPARE(diag.skippedRows, std::uint64_t(0));
            QCOMPARE(diag.warningCount, std::uint64_t(warnsNoHeader ? 1 : 0));
            if (warnsNoHeader) QVERIFY(contains(diag.warnings.at(0).message, "no header"));
        }
    }

    void malformedRowStopsAStrictLoadSayingWhereAndWhat_data() { malformedRowsData(); }

    void malformedRowStopsAStrictLoadSayingWhereAndWhat() {
        QFETCH(QString, file);
        QFETCH(qulonglong, line);
        QFETCH(uint, column);
        QFETCH(QStringList, keywords);
        LoadDiagnostics diag;
        try {
            readCsv(data(file.toStdString()), true, diag);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            const InputIssue& i = e.issue();
            QCOMPARE(i.file, data(file.toStdString()));
            QCOMPARE(i.line, std::uint64_t(line));
            QCOMPARE(i.column, std::uint32_t(column));
            QVERIFY2(keywordsMissing(i.message, keywords).empty(), i.message.c_str());
            // "path:line:column: message", the form editors and terminals link to
            std::string where =
                data(file.toStdString()) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
            QVERIFY2(std::string(e.what()).rfind(where, 0) == 0, e.what());
        }
    }

    void malformedRowIsSkippedAndReportedInALenientLoad_data() { malformedRowsData(); }

    void malformedRowIsSkippedAndReportedInALenientLoad() {
        QFETCH(QString, file);
        QFETCH(qulonglong, line);
        QFETCH(uint, column);
        QFETCH(QStringList, keywords);
        QFETCH(int, goodRows);
        LoadDiagnostics diag;
        FlowTable t = readCsv(data(file.toStdString()), false, diag);
        QCOMPARE(int(t.size()), goodRows);
        QCOMPARE(diag.skippedRows, std::uint64_t(1));
        QCOMPARE(diag.errors.size(), std::size_t(1));
        QCOMPARE(diag.warningCount, std::uint64_t(0));
        const InputIssue& i = diag.errors[0];
        QCOMPARE(i.file, data(file.toStdString()));
        QCOMPARE(i.line, std::uint64_t(line));
        QCOMPARE(i.column, std::uint32_t(column));
        QVERIFY2(keywordsMissing(i.message, keywords).empty(), i.message.c_str());
        // the rows kept are rows of good_basic.csv, which the bad files are made of
        auto basic = expectedRows(data("good_basic.csv"));
        for (const Row& r : rows(t))
            QVERIFY2(std::find(basic.begin(), basic.end(), r) != basic.end(), describe(r).c_str());
    }

    void headerWithoutARequiredColumnIsFatalInBothModes_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QStringList>("keywords");
        QTest::newRow("two columns missing")
            << "bad_missing_column.csv"
            << QStringList{"missing required column(s) end_ns, bytes", "found columns", "\"start_ns\"", "\"comment\""};
        QTest::newRow("no header at all")
            << "bad_no_header.csv" << QStringList{"no header row", "start_ns", "\"1000\""};
    }

    void headerWithoutARequiredColumnIsFatalInBothModes() {
        QFETCH(QString, file);
        QFETCH(QStringList, keywords);
        for (bool strict : {true, false}) {
            LoadDiagnostics diag;
            try {
                readCsv(data(file.toStdString()), strict, diag);
                QFAIL("expected InputError");
            } catch (const InputError& e) {
                QCOMPARE(e.issue().file, data(file.toStdString()));
                QCOMPARE(e.issue().line, std::uint64_t(1));
                QVERIFY2(keywordsMissing(e.issue().message, keywords).empty(), e.what());
            }
        }
    }

    // A header of thousands of fields (fuzzing made one of 40,000 in a 700-byte .gz): the message names the
    // first 20 found and counts the rest, instead of growing as long as the line.
    void aHeaderOfThousandsOfFieldsGetsAShortMessage() {
        std::string header = "start_ns";
        for (int i = 1; i < 5000; ++i) header += ",src_ns";
        const std::string path = tmp("wide_header.csv");
        writeBytes(path, header + "\n1,2\n");
        LoadDiagnostics diag;
        try {
            readCsv(path, false, diag);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            const std::string& m = e.issue().message;
            QVERIFY2(m.find("missing required column(s) end_ns, src_ip, dst_ip") != std::string::npos, m.c_str());
            QVERIFY2(m.find("found columns \"start_ns\", \"src_ns\"") != std::string::npos, m.c_str());
            QVERIFY2(m.find(" and 4980 more (expected start_ns,end_ns") != std::string::npos, m.c_str());
            QVERIFY2(m.size() < 800, m.c_str());
        }
    }

    void binaryGarbageInARowIsReportedAsBinary() {
        std::string basic = readBytes(data("good_basic.csv"));
        std::string garbage = "1000,2000,10.0.0.1,\x00\x01\x02\xff\xfe,49152,4791,17,1,1\n"s;
        std::size_t third = basic.find('\n', basic.find('\n', basic.find('\n') + 1) + 1) + 1; // after line 3
        writeBytes(tmp("binary-row.csv"), basic.substr(0, third) + garbage + basic.substr(third));
        LoadDiagnostics diag;
        try {
            readCsv(tmp("binary-row.csv"), true, diag);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().line, std::uint64_t(4));
            QCOMPARE(e.issue().column, std::uint32_t(4));
            QVERIFY2(contains(e.issue().message, "binary data: not a text CSV file"), e.what());
        }
        FlowTable t = readCsv(tmp("binary-row.csv"), false, diag);
        COMPARE_ROWS(rows(t), expectedRows(data("good_basic.csv")));
        QCOMPARE(diag.skippedRows, std::uint64_t(1));
    }

    void binaryFileIsRejectedAtItsHeader() {
        std::mt19937 rng(7);
        std::string bytes(1 << 16, '\0');
        for (char& c : bytes) c = char(rng());
        writeBytes(tmp("random.bin"), bytes);
        // a PNG-like start: text-looking magic, then binary
        writeBytes(tmp("image.csv"), std::string("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 16) + bytes);
        for (const char* name : {"random.bin", "image.csv"}) {
            for (bool strict : {true, false}) {
                LoadDiagnostics diag;
                try {
                    readCsv(tmp(name), strict, diag);
                    QFAIL("expected InputError");
                } catch (const InputError& e) {
                    QVERIFY2(contains(e.issue().message, "binary data"), e.what());
                    QVERIFY(e.issue().line >= 1);
                }
            }
        }
    }

    void lenientLoadCountsEverySkippedRowAndKeepsTheFirst20Messages() {
        std::string s = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n";
        const int rowCount = 60; // the even rows (30) have a bad address
        for (int i = 0; i < rowCount; ++i)
            s += std::to_string(1000 + i) + ",2000000," + (i % 2 == 0 ? "10.0.0.999" : "10.0.0.1") +
                 ",10.0.0.2,1,4791,17,10,1\n";
        writeBytes(tmp("many-bad.csv"), s);
        LoadDiagnostics diag;
        FlowTable t = readCsv(tmp("many-bad.csv"), false, diag);
        QCOMPARE(t.size(), std::size_t(rowCount / 2));
        QCOMPARE(diag.skippedRows, std::uint64_t(rowCount / 2));
        QCOMPARE(diag.errors.size(), LoadDiagnostics::kMaxMessages);
        QCOMPARE(diag.errors.front().line, std::uint64_t(2)); // row 0 is on line 2
        QCOMPARE(diag.errors[1].line, std::uint64_t(4));
        for (const InputIssue& i : diag.errors) QVERIFY(contains(i.message, "\"10.0.0.999\""));
    }

    void veryLongLineIsAnErrorNotACrash() {
        std::string basic = readBytes(data("good_basic.csv"));
        std::size_t second = basic.find('\n') + 1;
        std::string longLine(9u << 20, 'x');
        writeBytes(tmp("long.csv"), basic.substr(0, second) + longLine + "\n" + basic.substr(second) +
                                        "1,2,10.0.0.1,10.0.0.2,1,2,3,bad,5\n");
        LoadDiagnostics diag;
        FlowTable t = readCsv(tmp("long.csv"), false, diag);
        COMPARE_ROWS(rows(t), expectedRows(data("good_basic.csv")));
        QCOMPARE(diag.skippedRows, std::uint64_t(2));
        QCOMPARE(diag.errors.at(0).line, std::uint64_t(2));
        QVERIFY2(contains(diag.errors[0].message, "longer than"), diag.errors[0].message.c_str());
        QCOMPARE(diag.errors.at(1).line, std::uint64_t(9)); // line numbers stay right after the long line
        QVERIFY_THROWS_EXCEPTION(InputError, readCsv(tmp("long.csv"), true, diag));
        // as the first line it is fatal: there is no header to be found
        writeBytes(tmp("long-header.csv"), longLine);
        QVERIFY_THROWS_EXCEPTION(InputError, readCsv(tmp("long-header.csv"), false, diag));
    }

    void missingInputIsAnInputErrorNamingThePath() {
        const std::string nowhere = tmp("does-not-exist/flows.csv");
        LoadDiagnostics diag;
        try {
            readCsv(nowhere, false, diag);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().file, nowhere);
            QVERIFY2(contains(e.issue().message, "cannot open"), e.what());
        }
        try {
            readTopologyJson(tmp("nowhere.json"));
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().file, tmp("nowhere.json"));
        }
        try {
            loadCapture(tmp("no-such-capture"));
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().file, tmp("no-such-capture"));
            QVERIFY2(contains(e.issue().message, "no such file or folder"), e.what());
        }
        fs::create_directories(tmp("empty-capture"));
        try {
            loadCapture(tmp("empty-capture"));
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(contains(e.issue().message, "no flows.csv or flows.csv.gz in " + tmp("empty-capture")), e.what());
        }
        try {
            readCsv(m_tmp.path().toStdString(), false, diag); // a folder is not a flows file
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QVERIFY2(contains(e.issue().message, "folder"), e.what());
        }
    }

    void damagedGzipKeepsTheRowsBeforeTheDamageWhenLenient_data() {
        QTest::addColumn<QString>("damage");
        QTest::newRow("truncated") << "truncated";
        QTest::newRow("bytes overwritten") << "overwritten";
    }

    void damagedGzipKeepsTheRowsBeforeTheDamageWhenLenient() {
        QFETCH(QString, damage);
        const std::string csv = syntheticCsv(40000);
        writeBytes(tmp("whole.csv"), csv);
        writeGzip(tmp("whole.csv.gz"), csv);
        std::string gz = readBytes(tmp("whole.csv.gz"));
        if (damage == "truncated")
            gz.resize(gz.size() * 6 / 10);
        else
            for (std::size_t i = gz.size() / 2; i < gz.size() / 2 + 64; ++i) gz[i] = char(~gz[i]);
        writeBytes(tmp("damaged.csv.gz"), gz);

        LoadDiagnostics diag;
        try {
            readCsv(tmp("damaged.csv.gz"), true, diag);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            // overwritten bytes may first decode to a garbage row, which stops a strict load by itself
            if (damage == "truncated") QVERIFY2(contains(e.issue().message, "compressed data ended early"), e.what());
        }
        FlowTable t = readCsv(tmp("damaged.csv.gz"), false, diag);
        QVERIFY(diag.skippedRows >= 1);
        // the file-level problem is the first message, whatever garbage rows came before it
        QVERIFY2(contains(diag.errors.at(0).message,
                          damage == "truncated" ? "compressed data ended early" : "compressed data is corrupt"),
                 diag.errors.at(0).toString().c_str());
        QVERIFY(t.size() > 0);
        QVERIFY(t.size() < 40000);
        QVERIFY(readBytes(tmp("damaged.csv.gz")) == gz); // never written to
        // Overwritten bytes decode to garbage before zlib notices, so only a truncation promises clean rows:
        // every row kept is a row of the original file and the partial line at the break is not among them.
        if (damage != "truncated") return;
        LoadDiagnostics clean;
        auto all = rows(readCsv(tmp("whole.csv"), true, clean));
        std::map<Row, int> pool;
        for (const Row& r : all) ++pool[r];
        for (const Row& r : rows(t)) QVERIFY(--pool[r] >= 0);
    }

    void progressIsReportedAndCancelStopsTheLoad_data() {
        QTest::addColumn<bool>("gzip");
        QTest::newRow("plain") << false;
        QTest::newRow("gzip") << true;
    }

    void progressIsReportedAndCancelStopsTheLoad() {
        QFETCH(bool, gzip);
        const std::string csv = syntheticCsv(250000); // ~22 MB: several progress calls
        std::string path = tmp(gzip ? "progress.csv.gz" : "progress.csv");
        if (gzip)
            writeGzip(path, csv);
        else
            writeBytes(path, csv);

        std::vector<double> seen;
        LoadOptions o;
        o.progress = [&](double f) {
            seen.push_back(f);
            return true;
        };
        LoadDiagnostics diag;
        FlowTable t = readFlowsCsv(path, o, diag);
        QCOMPARE(t.size(), std::size_t(250000));
        QVERIFY(seen.size() >= 3);
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));
        QVERIFY(seen.front() >= 0.0);
        QCOMPARE(seen.back(), 1.0);

        int calls = 0;
        o.progress = [&](double) { return ++calls < 2; };
        QVERIFY_THROWS_EXCEPTION(Cancelled, readFlowsCsv(path, o, diag));
        QCOMPARE(calls, 2);
    }

    void randomDamageNeverCrashesTheReader() {
        const std::string basic = readBytes(data("good_comments.csv"));
        std::mt19937 rng(12345);
        int accepted = 0, rejected = 0;
        for (int round = 0; round < 400; ++round) {
            std::string s = basic;
            int edits = 1 + int(rng() % 8);
            for (int k = 0; k < edits && !s.empty(); ++k) {
                std::size_t at = rng() % s.size();
                switch (rng() % 4) {
                case 0:
                    s[at] = char(rng());
                    break; // any byte
                case 1:
                    s.erase(at, 1 + rng() % 20);
                    break; // cut
                case 2:
                    s.insert(at, 1, ",\n\r\"#-:.0"[rng() % 9]);
                    break; // CSV-significant characters
                case 3:
                    s.resize(at);
                    break; // truncate
                }
            }
            writeBytes(tmp("fuzz.csv"), s);
            for (bool strict : {true, false}) {
                LoadDiagnostics diag;
                try {
                    FlowTable t = readCsv(tmp("fuzz.csv"), strict, diag);
                    QVERIFY(t.isSortedByStart());
                    for (std::size_t i = 0; i < t.size(); ++i) {
                        QVERIFY(t.end(i) >= t.startNs[i]);
                        QVERIFY(t.src[i] < t.endpoints.size() && t.dst[i] < t.endpoints.size());
                    }
                    ++accepted;
                } catch (const InputError&) {
                    ++rejected;
                }
            }
        }
        QVERIFY(accepted > 0);
        QVERIFY(rejected > 0);
    }

    void topologyReadsHostsNicsAndSwitches() {
        Topology t = readTopologyJson(data("capture_ok/topology.json"));
        QCOMPARE(t.hosts.size(), std::size_t(2));
        QCOMPARE(t.nics.size(), std::size_t(4));
        QCOMPARE(t.switches.size(), std::size_t(3));
        QCOMPARE(t.gpuCount(), 5);
        auto n = t.nicByIp(*IpAddr::parse("10.0.0.2"));
        QVERIFY(n);
        QCOMPARE(t.nics[*n].gpus, (std::vector<int>{1, 2}));
        QCOMPARE(t.nics[*n].rail, 1);
        QCOMPARE(t.hosts[t.nics[*n].host].name, std::string("node-a"));
        QCOMPARE(t.switches[t.nics[*n].switchIndex].name, std::string("leaf-1"));
        auto unlisted = t.nicByIp(*IpAddr::parse("10.0.1.2"));
        QVERIFY(unlisted);
        QCOMPARE(t.nics[*unlisted].switchName, std::string("leaf-9"));
        QCOMPARE(t.nics[*unlisted].switchIndex, -1); // accepted; loadCapture warns
        QCOMPARE(t.switches[0].uplinks, std::vector<std::string>{"spine-0"});
        QCOMPARE(t.rankLabel(*IpAddr::parse("10.0.1.2")), std::string("node-b:1"));
        // A shared NIC: its label names its GPUs, and GPU counts come from the topology, not addresses.
        QCOMPARE(t.rankLabel(*IpAddr::parse("10.0.0.2")), std::string("node-a:gpus 1–2"));
        QCOMPARE(t.gpusBehind(*IpAddr::parse("10.0.0.2")), 2);
        QCOMPARE(t.gpusBehind(*IpAddr::parse("10.0.1.2")), 1);
        QCOMPARE(t.gpusBehind(*IpAddr::parse("10.9.9.9")), 1); // not in the topology
        t.nics[*n].gpus = {0, 3};
        QCOMPARE(t.rankLabel(*IpAddr::parse("10.0.0.2")), std::string("node-a:gpus 0, 3"));
    }

    void topologyErrorsSayWhereAndWhat_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<qulonglong>("line");
        QTest::addColumn<uint>("column");
        QTest::addColumn<QStringList>("keywords");
        QTest::newRow("JSON syntax") << "topo_bad_syntax.json" << 4ull << 5u
                                     << QStringList{"invalid JSON", "expected ']'"};
        QTest::newRow("empty file") << "topo_empty.json" << 1ull << 1u << QStringList{"invalid JSON", "end of input"};
        QTest::newRow("wrong type") << "topo_wrong_type.json" << 0ull << 0u
                                    << QStringList{"hosts[1].nics[0].gpu", "expected a non-negative integer",
                                                   "found string \"0\""};
        QTest::newRow("duplicate NIC ip") << "topo_duplicate_ip.json" << 0ull << 0u
                                          << QStringList{"hosts[1].nics[0].ip", "duplicate NIC ip 10.0.0.1",
                                                         "\"node-a\"", "\"node-b\"", "hosts[0].nics[0]"};
        QTest::newRow("negative rail") << "topo_negative_rail.json" << 0ull << 0u
                                       << QStringList{"hosts[0].nics[1].rail", "non-negative", "-1"};
        QTest::newRow("negative gpu") << "topo_negative_gpu.json" << 0ull << 0u
                                      << QStringList{"hosts[0].nics[0].gpus[1]", "non-negative", "-3"};
        QTest::newRow("missing ip") << "topo_missing_ip.json" << 0ull << 0u
                                    << QStringList{"hosts[0].nics[0]", "missing field \"ip\""};
        QTest::newRow("duplicate host") << "topo_duplicate_host.json" << 0ull << 0u
                                        << QStringList{"hosts[2].name", "duplicate host name \"node-a\"", "hosts[0]"};
        QTest::newRow("bad ip") << "topo_bad_ip.json" << 0ull << 0u
                                << QStringList{"hosts[0].nics[1].ip", "\"10.0.0.300\" is not an IPv4 or IPv6 address"};
        QTest::newRow("hosts not an array") << "topo_hosts_not_array.json" << 0ull << 0u
                                            << QStringList{"hosts: expected an array of hosts, found an object"};
        QTest::newRow("hosts missing") << "topo_missing_hosts.json" << 0ull << 0u
                                       << QStringList{"missing field \"hosts\""};
    }

    void topologyErrorsSayWhereAndWhat() {
        QFETCH(QString, file);
        QFETCH(qulonglong, line);
        QFETCH(uint, column);
        QFETCH(QStringList, keywords);
        try {
            readTopologyJson(data(file.toStdString()));
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().file, data(file.toStdString()));
            QCOMPARE(e.issue().line, std::uint64_t(line));
            QCOMPARE(e.issue().column, std::uint32_t(column));
            QVERIFY2(keywordsMissing(e.issue().message, keywords).empty(), e.what());
        }
    }

    // A hostfile with addresses is a topology too (recognised by content): ip,host[,switch[,gpus]], with or
    // without a header (columns then by name), # comments; each NIC its host's next rail and GPU unless its gpus
    // field says (3, 0-1, 0;2).
    void aHostfileIsATopology() {
        const std::string plain = tmp("hosts-plain.csv"), named = tmp("hosts-named.csv");
        writeFile(plain, "# ip,host\n10.0.0.1,node-a,leaf-1\n10.0.0.2,node-a,leaf-2,1-2\n\n10.0.1.1,node-b\n");
        writeFile(named, "host, gpus ,ip\nnode-a,0;3,fd00::1\nnode-b,,10.0.1.1\n");
        const Topology t = readTopologyJson(plain);
        QCOMPARE(t.hosts.size(), std::size_t(2));
        QCOMPARE(t.nics.size(), std::size_t(3));
        QCOMPARE(t.gpuCount(), 4);
        const auto n = t.nicByIp(*IpAddr::parse("10.0.0.2"));
        QVERIFY(n);
        QCOMPARE(t.nics[*n].gpus, (std::vector<int>{1, 2}));
        QCOMPARE(t.nics[*n].rail, 1);
        QCOMPARE(t.switches[std::size_t(t.nics[*n].switchIndex)].name, std::string("leaf-2"));
        QCOMPARE(t.rankLabel(*IpAddr::parse("10.0.1.1")), std::string("node-b:0"));
        const Topology u = readTopologyJson(named);
        QCOMPARE(u.nics.size(), std::size_t(2));
        QCOMPARE(u.nics[std::size_t(*u.nicByIp(*IpAddr::parse("fd00::1")))].gpus, (std::vector<int>{0, 3}));
        QCOMPARE(u.hosts[std::size_t(u.nics[std::size_t(*u.nicByIp(*IpAddr::parse("10.0.1.1")))].host)].name,
                 std::string("node-b"));
    }

    void hostfileErrorsSayWhereAndWhat_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qulonglong>("line");
        QTest::addColumn<uint>("column");
        QTest::addColumn<QStringList>("keywords");
        QTest::newRow("bad ip") << "10.0.0.1,a\n10.0.0.300,a\n" << 2ull << 1u
                                << QStringList{"\"10.0.0.300\" is not an IP address", "ip,host"};
        QTest::newRow("NIC twice") << "10.0.0.1,a\n# c\n10.0.0.1,b\n" << 3ull << 1u
                                   << QStringList{"10.0.0.1 is listed twice", "line 1"};
        QTest::newRow("no host") << "10.0.0.1,a\n10.0.0.2,\n" << 2ull << 2u << QStringList{"host name is missing"};
        QTest::newRow("bad gpus") << "10.0.0.1,a,leaf,2-1\n" << 1ull << 4u
                                  << QStringList{"\"2-1\" is no GPU list", "range (0-1)"};
        QTest::newRow("too many fields") << "10.0.0.1,a,leaf,0,x\n" << 1ull << 5u << QStringList{"too many fields"};
        QTest::newRow("unknown column") << "ip,host,rack\n10.0.0.1,a,r1\n" << 1ull << 3u
                                        << QStringList{"unknown column \"rack\"", "ip, host, switch, gpus"};
        QTest::newRow("header without host") << "ip,switch\n10.0.0.1,leaf\n" << 1ull << 0u
                                             << QStringList{"no \"ip\" or no \"host\" column"};
        QTest::newRow("no NIC") << "ip,host\n# none yet\n" << 0ull << 0u << QStringList{"no NIC listed"};
    }
    void hostfileErrorsSayWhereAndWhat() {
        QFETCH(QString, text);
        QFETCH(qulonglong, line);
        QFETCH(uint, column);
        QFETCH(QStringList, keywords);
        const std::string path = tmp("hosts-bad.csv");
        writeFile(path, text.toStdString());
        try {
            readTopologyJson(path);
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().file, path);
            QCOMPARE(e.issue().line, std::uint64_t(line));
            QCOMPARE(e.issue().column, std::uint32_t(column));
            QVERIFY2(keywordsMissing(e.issue().message, keywords).empty(), e.what());
        }
    }

    void captureLoadsFromAFolderOrEitherFile_data() {
        QTest::addColumn<QString>("form");
        QTest::newRow("folder") << "folder";
        QTest::newRow("folder with a trailing slash") << "folder/";
        QTest::newRow("flows file") << "flows";
        QTest::newRow("topology file") << "topology";
        QTest::newRow("folder with flows.csv.gz") << "gz folder";
    }

    void captureLoadsFromAFolderOrEitherFile() {
        QFETCH(QString, form);
        const std::string folder = data("capture_ok");
        std::string source, flows = folder + "/flows.csv", topology = folder + "/topology.json";
        if (form == "folder")
            source = folder;
        else if (form == "folder/")
            source = folder + "/";
        else if (form == "flows")
            source = flows;
        else if (form == "topology")
            source = topology;
        else {
            fs::create_directories(tmp("gzcap"));
            writeGzip(tmp("gzcap/flows.csv.gz"), readBytes(flows));
            fs::copy_file(topology, tmp("gzcap/topology.json"), fs::copy_options::overwrite_existing);
            source = tmp("gzcap");
            flows = tmp("gzcap/flows.csv.gz");
            topology = tmp("gzcap/topology.json");
        }
        Capture c = loadCapture(source);
        QVERIFY(c.source == source);
        QVERIFY2(fs::weakly_canonical(c.flowsPath) == fs::weakly_canonical(flows), c.flowsPath.c_str());
        QVERIFY2(fs::weakly_canonical(c.topologyPath) == fs::weakly_canonical(topology), c.topologyPath.c_str());
        QVERIFY(c.hasTopology);
        COMPARE_ROWS(rows(c.flows), expectedRows(data("capture_ok/flows.csv")));
        QCOMPARE(c.topology.nics.size(), std::size_t(4));
    }

    void captureWarnsAboutUnknownRoceEndpointsAndUnlistedSwitches() {
        Capture c = loadCapture(data("capture_ok"));
        const LoadDiagnostics& d = c.diagnostics;
        QCOMPARE(d.skippedRows, std::uint64_t(0));
        QCOMPARE(d.warningCount, std::uint64_t(2));
        std::string all;
        for (const InputIssue& w : d.warnings) all += w.toString() + "\n";
        QVERIFY2(contains(all, "RoCE endpoint 10.9.9.9 is not a NIC in topology.json (3 records)"), all.c_str());
        QVERIFY2(contains(all, "\"leaf-9\""), all.c_str());
        QVERIFY2(!contains(all, "10.100.0.5"), all.c_str()); // storage traffic is not RoCE: no warning
    }

    void unknownRoceEndpointWarningsKeep20AndCountAll() {
        std::string s = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n";
        for (int i = 0; i < 30; ++i)
            s += std::to_string(i) + ",100,10.0.0.1,10.7.0." + std::to_string(i) + ",1,4791,17,1,1\n";
        fs::create_directories(tmp("unknowns"));
        writeBytes(tmp("unknowns/flows.csv"), s);
        fs::copy_file(data("capture_ok/topology.json"), tmp("unknowns/topology.json"),
                      fs::copy_options::overwrite_existing);
        Capture c = loadCapture(tmp("unknowns"));
        QCOMPARE(c.diagnostics.warningCount, std::uint64_t(30 + 1)); // 30 endpoints + leaf-9
        QCOMPARE(c.diagnostics.warnings.size(), LoadDiagnostics::kMaxMessages);
        QCOMPARE(summarize(c).unknownRoceEndpoints, std::uint64_t(30));
    }

    // Counted in parts side by side on a capture of several parts (65536 records or more each): every record
    // counted once, for its source and (when another) its destination, in whichever part it falls.
    void unknownRoceEndpointCountsCoverEveryRecord() {
        std::string s = "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n";
        std::map<std::string, std::uint64_t> expected;
        const int rows = 200000;
        for (int i = 0; i < rows; ++i) {
            const bool roce = i % 3 != 0;
            const std::string dst = "10.7.0." + std::to_string(i % 7 + i / 50000); // some only in later parts
            const std::string src = i % 11 == 0 ? dst : "10.0.0.1";                // (a record to itself: once)
            s += std::to_string(i) + "," + std::to_string(i + 100) + "," + src + "," + dst + ",1," +
                 (roce ? "4791" : "80") + ",17,1,1\n";
            if (roce) ++expected[dst];
        }
        fs::create_directories(tmp("unknowns-parts"));
        writeBytes(tmp("unknowns-parts/flows.csv"), s);
        fs::copy_file(data("capture_ok/topology.json"), tmp("unknowns-parts/topology.json"),
                      fs::copy_options::overwrite_existing);
        Capture c = loadCapture(tmp("unknowns-parts"));
        const std::vector<UnknownEndpoint> unknown = unknownRoceEndpoints(c.flows, c.topology);
        QCOMPARE(unknown.size(), expected.size());
        for (const UnknownEndpoint& u : unknown)
            QCOMPARE(u.records, expected.at(c.flows.endpoints.at(u.id).toString()));
        QCOMPARE(summarize(c).unknownRoceEndpoints, std::uint64_t(expected.size()));
    }

    void captureWithoutTopologyWarnsThatEachNicIsAHost() {
        fs::create_directories(tmp("notopo"));
        fs::copy_file(data("capture_ok/flows.csv"), tmp("notopo/flows.csv"), fs::copy_options::overwrite_existing);
        Capture c = loadCapture(tmp("notopo"));
        QVERIFY(!c.hasTopology);
        QVERIFY(c.topologyPath.empty());
        QCOMPARE(c.diagnostics.warningCount, std::uint64_t(1));
        QVERIFY(
            contains(c.diagnostics.warnings.at(0).message, "no topology.json: each NIC is treated as its own host"));
        CaptureSummary s = summarize(c);
        QCOMPARE(s.hosts, std::uint64_t(5)); // the RoCE endpoints: 4 NICs and 10.9.9.9
        QCOMPARE(s.unknownRoceEndpoints, std::uint64_t(0));
    }

    void captureWithABadTopologyFailsBeforeReadingFlows() {
        fs::create_directories(tmp("badtopo"));
        fs::copy_file(data("topo_duplicate_ip.json"), tmp("badtopo/topology.json"),
                      fs::copy_options::overwrite_existing);
        writeBytes(tmp("badtopo/flows.csv"), "not,a,flows,file\n");
        try {
            loadCapture(tmp("badtopo"));
            QFAIL("expected InputError");
        } catch (const InputError& e) {
            QCOMPARE(e.issue().file, tmp("badtopo/topology.json"));
        }
    }

    void summaryCountsRecordsBytesEndpointsAndProblems() {
        Capture c = loadCapture(data("capture_ok"));
        CaptureSummary s = summarize(c);
        auto expected = expectedRows(data("capture_ok/flows.csv"));
        std::uint64_t roce = 0, roceBytes = 0, otherBytes = 0;
        std::int64_t first = INT64_MAX, last = INT64_MIN;
        for (const Row& r : expected) {
            bool isRoce = std::get<6>(r) == 17 && std::get<5>(r) == 4791;
            roce += isRoce;
            (isRoce ? roceBytes : otherBytes) += std::get<7>(r);
            first = std::min(first, std::get<0>(r));
            last = std::max(last, std::get<1>(r));
        }
        QCOMPARE(s.source, data("capture_ok"));
        QCOMPARE(s.records, std::uint64_t(expected.size()));
        QCOMPARE(s.roceRecords, roce);
        QCOMPARE(s.otherRecords, expected.size() - roce);
        QCOMPARE(s.roceBytes, roceBytes);
        QCOMPARE(s.otherBytes, otherBytes);
        QCOMPARE(s.firstNs, first);
        QCOMPARE(s.lastNs, last);
        QCOMPARE(s.hosts, std::uint64_t(2));
        QCOMPARE(s.nics, std::uint64_t(4));
        QCOMPARE(s.endpoints, std::uint64_t(6)); // 4 NICs, 10.9.9.9, storage 10.100.0.5
        QCOMPARE(s.unknownRoceEndpoints, std::uint64_t(1));
        QCOMPARE(s.skippedRows, std::uint64_t(0));
        QCOMPARE(s.warnings, std::uint64_t(2));
        QCOMPARE(s.messages.size(), std::size_t(2));
        QVERIFY(contains(s.messages[0] + s.messages[1], "10.9.9.9"));

        // skipped rows are counted and their messages come first
        LoadOptions lenient;
        fs::create_directories(tmp("withbad"));
        fs::copy_file(data("bad_ip.csv"), tmp("withbad/flows.csv"), fs::copy_options::overwrite_existing);
        Capture b = loadCapture(tmp("withbad"), lenient);
        CaptureSummary bs = summarize(b);
        QCOMPARE(bs.skippedRows, std::uint64_t(1));
        QVERIFY2(contains(bs.messages.at(0), "10.0.0.300"), bs.messages.at(0).c_str());
    }

    // Runs last: every fixture was read above, and is read here again in both modes; none may have changed.
    void readersNeverModifyTheirInputs() {
        for (const auto& [path, bytes] : m_fixtures) {
            for (bool strict : {true, false}) {
                LoadDiagnostics diag;
                LoadOptions o;
                o.strict = strict;
                try {
                    if (path.size() > 5 && path.substr(path.size() - 5) == ".json")
                        readTopologyJson(path);
                    else
                        readFlowsCsv(path, o, diag);
                } catch (const InputError&) {}
            }
        }
        for (const auto& [path, bytes] : m_fixtures) QVERIFY2(readBytes(path) == bytes, path.c_str());
    }
};

QTEST_APPLESS_MAIN(ReadersTest)
#include "tst_readers.moc"
