#pragma once
// IPv4/IPv6 address value type, parsed and printed without any OS-specific types in the interface.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace prism {

struct IpAddr {
    // IPv4 is stored as an IPv4-mapped IPv6 address (::ffff:a.b.c.d) so both families share one key.
    std::array<std::uint8_t, 16> bytes{};
    bool v6 = false;

    static IpAddr v4(std::uint32_t hostOrder);
    static IpAddr v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d);
    // Parses dotted IPv4 or RFC 4291/5952 IPv6 text; nullopt when the text is not an address.
    static std::optional<IpAddr> parse(std::string_view text);

    std::uint32_t v4Value() const; // host order; only meaningful when !v6
    std::string toString() const;  // canonical text (RFC 5952 for IPv6)

    friend bool operator==(const IpAddr&, const IpAddr&) = default;
    friend auto operator<=>(const IpAddr&, const IpAddr&) = default;
};

struct IpAddrHash {
    std::size_t operator()(const IpAddr& a) const noexcept;
};

} // namespace prism
