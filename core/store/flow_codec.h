#pragma once
// Column codecs of the session file's flow chunks (docs/SESSION_FORMAT.md "Blob encodings"). Records are
// sorted by start time, so start times go as deltas and end times as durations, as LEB128 varints (zig-zag
// for signed values), like byte and packet counts; ports, protocol and (up to 65,536 endpoints) endpoint ids
// are fixed-width little-endian, which decodes without branches. About 20 bytes per record instead of 45,
// decoded at memory speed — no general-purpose compressor on the path that opening a session waits for.
#include "model/flow_table.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace prism::store {

enum class FlowColumn : std::uint8_t { StartNs, DurationNs, Src, Dst, SrcPort, DstPort, Proto, Bytes, Packets };
inline constexpr int kFlowColumnCount = 9;
const char* flowColumnName(FlowColumn c); // the `column` value stored in flow_chunks
// The `encoding` the writer uses for column `c` of a table with `endpoints` distinct addresses.
const char* flowColumnEncoding(FlowColumn c, std::size_t endpoints);
// Whether a reader knows `encoding` for column `c`.
bool flowEncodingKnown(FlowColumn c, std::string_view encoding);
bool parseFlowColumn(std::string_view name, FlowColumn& out);

// Appends the encoding of records [first, first + count) of column `c` to `out`.
void encodeFlowColumn(const FlowTable& flows, FlowColumn c, std::size_t first, std::size_t count, std::string& out);

// The high halves of durations, byte and packet counts of 2^32 or more met by a decode (CountColumn holds them
// only once one comes): gathered by each thread that decodes chunks side by side, set once all are done. Per
// chunk that has one, the high halves of all its rows (4 bytes a row: an exporter's flows last longer than
// 4.3 s nearly all, and a (row, half) pair each would take 16).
struct WideCounts {
    struct Chunk {
        std::uint64_t first; // its first row
        std::vector<std::uint32_t> high;
    };
    std::vector<Chunk> durations, bytes, packets;
};
// Sets a chunk's high halves in the column (widening it).
void setHigh(CountColumn& column, const WideCounts::Chunk& chunk);

// Decodes `count` values of column `c` into records [first, first + count) of `flows`, whose columns must
// already have their final size (the starts not compacted: decodes side by side write them as 8-byte rows),
// the endpoint id columns widened (IdColumn::widen) where `endpoints` is over
// 2^16 (an id of 2^16 or more is out of range in a narrow column). Endpoint ids must be below `endpoints`.
// Wide counts go to `wide` when given (decodes side by side), else straight into the table. Returns an empty string on
// success, else what is wrong (damaged data).
std::string decodeFlowColumn(FlowColumn c, std::string_view encoding, std::string_view data, std::size_t first,
                             std::size_t count, std::size_t endpoints, FlowTable& flows, WideCounts* wide = nullptr);

// Record indices (ascending, as RecognizedJob::records): delta varints.
void encodeIndexList(std::span<const std::uint32_t> list, std::string& out);
std::string decodeIndexList(std::string_view data, std::size_t count, std::size_t limit,
                            std::vector<std::uint32_t>& out);

} // namespace prism::store
