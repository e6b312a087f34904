#pragma once
// Helpers shared by the session reader and writer (internal to core/store).
#include "store/sqlite_db.h"
#include "util/parallel.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
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

// An integer of a session's JSON as T. nlohmann's get<T>() casts whatever number it finds, and a float out of
// T's range (a count rewritten as 7e19) is undefined behaviour; anything but an integer within T's range is
// damage here (std::runtime_error, which the readers report as "the session file is damaged (...)").
template <typename T>
T jsonInteger(const nlohmann::json& v) {
    if (v.is_number_unsigned()) {
        if (const auto x = v.get<std::uint64_t>(); std::in_range<T>(x)) return T(x);
    } else if (v.is_number_integer()) {
        if (const auto x = v.get<std::int64_t>(); std::in_range<T>(x)) return T(x);
    }
    throw std::runtime_error("a stored value " + v.dump() + " where an integer in range was expected");
}
template <typename T>
std::vector<T> jsonIntegers(const nlohmann::json& v) {
    if (!v.is_array())
        throw std::runtime_error("a stored value " + v.dump() + " where a list of integers was expected");
    std::vector<T> out;
    out.reserve(v.size());
    for (const nlohmann::json& x : v) out.push_back(jsonInteger<T>(x));
    return out;
}

// Throws InputError "the session file is damaged: <what>" for `path`.
[[noreturn]] void damaged(const std::string& path, const std::string& what);

} // namespace prism::store
