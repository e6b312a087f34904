#include "store/store_util.h"

#include "model/diagnostics.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace prism::store {

namespace {

std::uint32_t crc32cSoftware(std::uint32_t crc, const std::uint8_t* p, std::size_t n) {
    static const auto table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
            t[i] = c;
        }
        return t;
    }();
    for (; n; --n) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32cSse42(std::uint32_t crc, const std::uint8_t* p,
                                                              std::size_t n) {
    std::uint64_t c = crc;
    for (; n && (reinterpret_cast<std::uintptr_t>(p) & 7); --n) c = _mm_crc32_u8(std::uint32_t(c), *p++);
    for (; n >= 8; n -= 8, p += 8) {
        std::uint64_t v;
        std::memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
    }
    for (; n; --n) c = _mm_crc32_u8(std::uint32_t(c), *p++);
    return std::uint32_t(c);
}

bool haveSse42() {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}
#endif

} // namespace

std::uint32_t crc32c(std::string_view data) {
    auto p = reinterpret_cast<const std::uint8_t*>(data.data());
#if defined(__x86_64__)
    static const bool hw = haveSse42();
    if (hw) return ~crc32cSse42(~0u, p, data.size());
#endif
    return ~crc32cSoftware(~0u, p, data.size());
}

Database& ConnectionPool::get(unsigned worker) {
    if (worker == 0) return m_first;
    auto& c = m_connections.at(worker);
    if (!c) {
        c = std::make_unique<Database>(m_path, Database::Mode::ReadOnly);
        c->exec("PRAGMA mmap_size = 0"); // as openSessionDatabase: read, not mapped
    }
    return *c;
}

void damaged(const std::string& path, const std::string& what) {
    throw InputError({path, 0, 0, "the session file is damaged: " + what});
}

} // namespace prism::store
