// The replaced operator new (core/huge_pages.cpp): large blocks are advised for transparent huge pages when the
// advice is given (by default not where the host takes free memory back; always or never as the environment
// asks), and it still behaves as operator new must (bad_alloc when nothing is left, memory freed by delete). The
// advice's rule (core/util/huge_pages.h).
#include "util/huge_pages.h"

#include <QtTest>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include <sys/mman.h>

namespace {

// A sysfs folder of virtio devices: {device id, features} each.
struct FakeDevices {
    QTemporaryDir dir;
    using Devices = std::vector<std::pair<std::string, std::string>>;
    explicit FakeDevices(const Devices& devices) {
        for (std::size_t k = 0; k < devices.size(); ++k) {
            const std::filesystem::path d =
                std::filesystem::path(dir.path().toStdString()) / ("virtio" + std::to_string(k));
            std::filesystem::create_directories(d);
            std::ofstream(d / "device") << devices[k].first << "\n";
            std::ofstream(d / "features") << devices[k].second << "\n";
        }
    }
    std::string path() const { return dir.path().toStdString(); }
};

// The VmFlags of the mapping of /proc/self/smaps that holds `p`; empty when there is none.
std::string vmFlagsAt(const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        std::uintptr_t lo = 0, hi = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
            inside = lo <= at && at < hi;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0) return line;
    }
    return {};
}

} // namespace

class TestHugePages : public QObject {
    Q_OBJECT

private slots:
    void theAdviceFollowsTheEnvironmentThenTheHost() {
        QVERIFY(prism::decideHugePages("1", nullptr, true));      // asked for: even where the host takes memory
        QVERIFY(prism::decideHugePages("yes", "1", true));        // LLMPRISM_HUGE_PAGES comes first
        QVERIFY(!prism::decideHugePages("0", nullptr, false));    // refused
        QVERIFY(!prism::decideHugePages(nullptr, "1", false));    // the older switch
        QVERIFY(!prism::decideHugePages("", "", false));          // set to nothing: the older switch is set
        QVERIFY(prism::decideHugePages("", nullptr, false));      // set to nothing: the default
        QVERIFY(prism::decideHugePages(nullptr, nullptr, false)); // bare metal, a host that keeps memory
        QVERIFY(!prism::decideHugePages(nullptr, nullptr, true)); // a host that takes free memory back
    }

    void aBalloonWithFreePageReportingTakesMemoryBack() {
        // This machine's balloon (Firecracker): stats, deflate on OOM, free page reporting (bit 5).
        const std::string reporting = "0110010100000000000000000000000010000000";
        QVERIFY(prism::hostTakesFreeMemory(
            FakeDevices(FakeDevices::Devices{{"0x0002", "0010"}, {"0x0005", reporting}}).path().c_str()));
        QVERIFY(!prism::hostTakesFreeMemory(
            FakeDevices(FakeDevices::Devices{{"0x0005", "0110000100"}}).path().c_str())); // no bit 5
        QVERIFY(!prism::hostTakesFreeMemory(
            FakeDevices(FakeDevices::Devices{{"0x0001", reporting}}).path().c_str())); // a NIC
        QVERIFY(!prism::hostTakesFreeMemory(
            FakeDevices(FakeDevices::Devices{{"0x0005", "01100"}}).path().c_str())); // too short
        QVERIFY(!prism::hostTakesFreeMemory(FakeDevices(FakeDevices::Devices{}).path().c_str()));
        QVERIFY(!prism::hostTakesFreeMemory("/nonexistent/virtio/devices"));
    }

    // A large block is advised for huge pages exactly when the process' advice says so; run again as a child with
    // LLMPRISM_HUGE_PAGES=1 and =0 (the advice is decided as a program starts), whatever this machine's default.
    void aLargeBlockFollowsTheAdvice() {
#ifdef LLMPRISM_SANITIZE_BUILD
        QSKIP("sanitizer builds keep their runtime's operator new");
#endif
        if (!std::ifstream("/proc/self/smaps")) QSKIP("no /proc/self/smaps here");
        if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"))
            QSKIP("this kernel has no transparent huge pages");
        { // a kernel (or sandbox) that refuses the advice: nothing to check
            const std::size_t n = std::size_t(4) << 20;
            void* probe = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            QVERIFY(probe != MAP_FAILED);
            const int refused = madvise(probe, n, MADV_HUGEPAGE);
            munmap(probe, n);
            if (refused) QSKIP("madvise(MADV_HUGEPAGE) is refused here");
        }
        const char* asked = std::getenv("LLMPRISM_HUGE_PAGES");
        if (asked) QCOMPARE(prism::hugePagesAdvised(), std::string(asked) != "0");
        auto block = std::make_unique<char[]>(std::size_t(64) << 20);
        const std::string flags = vmFlagsAt(block.get() + (std::size_t(32) << 20));
        QVERIFY2(!flags.empty(), "the block's mapping is not in /proc/self/smaps");
        // "hg": MADV_HUGEPAGE was given for the mapping.
        QVERIFY2((flags.find(" hg") != std::string::npos) == prism::hugePagesAdvised(), flags.c_str());
        if (asked) return; // a child
        const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
        for (const char* value : {"1", "0"}) {
            const std::string command = "LLMPRISM_HUGE_PAGES=" + std::string(value) + " '" + self +
                                        "' aLargeBlockFollowsTheAdvice > /dev/null 2>&1";
            QVERIFY2(std::system(command.c_str()) == 0, command.c_str());
        }
    }

    void anImpossibleSizeThrowsBadAlloc() {
#ifdef LLMPRISM_SANITIZE_BUILD
        QSKIP("AddressSanitizer's operator new (GCC 12) aborts on an impossible size instead of throwing");
#endif
        // Called as functions: new-expressions may be elided by the compiler, these calls may not.
        const std::size_t impossible = std::size_t(1) << 62;
        QVERIFY_THROWS_EXCEPTION(std::bad_alloc, static_cast<void>(::operator new(impossible)));
        QVERIFY_THROWS_EXCEPTION(std::bad_alloc, static_cast<void>(::operator new[](impossible)));
        QCOMPARE(::operator new(impossible, std::nothrow), nullptr);
    }

    void blocksOfEverySizeAreUsableAndFreed() {
        std::vector<std::unique_ptr<std::uint8_t[]>> blocks;
        for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(4096), std::size_t(4) << 20,
                              (std::size_t(4) << 20) + 12345, std::size_t(33) << 20}) {
            blocks.emplace_back(new std::uint8_t[n ? n : 1]);
            for (std::size_t i = 0; i < n; i += 4096) blocks.back()[i] = std::uint8_t(i >> 12);
            for (std::size_t i = 0; i < n; i += 4096) QCOMPARE(blocks.back()[i], std::uint8_t(i >> 12));
        }
    }
};

QTEST_APPLESS_MAIN(TestHugePages)
#include "tst_huge_pages.moc"
