#pragma once
// SHA-256 through OpenSSL's EVP interface (which uses the CPU's SHA instructions where it has them): the
// session file records the checksum of the capture it was made from, so a session can be matched to its source
// (and a changed source noticed).
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace prism {

class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    void update(const void* data, std::size_t size);
    std::array<std::uint8_t, 32> finish(); // the object must not be updated afterwards
    static std::string hex(const std::array<std::uint8_t, 32>& digest);

private:
    struct Context;
    std::unique_ptr<Context> m_ctx;
};

struct FileChecksum {
    std::string sha256; // lower-case hex
    std::uint64_t bytes = 0;
};

// Reads the file once (read-only). `progress` gets the fraction done and may return false to cancel
// (throws Cancelled). Throws InputError when the file cannot be read.
FileChecksum sha256File(const std::string& path, const std::function<bool(double)>& progress = {});

} // namespace prism
