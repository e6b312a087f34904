#pragma once
// Helpers shared by the session reader and writer (internal to core/store).
#include "store/sqlite_db.h"
#include "util/parallel.h"

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

// One read-only connection per worker thread, opened on first use (an SQLite handle is not shared between threads
// at once). Worker 0 uses the caller's connection, which the caller leaves alone while the workers run: a
// single-threaded read opens the file once, not once per pass.
class ConnectionPool {
public:
    ConnectionPool(std::string path, unsigned workers, Database& first)
        : m_path(std::move(path)), m_first(first), m_connections(workers) {}
    Database& get(unsigned worker);

private:
    std::string m_path;
    Database& m_first;
    std::vector<std::unique_ptr<Database>> m_connections;
};

// Throws InputError "the session file is damaged: <what>" for `path`.
[[noreturn]] void damaged(const std::string& path, const std::string& what);

} // namespace prism::store
