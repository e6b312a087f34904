// Shared libraries loaded when first needed (core/util/dynamic_library.h): the first of the names that loads, its
// symbols by name, a clear error naming every library tried; and the command line starts without libcurl, libpcap
// and libcrypto, which it loads only to read a ClickHouse table (io/clickhouse.cpp), a capture file
// (io/pcap_reader.cpp) or to take a checksum (store/sha256.cpp).
#include "util/dynamic_library.h"

#include <QtTest>

#include <string>
#include <vector>
#include <zlib.h>

using namespace prism;

class TestDynamicLibrary : public QObject {
    Q_OBJECT
private slots:
    void theFirstNameThatLoadsIsLoaded() {
        std::string error = "left from before";
        void* z = loadLibrary({"libllmprism-no-such-library.so.0", "libz.so.1"}, error);
        QVERIFY(z);
        QVERIFY(error.empty());
        using Version = const char* (*)();
        auto version = reinterpret_cast<Version>(librarySymbol(z, "zlibVersion"));
        QVERIFY(version);
        QCOMPARE(std::string(version()), std::string(zlibVersion())); // the library the program linked, again
        QVERIFY(!librarySymbol(z, "llmprism_no_such_symbol"));
        QVERIFY(!librarySymbol(nullptr, "zlibVersion"));
        Version bound = nullptr;
        QVERIFY(bindSymbol(z, "zlibVersion", bound));
        QCOMPARE(reinterpret_cast<void*>(bound), reinterpret_cast<void*>(version));
        QVERIFY(!bindSymbol(z, "llmprism_no_such_symbol", bound));
        QVERIFY(!bound);
    }

    void noneLoadsAndTheErrorNamesEach() {
        std::string error;
        QVERIFY(!loadLibrary({"libllmprism-none-a.so.0", "/nonexistent/libllmprism-none-b.so.1"}, error));
        QVERIFY2(error.find("libllmprism-none-a.so.0") != std::string::npos, error.c_str());
        QVERIFY2(error.find("/nonexistent/libllmprism-none-b.so.1") != std::string::npos, error.c_str());
        QVERIFY(!loadLibrary({}, error));
        QVERIFY(!error.empty());
    }

    // A library some work needs: loaded, its functions bound; or an error saying what needs it, why, and what to
    // install; a function it lacks named.
    void aRequiredLibrarySaysWhatToInstall() {
        const RequiredLibrary z({"libllmprism-none.so.0", "libz.so.1"}, "testing needs zlib", "zlib1g");
        const char* (*version)() = nullptr;
        z.bind("zlibVersion", version);
        QCOMPARE(std::string(version()), std::string(zlibVersion()));
        try {
            z.bind("llmprism_no_such_symbol", version);
            QFAIL("a missing function was bound");
        } catch (const std::runtime_error& e) {
            QVERIFY2(std::string(e.what()).find("llmprism_no_such_symbol") != std::string::npos, e.what());
        }
        try {
            const RequiredLibrary none({"libllmprism-none.so.0"}, "testing needs libllmprism-none", "llmprism-none");
            QFAIL("a missing library loaded");
        } catch (const std::runtime_error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("testing needs libllmprism-none") == 0, e.what());
            QVERIFY2(m.find("libllmprism-none.so.0") != std::string::npos, e.what()); // dlopen's reason names it
            QVERIFY2(m.find("apt install llmprism-none") != std::string::npos, e.what());
        }
    }

    // The command line's start loads none of them: they are not among the libraries its ELF file needs.
    void theCommandLineNeedsNoneOfThemToStart() {
        QProcess p;
        p.start("readelf", {"--dynamic", LLMPRISM_CLI});
        if (!p.waitForStarted()) QSKIP("readelf (binutils) is not installed");
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(out.contains("(NEEDED)"), qPrintable(out));
        QVERIFY2(out.contains("libz.so"), qPrintable(out)); // (what the check reads is the list of needed libraries)
        for (const char* library : {"libcurl", "libpcap", "libcrypto"}) QVERIFY2(!out.contains(library), library);
    }
};

QTEST_GUILESS_MAIN(TestDynamicLibrary)
#include "tst_dynamic_library.moc"
