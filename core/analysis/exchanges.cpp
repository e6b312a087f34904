#include "analysis/exchanges.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace prism {

namespace {

struct Kinds {
    bool oneWay = false, bothWays = false;
    std::unordered_set<int> members;
};

std::unordered_map<int, Kinds> kindsOf(const DpLinks& links) {
    std::unordered_map<int, Kinds> kinds;
    links.eachLink([&](std::int32_t src, std::int32_t dst, std::int32_t group) {
        Kinds& k = kinds[group];
        (links.has(dst, src) ? k.bothWays : k.oneWay) = true;
        k.members.insert(src);
        k.members.insert(dst);
    });
    return kinds;
}

bool anyExchanges(const std::unordered_map<int, Kinds>& kinds) {
    return std::any_of(kinds.begin(), kinds.end(), [](const auto& gk) {
        return gk.second.bothWays && (gk.second.oneWay || gk.second.members.size() >= 3);
    });
}

} // namespace

bool DpLinks::mayHoldExchanges() const { return anyExchanges(kindsOf(*this)); }

std::vector<char> expertExchanges(const std::vector<DpRecord>& dp, std::size_t nodes, std::int64_t windowNs) {
    DpLinks links(nodes);
    for (const DpRecord& r : dp) links.add(r.src, r.dst, r.group);
    auto bothWays = [&](const DpRecord& r) { return links.has(r.dst, r.src); };
    std::unordered_map<int, Kinds> kinds = kindsOf(links);
    std::vector<char> exchange(dp.size(), 0);
    if (!anyExchanges(kinds)) return exchange;             // rings only (or two-member groups): nothing to tell apart
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
