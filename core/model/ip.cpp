#include "model/ip.h"

#include <arpa/inet.h>
#include <cstring>

namespace prism {

IpAddr IpAddr::v4(std::uint32_t h) {
    IpAddr a;
    a.bytes[10] = 0xff;
    a.bytes[11] = 0xff;
    a.bytes[12] = std::uint8_t(h >> 24);
    a.bytes[13] = std::uint8_t(h >> 16);
    a.bytes[14] = std::uint8_t(h >> 8);
    a.bytes[15] = std::uint8_t(h);
    return a;
}

IpAddr IpAddr::v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return v4((std::uint32_t(a) << 24) | (std::uint32_t(b) << 16) | (std::uint32_t(c) << 8) | d);
}

std::uint32_t IpAddr::v4Value() const {
    return (std::uint32_t(bytes[12]) << 24) | (std::uint32_t(bytes[13]) << 16) | (std::uint32_t(bytes[14]) << 8) |
           bytes[15];
}

static bool parseV4Fast(std::string_view s, std::uint32_t& out) {
    std::uint32_t value = 0;
    int parts = 0;
    std::size_t i = 0;
    while (parts < 4) {
        if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
        std::uint32_t octet = 0;
        std::size_t digits = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            octet = octet * 10 + std::uint32_t(s[i] - '0');
            ++i;
            if (++digits > 3) return false;
        }
        if (octet > 255 || (digits > 1 && s[i - digits] == '0')) return false;
        value = (value << 8) | octet;
        ++parts;
        if (parts < 4) {
            if (i >= s.size() || s[i] != '.') return false;
            ++i;
        }
    }
    if (i != s.size()) return false;
    out = value;
    return true;
}

std::optional<IpAddr> IpAddr::parse(std::string_view text) {
    std::uint32_t v = 0;
    if (parseV4Fast(text, v)) return v4(v);
    if (text.empty() || text.size() > 45 || text.find(':') == std::string_view::npos) return std::nullopt;
    char buf[64];
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';
    IpAddr a;
    if (inet_pton(AF_INET6, buf, a.bytes.data()) != 1) return std::nullopt;
    static constexpr std::uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    a.v6 = std::memcmp(a.bytes.data(), mapped, 12) != 0; // ::ffff:1.2.3.4 is the IPv4 address
    return a;
}

std::string IpAddr::toString() const {
    char buf[INET6_ADDRSTRLEN];
    if (!v6) {
        std::uint32_t h = v4Value();
        std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", h >> 24, (h >> 16) & 255, (h >> 8) & 255, h & 255);
        return buf;
    }
    if (!inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf)) return "?";
    return buf;
}

std::size_t IpAddrHash::operator()(const IpAddr& a) const noexcept {
    std::uint64_t lo, hi;
    std::memcpy(&lo, a.bytes.data(), 8);
    std::memcpy(&hi, a.bytes.data() + 8, 8);
    std::uint64_t h = hi * 0x9E3779B97F4A7C15ull ^ (lo + 0x632BE59BD9B4E019ull + (hi << 6) + (hi >> 2));
    return std::size_t(h ^ (h >> 29));
}

} // namespace prism
