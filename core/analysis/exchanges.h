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

// Per record of `recs` (in start order): 0 the ring's (or no experts), 1 an exchange, 2 a lone leftover send.
std::vector<char> expertExchanges(const std::vector<DpRecord>& recs, std::size_t nodes, std::int64_t windowNs);

} // namespace prism
