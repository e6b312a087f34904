#pragma once
// Expert all-to-all (mixture of experts) told from a ring collective's hops among the records of DP groups.
// Both run between the DP peers of a group: the gradient sync (a ring) and, with experts, the dispatch and
// combine of every forward and backward. Steps end with the ring's sync and parallelism is oriented by it, so
// both stages take the exchanges out first:
//  - by direction: an exchange sends both ways on a pair, a ring's hops go one way. In a group that has both
//    kinds of pair (EP smaller than DP, or a ring ordered across the EP groups) the one-way pairs carry the
//    ring alone, and the records of the both-ways pairs are exchanges (the ring's hops among them are told
//    back by time, where a caller needs them: steps.cpp rejoins those inside a sync burst);
//  - by fan-out, where every pair of a group of three or more goes both ways (EP = DP): an exchange posts a
//    member's sends to its peers at once, a ring's hop goes to one peer. A member's sends that start within
//    windowNs of each other to at least two peers and half the others of its group are exchanges; and as a
//    ring's hops start together (its members wait for the last one), a send that no other member's send joins
//    within windowNs is one too (an exchange that lost its other records to the exporter).
// A two-member group (a ring both ways, one peer per exchange) tells nothing apart.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace prism {

// One record between two members of a DP group: times, sender and receiver (any dense node ids below `nodes`)
// and the group.
struct DpRecord {
    std::int64_t s, e;
    std::int32_t src, dst;
    std::int32_t group;
};

// The distinct links (sender -> receiver) among DP records and the kinds of pair each group has: what
// expertExchanges decides by first. A member sends to one peer (a ring) or to the few of its group (an
// exchange), so a link is found by a short scan, without hashing per record.
class DpLinks {
public:
    explicit DpLinks(std::size_t nodes) : m_out(nodes) {}
    void add(std::int32_t src, std::int32_t dst, std::int32_t group) {
        if (!has(src, dst)) m_out[std::size_t(src)].push_back({dst, group});
    }
    // Adds the links of `later` (of records that came after this one's), as if added here record by record.
    void append(const DpLinks& later) {
        later.eachLink([&](std::int32_t src, std::int32_t dst, std::int32_t group) { add(src, dst, group); });
    }
    bool has(std::int32_t src, std::int32_t dst) const {
        const auto& v = m_out[std::size_t(src)];
        return std::any_of(v.begin(), v.end(), [&](const Link& l) { return l.dst == dst; });
    }
    template <typename F>
    void eachLink(F&& f) const { // f(src, dst, group)
        for (std::size_t src = 0; src < m_out.size(); ++src)
            for (const Link& l : m_out[src]) f(std::int32_t(src), l.dst, l.group);
    }
    // Whether a group holds pairs both ways beside one-way pairs, or both-ways pairs among three members or more:
    // else expertExchanges marks no record of these links (rings only, or two-member groups).
    bool mayHoldExchanges() const;

private:
    struct Link {
        std::int32_t dst, group;
    };
    std::vector<std::vector<Link>> m_out; // per sender
};

// Per record of `recs` (in start order): 0 the ring's (or no experts), 1 an exchange, 2 a lone leftover send.
// Each group is judged by its own records alone: the records may come one group at a time.
std::vector<char> expertExchanges(const std::vector<DpRecord>& recs, std::size_t nodes, std::int64_t windowNs);

} // namespace prism
