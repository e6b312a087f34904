#include "util/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>

namespace prism {

unsigned threadCount(unsigned wanted) {
    if (wanted) return wanted;
    return std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
}

std::size_t partsFor(std::size_t items, unsigned threads, std::size_t least) {
    return std::max<std::size_t>(1, std::min<std::size_t>(threadCount(threads), items / least));
}

bool startThread(std::vector<std::thread>& pool, std::function<void()> fn) {
    try {
        pool.emplace_back(std::move(fn));
        return true;
    } catch (const std::system_error&) {
        return false;
    }
}

Aside::Aside(std::function<void()> fn, bool onThread) : m_fn(std::move(fn)) {
    if (onThread) startThread(m_thread, [this] { run(); });
}

Aside::~Aside() {
    for (std::thread& t : m_thread) t.join();
}

void Aside::run() {
    try {
        m_fn();
    } catch (...) {
        m_error = std::current_exception();
    }
}

void Aside::wait() {
    if (!m_done) {
        m_done = true;
        if (m_thread.empty()) {
            run();
        } else {
            m_thread.front().join();
            m_thread.clear();
        }
    }
    if (m_error) std::rethrow_exception(m_error); // at every wait: the work did not succeed
}

void parallelFor(std::size_t n, unsigned threads, const std::function<void(std::size_t, unsigned)>& body,
                 const std::function<void(std::size_t)>& onDone) {
    std::atomic<std::size_t> next{0}, done{0};
    std::atomic<bool> stop{false};
    std::exception_ptr error;
    std::mutex errorMutex;
    auto work = [&](unsigned worker) {
        try {
            for (std::size_t i; !stop && (i = next++) < n;) {
                body(i, worker);
                std::size_t d = ++done;
                if (worker == 0 && onDone) onDone(d);
            }
        } catch (...) {
            std::lock_guard lock(errorMutex);
            if (!error) error = std::current_exception();
            stop = true;
        }
    };
    std::vector<std::thread> pool;
    const unsigned count = unsigned(std::min<std::size_t>(threads, n));
    pool.reserve(count);
    for (unsigned t = 1; t < count && startThread(pool, [&work, t] { work(t); }); ++t) {}
    work(0);
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

} // namespace prism
