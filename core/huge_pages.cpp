// Large C++ allocations on transparent huge pages: the global operator new, replaced.
//
// An analysis allocates columns and per-job arrays of tens to hundreds of MB. Fresh memory is faulted in one
// 4 KiB page at a time, and on a virtual machine each fault is dear: on `large` (6.3M records) the kernel's
// fault path took a third of `llmprism-cli analyze` (404,797 faults, 2.7 s of 8.2 s; docs/BENCHMARKS.md).
// Blocks from kAdvise bytes up are advised MADV_HUGEPAGE, so the kernel backs them with 2 MiB pages where
// transparent huge pages are enabled ("madvise" or "always", Debian's default is "madvise"); elsewhere the
// advice is ignored. The memory itself still comes from malloc and goes back with free: only the advice is
// added.
//
// Not where the hypervisor takes free memory back (a virtio balloon with free page reporting, as Firecracker
// and QEMU guests have): there a huge page the process touches first is one the host gave back and must back
// again, 2 MiB at a time, 5x dearer than as small pages (256 MB: 550-650 ms against 100-125 ms), and only memory
// freed moments before is cheap (12 ms). `analyze` of `large` run once, after the machine had rested: 1.61 s
// with the advice, 1.43 s without (docs/BENCHMARKS.md "Huge pages where the host takes memory back").
// LLMPRISM_HUGE_PAGES=1 in the environment gives the advice anyway, =0 (or LLMPRISM_NO_HUGE_PAGES=1) never.
// (glibc's own `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` does the same, but must be set before start.)
//
// Compiled into each program that links llmprism_core (an INTERFACE source), except sanitizer builds, whose
// runtime replaces operator new itself.
#include "util/huge_pages.h"

#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace {

constexpr std::size_t kHugePage = std::size_t(2) << 20;
constexpr std::size_t kAdvise = std::size_t(4) << 20;

void* allocate(std::size_t n) noexcept {
    void* p = std::malloc(n ? n : 1);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p && n >= kAdvise) {
        if (!prism::hugePagesAdvised()) return p; // decided at start-up (below)
        // The whole huge pages inside the block (malloc's header and the ends stay in small pages).
        const auto at = reinterpret_cast<std::uintptr_t>(p);
        const std::uintptr_t lo = (at + kHugePage - 1) & ~(kHugePage - 1);
        const std::uintptr_t hi = (at + n) & ~(kHugePage - 1);
        if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
    }
#endif
    return p;
}

// The environment read and the advice decided while the program starts, on one thread (getenv beside a setenv, as
// a time zone change makes, is unsafe in glibc before 2.40).
[[maybe_unused]] const bool g_decidedAtStart = prism::hugePagesAdvised();

void* allocateOrThrow(std::size_t n) {
    for (;;) {
        if (void* p = allocate(n)) return p;
        std::new_handler handler = std::get_new_handler();
        if (!handler) throw std::bad_alloc();
        handler();
    }
}

} // namespace

void* operator new(std::size_t n) { return allocateOrThrow(n); }
void* operator new[](std::size_t n) { return allocateOrThrow(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
