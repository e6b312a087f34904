#include "store/sha256.h"

#include "model/diagnostics.h"
#include "util/dynamic_library.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace prism {

namespace {

// OpenSSL's libcrypto, loaded when a checksum is first taken (util/dynamic_library.h): the commands that take
// none (analyze, the GUI opening a capture) do not load it at start, nor hold its 1.4 MB of pages.
struct Crypto {
    decltype(&EVP_MD_CTX_new) newContext;
    decltype(&EVP_MD_CTX_free) freeContext;
    decltype(&EVP_sha256) sha256;
    decltype(&EVP_DigestInit_ex) init;
    decltype(&EVP_DigestUpdate) update;
    decltype(&EVP_DigestFinal_ex) final;
};

const Crypto& libcrypto() {
    static const Crypto api = [] {
        const RequiredLibrary crypto({"libcrypto.so.3"}, "a SHA-256 checksum needs OpenSSL's libcrypto",
                                     "libssl3 (libssl3t64 on Debian 13)");
        Crypto c{};
        crypto.bind("EVP_MD_CTX_new", c.newContext);
        crypto.bind("EVP_MD_CTX_free", c.freeContext);
        crypto.bind("EVP_sha256", c.sha256);
        crypto.bind("EVP_DigestInit_ex", c.init);
        crypto.bind("EVP_DigestUpdate", c.update);
        crypto.bind("EVP_DigestFinal_ex", c.final);
        return c;
    }();
    return api;
}

} // namespace

struct Sha256::Context {
    EVP_MD_CTX* md = libcrypto().newContext();
    ~Context() { libcrypto().freeContext(md); }
};

Sha256::Sha256() : m_ctx(std::make_unique<Context>()) {
    if (!m_ctx->md || libcrypto().init(m_ctx->md, libcrypto().sha256(), nullptr) != 1)
        throw std::runtime_error("OpenSSL: cannot start a SHA-256 digest");
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, std::size_t size) {
    if (size && libcrypto().update(m_ctx->md, data, size) != 1)
        throw std::runtime_error("OpenSSL: SHA-256 update failed");
}

std::array<std::uint8_t, 32> Sha256::finish() {
    std::array<std::uint8_t, 32> out{};
    unsigned int n = 0;
    if (libcrypto().final(m_ctx->md, out.data(), &n) != 1 || n != out.size())
        throw std::runtime_error("OpenSSL: SHA-256 final failed");
    return out;
}

std::string Sha256::hex(const std::array<std::uint8_t, 32>& digest) {
    static const char* kHex = "0123456789abcdef";
    std::string s;
    for (std::uint8_t b : digest) s.append(1, kHex[b >> 4]).append(1, kHex[b & 15]);
    return s;
}

FileChecksum sha256File(const std::string& path, const std::function<bool(double)>& progress) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw InputError({path, 0, 0, std::string("cannot open the file: ") + std::strerror(errno)});
    std::fseek(f.get(), 0, SEEK_END);
    const long total = std::ftell(f.get());
    std::fseek(f.get(), 0, SEEK_SET);
    Sha256 sha;
    std::vector<char> buf(1 << 20);
    FileChecksum out;
    for (;;) {
        std::size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
        if (n == 0) break;
        sha.update(buf.data(), n);
        out.bytes += n;
        if (progress && total > 0 && !progress(double(out.bytes) / double(total))) throw Cancelled();
    }
    if (std::ferror(f.get())) throw InputError({path, 0, 0, "read error while computing its checksum"});
    out.sha256 = Sha256::hex(sha.finish());
    return out;
}

} // namespace prism
