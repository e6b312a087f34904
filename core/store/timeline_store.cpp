#include "store/timeline_store.h"

#include "store/store_util.h"
#include "util/varint.h"

#include <nlohmann/json.hpp>

#include <array>

namespace prism::store {
namespace {

using nlohmann::json;

constexpr std::size_t kSegmentsPerChunk = 1 << 20;

enum class SegColumn { StartNs, DurationNs, Kind, MicroBatch, Peer, Step, Bytes };
constexpr int kSegColumns = 7;
const char* const kSegColumnNames[kSegColumns] = {"start_ns", "duration_ns", "kind", "micro_batch",
                                                  "peer",     "step",        "bytes"};
const char* const kSegEncodings[kSegColumns] = {"delta-zigzag-varint", "zigzag-varint", "u8", "plus1-u16",
                                                "plus1-u16",           "plus1-u16",     "varint"};
// micro_batch, peer and step are 16-bit when they fit (branch-free to decode); peer and step fall back to
// varints for jobs of 65,535 ranks or steps and more.
bool isSmallColumn(int col) {
    return col == int(SegColumn::MicroBatch) || col == int(SegColumn::Peer) || col == int(SegColumn::Step);
}
bool encodingKnown(int col, const std::string& encoding) {
    if (col < 0) return false;
    if (isSmallColumn(col))
        return encoding == "plus1-u16" || (col != int(SegColumn::MicroBatch) && encoding == "plus1-varint");
    return encoding == kSegEncodings[col];
}
constexpr const char* kStatsEncoding = "zigzag-varint-rows-15";

int segColumn(const std::string& name) {
    for (int i = 0; i < kSegColumns; ++i)
        if (name == kSegColumnNames[i]) return i;
    return -1;
}

// RankStepStats as 15 signed integers, in the order docs/SESSION_FORMAT.md lists them (stage 0's warm-up forwards
// counted with its forwards, as they were before the two were told apart: nothing read from a session tells them).
void putStats(VarintWriter& w, const RankStepStats& s) {
    for (std::int64_t v : {s.computeNs, s.waitNs, s.ppSendNs, s.ppRecvNs, s.dpSyncNs, s.otherNs,
                           std::int64_t(s.ppSends), std::int64_t(s.ppRecvs), s.dpStartNs, s.dpEndNs, s.dpStartLagNs,
                           s.forwardComputeNs + s.warmupComputeNs, s.backwardComputeNs,
                           std::int64_t(s.forwardSamples + s.warmupSamples), std::int64_t(s.backwardSamples)})
        w.putSigned(v);
}

bool getStats(VarintReader& r, RankStepStats& s) {
    std::int64_t v[15];
    for (auto& x : v) x = r.nextSigned();
    if (!r.ok) return false;
    s.computeNs = v[0], s.waitNs = v[1], s.ppSendNs = v[2], s.ppRecvNs = v[3], s.dpSyncNs = v[4], s.otherNs = v[5];
    s.ppSends = std::uint32_t(v[6]), s.ppRecvs = std::uint32_t(v[7]);
    s.dpStartNs = v[8], s.dpEndNs = v[9], s.dpStartLagNs = v[10];
    s.forwardComputeNs = v[11], s.backwardComputeNs = v[12];
    s.forwardSamples = std::uint32_t(v[13]), s.backwardSamples = std::uint32_t(v[14]);
    return true;
}

using Encodings = std::array<const char*, kSegColumns>;

// Writes "plus1" values (none, all ones, becomes 0) as 16-bit little-endian or as varints.
class SmallWriter {
public:
    SmallWriter(std::string& out, std::size_t n, bool fixed)
        : m_fixed(fixed), m_out(out), m_varints(out, fixed ? 0 : n) {
        if (fixed) out.reserve(2 * n);
    }
    void put(std::uint32_t plus1) {
        if (m_fixed) {
            m_out.push_back(char(plus1 & 0xff));
            m_out.push_back(char((plus1 >> 8) & 0xff));
        } else {
            m_varints.put(plus1);
        }
    }

private:
    bool m_fixed;
    std::string& m_out;
    VarintWriter m_varints;
};

class SmallReader {
public:
    SmallReader(std::string_view data, bool fixed)
        : m_fixed(fixed), m_p(reinterpret_cast<const std::uint8_t*>(data.data())), m_end(m_p + data.size()),
          m_varints(data) {}
    std::uint64_t next() {
        if (!m_fixed) return m_varints.next();
        if (m_end - m_p < 2) {
            m_ok = false;
            return 0;
        }
        std::uint64_t v = std::uint64_t(m_p[0]) | std::uint64_t(m_p[1]) << 8;
        m_p += 2;
        return v;
    }
    bool ok() const { return m_fixed ? m_ok : m_varints.ok; }
    bool atEnd() const { return m_fixed ? m_p == m_end : m_varints.atEnd(); }

private:
    bool m_fixed;
    const std::uint8_t* m_p;
    const std::uint8_t* m_end;
    VarintReader m_varints;
    bool m_ok = true;
};

// The encodings of one job's chunks: peer and step are 16-bit unless a value does not fit.
Encodings encodingsFor(const JobTimeline& t) {
    std::uint32_t maxPeer = 0, maxStep = 0;
    for (const RankTimeline& r : t.ranks) {
        StepWalk step(t.steps);
        r.forEachSegment([&](const Segment& s) {
            maxPeer = std::max(maxPeer, std::uint32_t(s.peer + 1)); // none (all ones) counts as 0
            maxStep = std::max(maxStep, std::uint32_t(step.next(s.startNs) + 1));
        });
    }
    Encodings e;
    for (int c = 0; c < kSegColumns; ++c) e[std::size_t(c)] = kSegEncodings[c];
    if (maxPeer > 0xFFFF) e[int(SegColumn::Peer)] = "plus1-varint";
    if (maxStep > 0xFFFF) e[int(SegColumn::Step)] = "plus1-varint";
    return e;
}

// Encodes the segments of ranks [r0, r1) into the seven columns in one pass over them.
void encodeChunk(const JobTimeline& t, std::size_t r0, std::size_t r1, std::size_t n, const Encodings& enc,
                 std::array<std::string, kSegColumns>& cols) {
    const std::vector<RankTimeline>& ranks = t.ranks;
    for (auto& c : cols) c.clear();
    std::string& kinds = cols[int(SegColumn::Kind)];
    kinds.reserve(n);
    auto fixed = [&](SegColumn c) { return std::string_view(enc[std::size_t(c)]) == "plus1-u16"; };
    {
        VarintWriter start(cols[int(SegColumn::StartNs)], n), duration(cols[int(SegColumn::DurationNs)], n),
            bytes(cols[int(SegColumn::Bytes)], n);
        SmallWriter micro(cols[int(SegColumn::MicroBatch)], n, true),
            peer(cols[int(SegColumn::Peer)], n, fixed(SegColumn::Peer)),
            step(cols[int(SegColumn::Step)], n, fixed(SegColumn::Step));
        std::uint64_t prev = 0;
        for (std::size_t r = r0; r < r1; ++r) {
            StepWalk stepOf(t.steps);
            ranks[r].forEachSegment([&](const Segment& s) {
                start.putSigned(std::int64_t(std::uint64_t(s.startNs) - prev));
                prev = std::uint64_t(s.startNs);
                duration.putSigned(std::int64_t(std::uint64_t(s.endNs) - std::uint64_t(s.startNs)));
                kinds.push_back(char(s.kind));
                micro.put(std::uint16_t(s.microBatch + 1));
                peer.put(std::uint32_t(s.peer + 1));
                step.put(std::uint32_t(stepOf.next(s.startNs) + 1));
                bytes.put(s.bytes);
            });
        }
    }
}

// Decodes the segments of ranks [r0, r1) from the chunk's seven columns, one segment at a time (each
// Segment is written once; decoding column by column would sweep the whole array seven times).
std::string decodeChunk(const std::array<std::string_view, kSegColumns>& cols,
                        const std::array<std::string, kSegColumns>& enc, std::vector<RankTimeline>& ranks,
                        std::size_t r0, std::size_t r1, const std::vector<std::uint64_t>& counts) {
    std::uint64_t total = 0;
    for (std::size_t r = r0; r < r1; ++r) total += counts[r];
    const std::string_view kinds = cols[int(SegColumn::Kind)];
    if (kinds.size() != total)
        return "kind: expected " + std::to_string(total) + " bytes, found " + std::to_string(kinds.size());
    auto fixed = [&](SegColumn c) { return enc[std::size_t(c)] == "plus1-u16"; };
    VarintReader start(cols[int(SegColumn::StartNs)]), duration(cols[int(SegColumn::DurationNs)]),
        bytes(cols[int(SegColumn::Bytes)]);
    SmallReader micro(cols[int(SegColumn::MicroBatch)], true),
        peer(cols[int(SegColumn::Peer)], fixed(SegColumn::Peer)),
        step(cols[int(SegColumn::Step)], fixed(SegColumn::Step));
    const std::uint64_t peers = ranks.size();
    std::uint64_t acc = 0;
    std::size_t k = 0;
    for (std::size_t r = r0; r < r1; ++r) {
        std::vector<Segment>& out = ranks[r].segments;
        out.reserve(counts[r]);
        for (std::uint64_t i = 0; i < counts[r]; ++i) {
            Segment s;
            acc += std::uint64_t(start.nextSigned());
            s.startNs = std::int64_t(acc);
            s.endNs = std::int64_t(acc + std::uint64_t(duration.nextSigned()));
            const auto kind = std::uint8_t(kinds[k++]);
            std::uint64_t m = micro.next(), p = peer.next(), st = step.next();
            s.bytes = bytes.next();
            if (kind > std::uint8_t(SegmentKind::Other)) return "unknown segment kind " + std::to_string(kind);
            if (p > peers || st > 0xffffffffu) return "a value is out of range";
            s.kind = SegmentKind(kind);
            s.microBatch = std::uint16_t(m - 1);
            s.peer = std::uint32_t(p - 1);
            out.push_back(s);
        }
    }
    for (const VarintReader* rd : {&start, &duration, &bytes})
        if (!rd->ok || !rd->atEnd()) return "a column's length does not match its segments";
    for (const SmallReader* rd : {&micro, &peer, &step})
        if (!rd->ok() || !rd->atEnd()) return "a column's length does not match its segments";
    return {};
}

} // namespace

void writeTimelines(Database& db, const std::vector<JobAnalysis>& jobs, const std::vector<std::string>& jobIds) {
    Statement tl(db, "INSERT INTO timelines(job, job_id, start_ns, end_ns, ranks, segments, steps, stats_encoding, "
                     "stats_crc32c, stats) VALUES (?,?,?,?,?,?,?,?,?,?)");
    Statement rk(db, "INSERT INTO timeline_ranks(job, rank, endpoint, ip, label, stage, dp_group, host, "
                     "max_segment_ns, segments, step_stats) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
    Statement ch(db, "INSERT INTO timeline_chunks(job, chunk, first_rank, ranks, segments, column, encoding, crc32c, "
                     "data) VALUES (?,?,?,?,?,?,?,?,?)");
    struct Plan {
        std::size_t job;
        std::int64_t chunk;
        std::size_t r0, r1, segments;
        Encodings encodings;
    };
    std::vector<Plan> plans;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
        const JobTimeline& t = jobs[j].timeline;
        const auto jid = std::int64_t(j);
        json steps = json::array();
        for (const StepInfo& s : t.steps) steps.push_back({s.index, s.startNs, s.endNs, s.slow});
        std::string stats;
        {
            std::size_t entries = 0;
            for (const RankTimeline& r : t.ranks) entries += r.stepStats.size();
            VarintWriter w(stats, entries * 15);
            for (const RankTimeline& r : t.ranks)
                for (const RankStepStats& s : r.stepStats) putStats(w, s);
        }
        tl.bind(1, jid).bind(2, j < jobIds.size() ? jobIds[j] : std::string()).bind(3, t.startNs).bind(4, t.endNs);
        tl.bind(5, std::int64_t(t.ranks.size())).bind(6, std::int64_t(t.segmentCount())).bind(7, steps.dump());
        tl.bind(8, kStatsEncoding).bind(9, std::int64_t(crc32c(stats))).bindBlob(10, stats.data(), stats.size());
        tl.run();
        for (std::size_t r = 0; r < t.ranks.size(); ++r) {
            const RankTimeline& x = t.ranks[r];
            rk.bind(1, jid).bind(2, std::int64_t(r)).bind(3, x.nic).bind(4, x.ip).bind(5, x.label).bind(6, x.stage);
            rk.bind(7, x.dpGroup).bind(8, x.host).bind(9, x.maxSegmentNs).bind(10, std::int64_t(x.segmentCount()));
            rk.bind(11, std::int64_t(x.stepStats.size())).run();
        }
        // Chunks of whole ranks, about kSegmentsPerChunk segments each.
        const Encodings encodings = encodingsFor(t);
        std::int64_t chunk = 0;
        for (std::size_t r0 = 0; r0 < t.ranks.size();) {
            std::size_t r1 = r0, n = 0;
            while (r1 < t.ranks.size() && (r1 == r0 || n + t.ranks[r1].segmentCount() <= kSegmentsPerChunk))
                n += t.ranks[r1++].segmentCount();
            plans.push_back({j, chunk++, r0, r1, n, encodings});
            r0 = r1;
        }
    }
    // Batches of chunks are encoded in parallel, then inserted in order.
    const unsigned threads = threadCount(0);
    std::vector<std::array<std::string, kSegColumns>> encoded(threads);
    for (std::size_t p0 = 0; p0 < plans.size(); p0 += threads) {
        const std::size_t nb = std::min<std::size_t>(threads, plans.size() - p0);
        parallelFor(nb, threads, [&](std::size_t b, unsigned) {
            const Plan& p = plans[p0 + b];
            encodeChunk(jobs[p.job].timeline, p.r0, p.r1, p.segments, p.encodings, encoded[b]);
        });
        for (std::size_t b = 0; b < nb; ++b) {
            const Plan& p = plans[p0 + b];
            for (int col = 0; col < kSegColumns; ++col) {
                const std::string& data = encoded[b][std::size_t(col)];
                ch.bind(1, std::int64_t(p.job)).bind(2, p.chunk).bind(3, std::int64_t(p.r0));
                ch.bind(4, std::int64_t(p.r1 - p.r0)).bind(5, std::int64_t(p.segments)).bind(6, kSegColumnNames[col]);
                ch.bind(7, p.encodings[std::size_t(col)]).bind(8, std::int64_t(crc32c(data)));
                ch.bindBlob(9, data.data(), data.size()).run();
            }
        }
    }
}

std::vector<JobTimeline> readTimelines(Database& db, const std::string& path, std::size_t jobs, std::size_t endpoints,
                                       unsigned threads, const std::function<void(std::size_t, std::size_t)>& progress,
                                       bool pack) {
    std::vector<JobTimeline> out(jobs);
    auto jobIndex = [&](std::int64_t v) {
        if (v < 0 || std::uint64_t(v) >= jobs) damaged(path, "a timeline row refers to a missing job");
        return std::size_t(v);
    };
    // Sizes are checked against the stored bytes before anything is allocated for them.
    std::vector<std::vector<std::uint64_t>> segCount(jobs), statsCount(jobs);
    std::uint64_t totalSegments = 0;
    {
        Statement s(db, "SELECT job, rank, endpoint, ip, label, stage, dp_group, host, max_segment_ns, segments, "
                        "step_stats FROM timeline_ranks ORDER BY job, rank");
        while (s.step()) {
            const std::size_t j = jobIndex(s.integer(0));
            JobTimeline& t = out[j];
            if (s.integer(1) != std::int64_t(t.ranks.size())) damaged(path, "timeline ranks are not consecutive");
            if (s.integer(2) < 0 || std::uint64_t(s.integer(2)) >= endpoints)
                damaged(path, "a timeline rank has an unknown endpoint");
            if (s.integer(9) < 0 || s.integer(10) < 0 || s.integer(9) > (std::int64_t(1) << 40) ||
                s.integer(10) > (std::int64_t(1) << 40))
                damaged(path, "a timeline rank has an impossible segment or step count");
            RankTimeline r;
            r.nic = EndpointId(s.integer(2));
            r.ip = s.text(3);
            r.label = s.text(4);
            r.stage = int(s.integer(5));
            r.dpGroup = int(s.integer(6));
            r.host = int(s.integer(7));
            r.maxSegmentNs = s.integer(8);
            t.ranks.push_back(std::move(r));
            segCount[j].push_back(std::uint64_t(s.integer(9)));
            statsCount[j].push_back(std::uint64_t(s.integer(10)));
            totalSegments += std::uint64_t(s.integer(9));
        }
    }
    {
        Statement s(db, "SELECT job, start_ns, end_ns, ranks, segments, steps, stats_encoding, stats_crc32c, stats "
                        "FROM timelines ORDER BY job");
        std::size_t rows = 0;
        while (s.step()) {
            const std::size_t j = jobIndex(s.integer(0));
            JobTimeline& t = out[j];
            ++rows;
            t.startNs = s.integer(1);
            t.endNs = s.integer(2);
            std::uint64_t segs = 0;
            for (std::uint64_t n : segCount[j]) segs += n;
            if (s.integer(3) != std::int64_t(t.ranks.size()) || std::uint64_t(s.integer(4)) != segs)
                damaged(path, "the timeline of job " + std::to_string(j) + " disagrees with its ranks");
            json steps = json::parse(s.text(5));
            for (const json& st : steps)
                t.steps.push_back({jsonInteger<int>(st.at(0)), jsonInteger<std::int64_t>(st.at(1)),
                                   jsonInteger<std::int64_t>(st.at(2)), st.at(3).get<bool>()});
            if (s.text(6) != kStatsEncoding) damaged(path, "timeline stats have an unknown encoding");
            std::string_view blob = s.blob(8);
            if (crc32c(blob) != std::uint32_t(s.integer(7))) damaged(path, "timeline stats fail their CRC-32C check");
            std::uint64_t entries = 0;
            for (std::uint64_t n : statsCount[j]) entries += n;
            if (entries * 15 > blob.size()) damaged(path, "timeline stats are shorter than their counts");
            VarintReader rd(blob);
            for (std::size_t r = 0; r < t.ranks.size(); ++r) {
                t.ranks[r].stepStats.resize(statsCount[j][r]);
                for (RankStepStats& x : t.ranks[r].stepStats)
                    if (!getStats(rd, x)) damaged(path, "timeline stats end early");
            }
            if (!rd.atEnd()) damaged(path, "timeline stats have extra data");
        }
        if (rows != jobs) damaged(path, "the timelines table does not have one row per job");
    }
    struct Chunk {
        std::size_t job;
        std::int64_t id;
        std::size_t firstRank, ranks;
        std::uint64_t segments;
        std::array<std::int64_t, kSegColumns> rowids{}; // where each column's blob is
        std::array<std::uint32_t, kSegColumns> crcs{};
        std::array<std::string, kSegColumns> encodings;
        int columns = 0;
    };
    std::vector<Chunk> chunks;
    std::uint64_t blobBytes = 0;
    {
        Statement s(db, "SELECT job, chunk, first_rank, ranks, segments, column, encoding, length(data), id, crc32c "
                        "FROM timeline_chunks ORDER BY job, chunk, column");
        while (s.step()) {
            const std::size_t j = jobIndex(s.integer(0));
            int col = segColumn(s.text(5));
            if (!encodingKnown(col, s.text(6)))
                damaged(path, "timeline column \"" + s.text(5) + "\" (" + s.text(6) + ") is unknown");
            if (chunks.empty() || chunks.back().job != j || chunks.back().id != s.integer(1)) {
                if (s.integer(2) < 0 || s.integer(3) < 0 || s.integer(4) < 0)
                    damaged(path, "a timeline chunk has a negative size");
                chunks.push_back({j, s.integer(1), std::size_t(s.integer(2)), std::size_t(s.integer(3)),
                                  std::uint64_t(s.integer(4)), {}, {}, {}, 0});
            }
            Chunk& c = chunks.back();
            ++c.columns;
            c.rowids[std::size_t(col)] = s.integer(8);
            c.crcs[std::size_t(col)] = std::uint32_t(s.integer(9));
            c.encodings[std::size_t(col)] = s.text(6);
            blobBytes += std::uint64_t(s.integer(7));
        }
    }
    std::vector<std::size_t> nextRank(jobs, 0);
    for (const Chunk& c : chunks) {
        if (c.columns != kSegColumns || c.firstRank != nextRank[c.job] ||
            c.firstRank + c.ranks > out[c.job].ranks.size())
            damaged(path, "timeline chunk " + std::to_string(c.id) + " of job " + std::to_string(c.job) +
                              " is missing, incomplete or out of place");
        std::uint64_t n = 0;
        for (std::size_t r = c.firstRank; r < c.firstRank + c.ranks; ++r) n += segCount[c.job][r];
        if (n != c.segments) damaged(path, "a timeline chunk disagrees with its ranks' segment counts");
        nextRank[c.job] += c.ranks;
    }
    for (std::size_t j = 0; j < jobs; ++j)
        if (nextRank[j] != out[j].ranks.size()) damaged(path, "the timeline chunks of job " + std::to_string(j) +
                                                                  " do not cover all its ranks");
    // Every segment takes at least one byte in each of its 7 columns.
    if (totalSegments * kSegColumns > blobBytes) damaged(path, "the timeline chunks are smaller than their counts");
    ConnectionPool connections(path, threads, db);
    std::vector<std::array<std::string, kSegColumns>> buffers(threads);
    parallelFor(
        chunks.size(), threads,
        [&](std::size_t k, unsigned worker) {
            const Chunk& c = chunks[k];
            const std::string where = "timeline chunk " + std::to_string(c.id) + " of job " + std::to_string(c.job);
            std::array<std::string_view, kSegColumns> cols;
            for (std::size_t col = 0; col < std::size_t(kSegColumns); ++col) {
                std::string& blob = buffers[worker][col];
                connections.get(worker).readBlob("timeline_chunks", "data", c.rowids[col], blob);
                if (crc32c(blob) != c.crcs[col])
                    damaged(path, where + ", " + kSegColumnNames[col] + " fails its CRC-32C check");
                cols[col] = blob;
            }
            std::string err =
                decodeChunk(cols, c.encodings, out[c.job].ranks, c.firstRank, c.firstRank + c.ranks, segCount[c.job]);
            if (!err.empty()) damaged(path, where + ": " + err);
            if (pack)
                for (std::size_t r = c.firstRank; r < c.firstRank + c.ranks; ++r) {
                    RankTimeline& rt = out[c.job].ranks[r];
                    rt.packed.pack(rt.segments);
                    std::vector<Segment>().swap(rt.segments);
                }
        },
        [&](std::size_t done) {
            if (progress) progress(done, chunks.size());
        });
    return out;
}

} // namespace prism::store
