#pragma once
// The one thread helper of the project (engine, session store and UI): a parallel for over n items.
#include <cstddef>
#include <functional>

namespace prism {

// Threads to use: `wanted`, or one per core (at most 8) when 0.
unsigned threadCount(unsigned wanted);

// Runs body(i, worker) for i in [0, n) on up to `threads` threads, the caller's being worker 0. `onDone`
// runs on the caller's thread after each of its own items (progress) and may throw to stop everyone.
// The first exception is rethrown once all threads have stopped.
void parallelFor(std::size_t n, unsigned threads, const std::function<void(std::size_t, unsigned worker)>& body,
                 const std::function<void(std::size_t done)>& onDone = {});

} // namespace prism
