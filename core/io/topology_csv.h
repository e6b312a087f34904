#pragma once
// A topology from a hostfile with addresses: CSV lines `ip,host[,switch[,gpus]]` (docs/FORMATS.md "Topology from
// a hostfile"), with or without a header naming those columns; `#` lines are comments.
#include "model/topology.h"

#include <string>
#include <string_view>

namespace prism {

// Whether `text` reads as such a hostfile: its first line that is no comment has 2 fields or more, the first an IP
// address (or it is a header naming an "ip" column).
bool looksLikeTopologyCsv(std::string_view text);

// The topology it describes: hosts in the order they first appear, each NIC its host's next rail and GPU (or the
// GPUs its gpus field lists: 3, 0-1, 0;2), the switches named as leaves. Throws InputError (file, line, column and
// what was expected) on a line that is not one, a NIC listed twice, or no NIC at all.
Topology readTopologyCsv(const std::string& path, std::string_view text);

} // namespace prism
