#pragma once
// Memory handed back to the system, and memory taken without being written first.
#include <memory>
#include <new>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace prism {

// Returns the pages of freed heap blocks to the system. glibc keeps freed blocks below its mmap threshold (which
// grows to the largest block freed, up to 32 MiB) in the heap, resident, until a later allocation reuses them:
// a job's timeline frees every rank's transfers under the segments it keeps, and without this the GUI held
// 30 MB of them on `large` for as long as the job was open (docs/BENCHMARKS.md). A few milliseconds.
inline void releaseFreedMemory() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

// An allocator whose vectors leave new elements of a trivial type unset (`std::vector<T>(n)` writes n zeros):
// for a large array that its users fill whole, side by side. The zeros were written on one core, and the fresh
// pages faulted in there one by one; unset, the pages are faulted in by the threads that fill them.
template <typename T>
struct UnsetAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
        using other = UnsetAllocator<U>;
    };
    UnsetAllocator() = default;
    template <typename U>
    UnsetAllocator(const UnsetAllocator<U>&) noexcept {}
    template <typename U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

} // namespace prism
