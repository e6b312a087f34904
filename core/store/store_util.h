#pragma once
// Helpers shared by the session reader and writer (internal to core/store).
#include "store/sqlite_db.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace prism::store {

// CRC-32C (Castagnoli, as iSCSI and ext4 use it) of a blob: every blob of the session carries one, checked on
// open. CRC-32C rather than zlib's CRC-32 because x86 computes it in hardware (SSE 4.2): ~10x faster, and
// opening reads a few hundred MB of blobs.
std::uint32_t crc32c(std::string_view data);

// Threads to use: `wanted`, or one per core (at most 8) when 0.
unsigned threadCount(unsigned wanted);

// Runs body(i, worker) for i in [0, n) on up to `threads` threads, the caller's being worker 0. `onDone`
// runs on the caller's thread after each of its own items (progress) and may throw to stop everyone.
// The first exception is rethrown once all threads have stopped.
void parallelFor(std::size_t n, unsigned threads, const std::function<void(std::size_t, unsigned worker)>& body,
                 const std::function<void(std::size_t done)>& onDone = {});

// One read-only connection per worker thread, opened on first use (an SQLite handle is not shared).
class ConnectionPool {
public:
    ConnectionPool(std::string path, unsigned workers) : m_path(std::move(path)), m_connections(workers) {}
    Database& get(unsigned worker);

private:
    std::string m_path;
    std::vector<std::unique_ptr<Database>> m_connections;
};

// Throws InputError "the session file is damaged: <what>" for `path`.
[[noreturn]] void damaged(const std::string& path, const std::string& what);

} // namespace prism::store
