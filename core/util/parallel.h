#pragma once
// The thread helpers of the project (engine, session store and UI): a parallel for over n items, and work beside
// the caller's (Aside).
#include <cstddef>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace prism {

// Threads to use: `wanted`, or one per core (at most 8) when 0.
unsigned threadCount(unsigned wanted);

// How many parts to read `items` in side by side: one a thread (threadCount(threads)), each of at least `least`
// items; at least one.
std::size_t partsFor(std::size_t items, unsigned threads, std::size_t least);

// Starts `fn` on a new thread added to `pool`; false, with nothing added, when the system cannot start one (a
// process or container thread limit: EAGAIN), so the caller goes on with the threads it has.
bool startThread(std::vector<std::thread>& pool, std::function<void()> fn);

// Work beside the caller's: `fn` runs on a thread of its own from construction (when `onThread` and the system
// starts one), else on the caller's thread in wait(). wait() (or the destructor, which never throws) waits for
// it; wait() rethrows what fn threw.
class Aside {
public:
    explicit Aside(std::function<void()> fn, bool onThread = true);
    ~Aside();
    Aside(const Aside&) = delete;
    Aside& operator=(const Aside&) = delete;
    void wait();

private:
    void run(); // m_fn, what it throws kept for wait()
    std::function<void()> m_fn;
    std::vector<std::thread> m_thread; // empty: fn runs in wait()
    std::exception_ptr m_error;
    bool m_done = false;
};

// Runs body(i, worker) for i in [0, n) on up to `threads` threads, the caller's being worker 0. `onDone`
// runs on the caller's thread after each of its own items (progress) and may throw to stop everyone.
// The first exception is rethrown once all threads have stopped. Threads the system cannot start are done
// without: the items are shared by those running (at least the caller's).
void parallelFor(std::size_t n, unsigned threads, const std::function<void(std::size_t, unsigned worker)>& body,
                 const std::function<void(std::size_t done)>& onDone = {});

} // namespace prism
