#include "analysis/exchanges.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace prism {

std::vector<char> expertExchanges(const std::vector<DpRecord>& dp, std::size_t nodes, std::int64_t windowNs) {
    // The distinct ordered links (src, dst) and their groups, found without hashing per record: a member sends to
    // one peer (a ring) or to the few of its group (an exchange).
    struct Link {
        std::int32_t dst, group;
    };
    std::vector<std::vector<Link>> out(nodes); // per sender
    auto find = [&](std::int32_t src, std::int32_t dst) {
        const auto& v = out[std::size_t(src)];
        return std::any_of(v.begin(), v.end(), [&](const Link& l) { return l.dst == dst; });
    };
    for (const DpRecord& r : dp)
        if (!find(r.src, r.dst)) out[std::size_t(r.src)].push_back({r.dst, r.group});
    auto bothWays = [&](const DpRecord& r) { return find(r.dst, r.src); };
    struct Kinds {
        bool oneWay = false, bothWays = false;
        std::unordered_set<int> members;
    };
    std::unordered_map<int, Kinds> kinds;
    for (std::size_t src = 0; src < nodes; ++src)
        for (const Link& l : out[src]) {
            Kinds& k = kinds[l.group];
            (find(l.dst, std::int32_t(src)) ? k.bothWays : k.oneWay) = true;
            k.members.insert(int(src));
            k.members.insert(l.dst);
        }
    std::vector<char> exchange(dp.size(), 0);
    bool any = false;
    for (const auto& [g, k] : kinds) any = any || (k.bothWays && (k.oneWay || k.members.size() >= 3));
    if (!any) return exchange; // rings only (or two-member groups): nothing to tell apart
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
