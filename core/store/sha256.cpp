#include "store/sha256.h"

#include "model/diagnostics.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define PRISM_SHA_NI 1
#endif

namespace prism {
namespace {

constexpr std::uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

#ifdef PRISM_SHA_NI
// The SHA extensions (Intel since Goldmont/Ice Lake, AMD since Zen) hash ~10x faster than the portable code:
// the checksum of a 0.5 GB capture must not cost seconds.
bool haveShaNi() {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3)) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & (1u << 29)) != 0; // CPUID.(EAX=7,ECX=0):EBX.SHA[bit 29]
}

__attribute__((target("sha,sse4.1,ssse3"))) void blocksShaNi(std::uint32_t* h, const std::uint8_t* p,
                                                               std::size_t blocks) {
    const __m128i byteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    // State as the instructions want it: ABEF and CDGH.
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)), 0xB1);
    __m128i state1 = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4)), 0x1B);
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);
    state1 = _mm_blend_epi16(state1, tmp, 0xF0);
    for (; blocks; --blocks, p += 64) {
        const __m128i save0 = state0, save1 = state1;
        __m128i w[16];
        for (int i = 0; i < 4; ++i)
            w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)), byteSwap);
        for (int i = 4; i < 16; ++i) {
            __m128i t = _mm_sha256msg1_epu32(w[i - 4], w[i - 3]);
            t = _mm_add_epi32(t, _mm_alignr_epi8(w[i - 1], w[i - 2], 4));
            w[i] = _mm_sha256msg2_epu32(t, w[i - 1]);
        }
        for (int i = 0; i < 16; ++i) {
            __m128i msg = _mm_add_epi32(w[i], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK + 4 * i)));
            state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
            state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));
        }
        state0 = _mm_add_epi32(state0, save0);
        state1 = _mm_add_epi32(state1, save1);
    }
    tmp = _mm_shuffle_epi32(state0, 0x1B);    // FEBA
    state1 = _mm_shuffle_epi32(state1, 0xB1); // DCHG
    state0 = _mm_blend_epi16(tmp, state1, 0xF0);  // DCBA
    state1 = _mm_alignr_epi8(state1, tmp, 8);     // ABEF
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h), state0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), state1);
}
#endif

} // namespace

Sha256::Sha256(bool accelerated)
    : m_h{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19},
      m_accelerated(accelerated) {}

void Sha256::block(const std::uint8_t* p) {
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i)
        w[i] = std::uint32_t(p[4 * i]) << 24 | std::uint32_t(p[4 * i + 1]) << 16 | std::uint32_t(p[4 * i + 2]) << 8 |
               std::uint32_t(p[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
        std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = m_h[0], b = m_h[1], c = m_h[2], d = m_h[3], e = m_h[4], f = m_h[5], g = m_h[6], h = m_h[7];
    for (int i = 0; i < 64; ++i) {
        std::uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
        std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    m_h[0] += a, m_h[1] += b, m_h[2] += c, m_h[3] += d, m_h[4] += e, m_h[5] += f, m_h[6] += g, m_h[7] += h;
}

void Sha256::blocks(const std::uint8_t* p, std::size_t n) {
#ifdef PRISM_SHA_NI
    static const bool shaNi = haveShaNi();
    if (shaNi && m_accelerated) {
        blocksShaNi(m_h.data(), p, n);
        return;
    }
#endif
    for (; n; --n, p += 64) block(p);
}

bool Sha256::accelerated() {
#ifdef PRISM_SHA_NI
    static const bool shaNi = haveShaNi();
    return shaNi;
#else
    return false;
#endif
}

void Sha256::update(const void* data, std::size_t size) {
    auto p = static_cast<const std::uint8_t*>(data);
    m_total += size;
    if (m_used) {
        std::size_t take = std::min(size, 64 - m_used);
        std::memcpy(m_buf.data() + m_used, p, take);
        m_used += take, p += take, size -= take;
        if (m_used < 64) return;
        blocks(m_buf.data(), 1);
        m_used = 0;
    }
    if (size >= 64) {
        blocks(p, size / 64);
        p += size / 64 * 64;
        size %= 64;
    }
    std::memcpy(m_buf.data(), p, size);
    m_used = size;
}

std::array<std::uint8_t, 32> Sha256::finish() {
    std::uint64_t bits = m_total * 8;
    std::uint8_t pad[72] = {0x80};
    std::size_t padLen = (m_used < 56 ? 56 : 120) - m_used;
    for (int i = 0; i < 8; ++i) pad[padLen + std::size_t(i)] = std::uint8_t(bits >> (56 - 8 * i));
    update(pad, padLen + 8);
    std::array<std::uint8_t, 32> out;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j) out[std::size_t(4 * i + j)] = std::uint8_t(m_h[std::size_t(i)] >> (24 - 8 * j));
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
