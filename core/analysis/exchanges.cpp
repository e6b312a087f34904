#include "analysis/exchanges.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace prism {

std::vector<char> expertExchanges(const std::vector<DpRecord>& dp, std::size_t nodes, std::int64_t windowNs) {
    std::unordered_set<std::uint64_t> sent; // ordered (src, dst)
    for (const DpRecord& r : dp) sent.insert(std::uint64_t(r.src) * nodes + std::uint64_t(r.dst));
    auto bothWays = [&](const DpRecord& r) { return sent.count(std::uint64_t(r.dst) * nodes + std::uint64_t(r.src)) > 0; };
    struct Kinds {
        bool oneWay = false, bothWays = false;
        std::unordered_set<int> members;
    };
    std::unordered_map<int, Kinds> kinds;
    for (const DpRecord& r : dp) {
        Kinds& k = kinds[r.group];
        (bothWays(r) ? k.bothWays : k.oneWay) = true;
        k.members.insert(r.src);
        k.members.insert(r.dst);
    }
    std::vector<char> exchange(dp.size(), 0);
    std::vector<std::vector<std::size_t>> bySender(nodes); // fan-out groups only, in start order
    for (std::size_t i = 0; i < dp.size(); ++i) {
        const Kinds& k = kinds[dp[i].group];
        if (k.oneWay && k.bothWays) exchange[i] = bothWays(dp[i]);
        else if (!k.oneWay && k.members.size() >= 3) bySender[std::size_t(dp[i].src)].push_back(i);
    }
    for (const auto& v : bySender)
        for (std::size_t i = 0; i < v.size();) {
            std::size_t j = i;
            std::unordered_set<int> peers;
            while (j < v.size() && dp[v[j]].s - dp[v[i]].s <= windowNs) peers.insert(dp[v[j++]].dst);
            const std::size_t size = kinds[dp[v[i]].group].members.size();
            if (peers.size() >= std::max<std::size_t>(2, size / 2))
                for (std::size_t x = i; x < j; ++x) exchange[v[x]] = 1;
            i = j;
        }
    // A ring's hops start together (its members wait for the last one); a send left alone by the rule above (an
    // exchange that lost its other records) has no other member's send beside it: an exchange too.
    std::unordered_map<int, std::vector<std::size_t>> left; // fan-out groups: the records kept, in start order
    for (const auto& v : bySender)
        for (std::size_t i : v)
            if (!exchange[i]) left[dp[i].group].push_back(i);
    for (auto& [g, v] : left) {
        std::sort(v.begin(), v.end());
        for (std::size_t x = 0, lo = 0; x < v.size(); ++x) {
            while (dp[v[lo]].s < dp[v[x]].s - windowNs) ++lo;
            bool together = false;
            for (std::size_t y = lo; y < v.size() && dp[v[y]].s <= dp[v[x]].s + windowNs && !together; ++y)
                together = dp[v[y]].src != dp[v[x]].src;
            if (!together) exchange[v[x]] = 2;
        }
    }
    return exchange;
}

} // namespace prism
