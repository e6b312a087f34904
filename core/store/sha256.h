#pragma once
// SHA-256 (FIPS 180-4), small and dependency-free: the session file records the checksum of the capture it
// was made from, so a session can be matched to its source (and a changed source noticed).
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace prism {

class Sha256 {
public:
    // `accelerated`: use the CPU's SHA instructions when it has them (false: portable code, for tests).
    explicit Sha256(bool accelerated = true);
    static bool accelerated(); // the CPU has SHA instructions
    void update(const void* data, std::size_t size);
    std::array<std::uint8_t, 32> finish(); // the object must not be updated afterwards
    static std::string hex(const std::array<std::uint8_t, 32>& digest);

private:
    void block(const std::uint8_t* p);
    void blocks(const std::uint8_t* p, std::size_t n);
    std::array<std::uint32_t, 8> m_h;
    std::array<std::uint8_t, 64> m_buf{};
    std::size_t m_used = 0;
    std::uint64_t m_total = 0;
    bool m_accelerated = true;
};

struct FileChecksum {
    std::string sha256; // lower-case hex
    std::uint64_t bytes = 0;
};

// Reads the file once (read-only). `progress` gets the fraction done and may return false to cancel
// (throws Cancelled). Throws InputError when the file cannot be read.
FileChecksum sha256File(const std::string& path, const std::function<bool(double)>& progress = {});

} // namespace prism
