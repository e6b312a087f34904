#pragma once
// Flow records in a ClickHouse table (docs/FORMATS.md "ClickHouse table"), over ClickHouse's HTTP interface
// (libcurl). A table is named clickhouse://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE.TABLE[?from=T&to=T] (port 8123
// by default; the records starting in [from, to) only).
//   - ClickHouseStore: a FlowStore (model/flow_store.h) whose answers the server computes — counts, the grouped
//     RoCE rows recognition runs on (GROUP BY endpoints and time bin), then each job's records by its senders
//     and their epochs — for analyzeStore (analysis/staged.h).
//   - readClickHouseTable: every record of a time window, as a FlowTable (the GUI, convert).
//   - exportToClickHouse: a FlowTable into a table (created when missing).
#include "model/flow_store.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace prism {

// Records whose start lies in [from, to) (the whole table by default).
struct TimeWindow {
    std::int64_t from = std::numeric_limits<std::int64_t>::min();
    std::int64_t to = std::numeric_limits<std::int64_t>::max();
    bool bounded() const {
        return from != std::numeric_limits<std::int64_t>::min() || to != std::numeric_limits<std::int64_t>::max();
    }
};

struct ClickHouseUrl {
    std::string host;
    int port = 8123;
    std::string database, table;
    std::string user, password;
    TimeWindow window; // ?from=T&to=T (T: ns since the epoch or a UTC time, as --from/--to take)

    static bool looksLikeUrl(std::string_view text); // starts with clickhouse://
    // Throws InputError (file: the text, without its password) saying what was expected.
    static ClickHouseUrl parse(const std::string& text);
    // clickhouse://[USER@]HOST:PORT/DATABASE.TABLE[?from=NS&to=NS], never the password
    std::string display() const;
    std::string qualifiedTable() const; // `database`.`table`, quoted for SQL
};

// One connection to a server: queries and inserts over HTTP. Errors are InputErrors that name the URL and give
// the server's own message (or why it could not be reached).
class ClickHouseClient {
public:
    explicit ClickHouseClient(ClickHouseUrl url);
    ~ClickHouseClient();
    ClickHouseClient(const ClickHouseClient&) = delete;
    ClickHouseClient& operator=(const ClickHouseClient&) = delete;

    const ClickHouseUrl& url() const { return m_url; }
    // The whole answer to `sql`.
    std::string query(const std::string& sql);
    // The answer line by line (without the line end), as it arrives; `line` may throw (the transfer stops and
    // the exception comes out of queryLines).
    void queryLines(const std::string& sql, const std::function<void(std::string_view)>& line);
    // `sql` (an INSERT ... FORMAT ...) with `body` as its data.
    void insert(const std::string& sql, std::string_view body);
    // True when the server answers at all (SELECT 1).
    bool reachable();
    // Polled about once a second during a query; true stops it with Cancelled.
    void setInterrupt(std::function<bool()> interrupt) { m_interrupt = std::move(interrupt); }

private:
    void run(const std::string& sql, std::string_view body, const std::function<void(std::string_view)>& sink);
    ClickHouseUrl m_url;
    void* m_curl = nullptr;
    std::function<bool()> m_interrupt;
};

// The CREATE TABLE statement of the documented schema (docs/FORMATS.md).
std::string clickHouseSchema(const ClickHouseUrl& url);

// Writes every record of `flows` into the table of `url`, creating the database and table when missing. A table
// that already holds records is refused (InputError) unless `append`. `progress` gets the fraction written;
// returning false cancels (Cancelled; the rows sent so far stay). Returns the records written.
std::uint64_t exportToClickHouse(const FlowTable& flows, const ClickHouseUrl& url, bool append,
                                 const std::function<bool(double)>& progress = {});

// Every record of the table of `url` starting in `window`, sorted by start; rows that cannot be read are skipped
// and counted in `diag` (InputIssue.file: the URL, line: the row of the answer).
FlowTable readClickHouseTable(const ClickHouseUrl& url, const TimeWindow& window, LoadDiagnostics& diag,
                              const std::function<bool(double)>& progress = {});

// Rows of flow records as the server answers them (TabSeparated, the columns start_ns, end_ns, src_ip, dst_ip,
// src_port, dst_port, proto, bytes, packets, retransmits, cnps, ecn_ce; NULL as \N) into a table, in their order;
// rows it cannot read are skipped and counted in `diag` (file: `source`, line: the row). A line the server wrote
// in place of rows after an error ("Code: …") is an InputError.
FlowTable parseClickHouseRows(std::string_view answer, const std::string& source, LoadDiagnostics& diag);

class ClickHouseStore : public FlowStore {
public:
    // Checks that the table exists and has the required columns (InputError naming what is missing).
    ClickHouseStore(const ClickHouseUrl& url, const TimeWindow& window = {});
    ~ClickHouseStore() override;
    std::string source() const override;
    StoreOverview overview() override;
    FlowTable groupedRoce(std::int64_t lo, std::int64_t width) override;
    FlowTable roceRecords(const RecordSelection& selection) override;
    using FlowStore::roceRecords;
    TimeResolution resolution() override;
    const LoadDiagnostics& diagnostics() const override { return m_diag; }
    void setInterrupt(std::function<bool()> interrupt) override {
        m_client->setInterrupt(interrupt);
        FlowStore::setInterrupt(std::move(interrupt));
    }

private:
    std::string where(bool roceOnly) const;
    std::unique_ptr<ClickHouseClient> m_client;
    TimeWindow m_window;
    bool m_congestion = false; // the table has the retransmits, cnps and ecn_ce columns
    bool m_packets = false;    // the table has the packets column
    std::string m_src = "src_ip", m_dst = "dst_ip"; // its address columns (src, dst in tables of LLMPrism 0.1)
    LoadDiagnostics m_diag;
};

} // namespace prism
