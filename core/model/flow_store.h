#pragma once
// Flow records that are not held whole: a store is asked for aggregates first (what recognition needs), then
// for each job's records, one job at a time (analysis/staged.h; docs/ENGINE.md "Staged analysis"). A
// ClickHouse table is one (io/clickhouse.h); a FlowTable in memory is another (TableStore, for tests and as the
// reference the others must agree with).
#include "model/diagnostics.h"
#include "model/flow_table.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace prism {

// Counts over every record of the store (RoCE and other), as summarize() gives them for a capture.
struct StoreOverview {
    std::uint64_t records = 0, roceRecords = 0, otherRecords = 0;
    std::uint64_t roceBytes = 0, otherBytes = 0;
    std::uint64_t endpoints = 0;                     // distinct addresses, as source or destination
    std::int64_t firstNs = 0, lastNs = 0;            // first start, last end of all records (0, 0 when empty)
    std::int64_t roceFirstNs = 0, roceLastNs = 0;    // the same over RoCE records
};

// The record time resolution (analysis/resolution.h tells what each figure means).
struct TimeResolution {
    std::size_t records = 0;             // RoCE records measured (all records when there is no RoCE traffic)
    std::int64_t stampGranularityNs = 0; // 1e9: every start is a whole second; 1e6 whole ms; 1e3 whole µs; 1
    std::int64_t typicalSpanNs = 0;      // median record duration (the upper one of an even count)
    bool fixedSpan = false;              // most records last about typicalSpanNs: an exporter's active timeout
};

// Which RoCE records to fetch: those sent by `whole` (any start), and those sent by `ranges[k].src` starting in
// [from, to). Sorted by start, then end.
struct SenderRange {
    IpAddr src;
    std::int64_t from = std::numeric_limits<std::int64_t>::min();
    std::int64_t to = std::numeric_limits<std::int64_t>::max();
};
struct RecordSelection {
    std::vector<IpAddr> whole;
    std::vector<SenderRange> ranges;
    // Every record selected starts in [from, to) (the job's span, when known): not a filter but a bound, which a
    // store may use to skip what cannot hold one (FileStore: files and chunks by its index).
    std::int64_t from = std::numeric_limits<std::int64_t>::min();
    std::int64_t to = std::numeric_limits<std::int64_t>::max();
};

// One batch of a pass over every record (FlowStore::scanAll): the records, each batch endpoint's id in the
// store's global endpoint table, and the window of starts the store stands for (records outside it are not
// the store's: `use` tells).
struct StoreBatch {
    const FlowTable& records;
    const std::vector<EndpointId>& global;
    std::int64_t from, to;
    bool use(std::size_t i) const { return records.startNs[i] >= from && records.startNs[i] < to; }
};

class FlowStore {
public:
    virtual ~FlowStore() = default;
    // What the user named ("clickhouse://host:8123/db.flows").
    virtual std::string source() const = 0;
    virtual StoreOverview overview() = 0;
    // RoCE records grouped by (src, dst, src_port, (start - lo) / width): one row per group, with its first start,
    // last end, the sum of its bytes and the number of its records as `packets`; sorted by start.
    virtual FlowTable groupedRoce(std::int64_t lo, std::int64_t width) = 0;
    // The RoCE records `selection` names, with their congestion counts when the store has them.
    virtual FlowTable roceRecords(const RecordSelection& selection) = 0;
    // The records of several selections at once (one table each): a store that reads everything to answer one
    // (a file) answers several in the same pass. By default one roceRecords() each.
    virtual std::vector<FlowTable> roceRecords(const std::vector<RecordSelection>& selections) {
        std::vector<FlowTable> out;
        for (const RecordSelection& s : selections) out.push_back(roceRecords(s));
        return out;
    }
    virtual TimeResolution resolution() = 0;
    // A store that reads every record to answer anything (files) shows them all in a pass, so that
    // recognition runs on the records themselves (analysis/recognition.h, RecognitionPasses) rather than on
    // grouped rows. False when the store cannot (a database).
    virtual bool scanAll(const std::function<void(const StoreBatch&)>& /*batch*/) { return false; }
    // The endpoint table the ids of scanAll() refer to.
    virtual const EndpointTable* globalEndpoints() const { return nullptr; }
    // What reading the store met (rows it could not read), for the capture summary.
    virtual const LoadDiagnostics& diagnostics() const = 0;
    // Polled while a pass reads (each batch of a file, about once a second while a server answers); when it returns
    // true the pass stops with Cancelled. The GUI's Cancel; none by default.
    virtual void setInterrupt(std::function<bool()> interrupt) { m_interrupt = std::move(interrupt); }
    // Told now and then how far the pass under way has come (a file store: the share of its files' bytes read);
    // returning false stops it with Cancelled. Set around a pass by the staged analysis; none by default.
    void setPassProgress(std::function<bool(double)> progress) { m_passProgress = std::move(progress); }

protected:
    bool interrupted() const { return m_interrupt && m_interrupt(); }
    std::function<bool()> m_interrupt;
    std::function<bool(double)> m_passProgress;
};

// Sets a store's pass progress for one pass (or one fetch) and clears it after.
class PassProgress {
public:
    PassProgress(FlowStore& store, std::function<bool(double)> progress) : m_store(store) {
        m_store.setPassProgress(std::move(progress));
    }
    ~PassProgress() { m_store.setPassProgress({}); }
    PassProgress(const PassProgress&) = delete;
    PassProgress& operator=(const PassProgress&) = delete;

private:
    FlowStore& m_store;
};

// RoCE records grouped by (src, dst, src_port, (start - lo) / width), as FlowStore::groupedRoce gives them:
// add() each record (endpoint ids of `endpoints`), then table().
class RoceGroups {
public:
    RoceGroups(std::int64_t lo, std::int64_t width) : m_lo(lo), m_width(width) {}
    void add(EndpointId src, EndpointId dst, std::uint16_t port, std::int64_t start, std::int64_t end,
             std::uint64_t bytes);
    // One row per group, sorted by first start then last end (groups in the order first met otherwise).
    FlowTable table(const EndpointTable& endpoints) const;

private:
    struct Key {
        EndpointId src, dst;
        std::uint16_t port;
        std::int64_t bin;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const;
    };
    struct Group {
        Key key;
        std::int64_t first, last;
        std::uint64_t bytes = 0, records = 0;
    };
    std::int64_t m_lo, m_width;
    std::unordered_map<Key, std::size_t, KeyHash> m_index;
    std::vector<Group> m_groups;
};

// A FlowTable as a store: every answer computed from the records in memory.
class TableStore : public FlowStore {
public:
    // `diag`: what loading the table met, given back by diagnostics().
    TableStore(const FlowTable& flows, std::string source, LoadDiagnostics diag = {})
        : m_flows(flows), m_source(std::move(source)), m_diag(std::move(diag)) {}
    std::string source() const override { return m_source; }
    StoreOverview overview() override;
    // The same, and per endpoint (by id) whether a RoCE record has it as source or destination.
    StoreOverview overview(std::vector<bool>& roceEndpoint) const;
    FlowTable groupedRoce(std::int64_t lo, std::int64_t width) override;
    FlowTable roceRecords(const RecordSelection& selection) override;
    using FlowStore::roceRecords;
    TimeResolution resolution() override;
    const LoadDiagnostics& diagnostics() const override { return m_diag; }

private:
    const FlowTable& m_flows;
    std::string m_source;
    LoadDiagnostics m_diag;
};

// The resolution of the records of `flows` (RoCE ones, or all when there is none).
TimeResolution measureResolution(const FlowTable& flows);

} // namespace prism
