// Every textual form of IPv4 and IPv6 addresses: IpAddr::parse and the flows.csv reader's own IPv4 fast path
// accept exactly what the C library's inet_pton accepts (the oracle), and read the same address. Handwritten
// edge forms, then 200,000 random strings over the address alphabet.
#include "io/capture.h"
#include "model/ip.h"
#include "test_util.h"

#include <QTemporaryDir>
#include <QtTest>

#include <arpa/inet.h>

#include <cstring>
#include <random>

using namespace prism;

namespace {

// What inet_pton makes of the text: the address as IpAddr (IPv4 as its mapped form), or nullopt.
std::optional<IpAddr> oracle(const std::string& s) {
    unsigned char b[16];
    if (inet_pton(AF_INET, s.c_str(), b) == 1) return IpAddr::v4(b[0], b[1], b[2], b[3]);
    IpAddr a;
    if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) != 1) return std::nullopt;
    static constexpr std::uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    a.v6 = std::memcmp(a.bytes.data(), mapped, 12) != 0;
    return a;
}

const char* kForms[] = {
    "0.0.0.0", "255.255.255.255", "10.0.0.1", "1.2.3.4", "256.1.1.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.02.3.4",
    "1.2.3.04", "00.0.0.0", "0.0.0.00", "1..2.3", ".1.2.3", "1.2.3.", "1.2.3.4 ", " 1.2.3.4", "1.2.3.4\t", "0x1.2.3.4",
    "1.2.3.-4", "+1.2.3.4", "1.2.3.4/24", "1.2.3.4:80", "999.1.1.1", "1.2.3.255", "1.2.3.2555", "4294967295",
    "", ".", ":", "::", ":::", "::1", "1::", "1::1", "fe80::1", "FE80::1", "fe80::1%eth0", "fe80::1%1", "2001:db8::",
    "2001:DB8:0:0:0:0:0:1", "2001:db8:0:0:0:0:0:0:1", "2001:db8::1::2", "2001:db8:::1", "::ffff:1.2.3.4",
    "::ffff:01.2.3.4", "::ffff:1.2.3", "::1.2.3.4", "64:ff9b::1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:7:1.2.3.4",
    "12345::1", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "g::1", "::g", "0:0:0:0:0:0:0:0", "0000:0000::0000",
    "00000::1", "::ffff:255.255.255.255", "::ffff:256.1.1.1", "[::1]", "::1]", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8",
    "1:2:3:4:5:6:7::8", "abcd:ef01:2345:6789:abcd:ef01:2345:6789", "ABCD:EF01::", "1.2.3.4::", "::1.2.3.4:5",
};

} // namespace

class TestIpForms : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    // The flows.csv reader on one row with `text` as src_ip: the address read, or nullopt when the row was refused.
    std::optional<IpAddr> viaFlowsCsv(const std::string& text, int k) {
        const std::string path = (m_dir.path() + "/f" + QString::number(k) + ".csv").toStdString();
        test::writeBytes(path, "start_ns,end_ns,src_ip,dst_ip,src_port,dst_port,proto,bytes,packets\n1,2," + text +
                                   ",10.9.9.9,1,4791,17,1,1\n");
        LoadDiagnostics diag;
        const FlowTable t = readFlowsCsv(path, {}, diag);
        if (t.size() != 1) return std::nullopt;
        return t.endpoints.at(t.src[0]);
    }

private slots:
    void edgeFormsAgreeWithInetPton() {
        int k = 0;
        for (const char* form : kForms) {
            const std::string s = form;
            const auto expected = oracle(s);
            const auto got = IpAddr::parse(s);
            QVERIFY2(got.has_value() == expected.has_value(), qPrintable(QString("\"%1\": parse %2, inet_pton %3")
                                                                             .arg(form)
                                                                             .arg(got ? "accepts" : "refuses")
                                                                             .arg(expected ? "accepts" : "refuses")));
            if (got) QCOMPARE(got->toString(), expected->toString());
            // The CSV reader trims spaces around a field, so only forms without them are compared there.
            if (s.find_first_of(" \t,") != std::string::npos || s.empty()) continue;
            const auto csv = viaFlowsCsv(s, k++);
            QVERIFY2(csv.has_value() == expected.has_value(), qPrintable(QString("flows.csv \"%1\"").arg(form)));
            if (csv) QCOMPARE(csv->toString(), expected->toString());
        }
    }

    void randomFormsAgreeWithInetPton() {
        std::mt19937_64 rng(20261126);
        const std::string alphabet = "0123456789abcdefABCDEF:.:.:.";
        int accepted = 0;
        for (int n = 0; n < 200000; ++n) {
            std::string s;
            const std::size_t len = 1 + rng() % 40;
            for (std::size_t i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
            const auto expected = oracle(s);
            const auto got = IpAddr::parse(s);
            if (got.has_value() != expected.has_value() || (got && got->toString() != expected->toString()))
                QFAIL(qPrintable(QString("\"%1\": parse and inet_pton disagree").arg(QString::fromStdString(s))));
            accepted += bool(got);
        }
        QVERIFY(accepted > 100); // the strings do reach valid addresses
    }
};

QTEST_GUILESS_MAIN(TestIpForms)
#include "tst_ip_forms.moc"
