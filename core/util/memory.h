#pragma once
// Memory handed back to the system.
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

} // namespace prism
