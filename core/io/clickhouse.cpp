// ClickHouse over HTTP with libcurl: the URL, the client, the schema, export, the whole-window read and the store
// whose aggregates the server computes.
#include "io/clickhouse.h"

#include "io/collector_csv.h" // parseUtcTime
#include "io/text_input.h"
#include "model/units.h"

#include "util/dynamic_library.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <sstream>

namespace prism {

namespace {

std::string_view kPrefix = "clickhouse://";

bool identifier(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
}

// A string literal for SQL: quoted, backslash and quote escaped.
std::string literal(std::string_view s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\\' || c == '\'') out += '\\';
        out += c;
    }
    return out + "'";
}

// libcurl's functions, loaded when a ClickHouse table is first read (util/dynamic_library.h): a command that reads
// none does not load libcurl and the libraries it pulls in (5 ms of every start). Initialised once, on loading.
struct Curl {
    decltype(&curl_global_init) globalInit;
    decltype(&curl_easy_init) init;
    decltype(&curl_easy_cleanup) cleanup;
    decltype(&curl_easy_reset) reset;
    decltype(&curl_easy_escape) escape;
    decltype(&curl_free) free;
    decltype(&curl_easy_setopt) setopt;
    decltype(&curl_easy_getinfo) getinfo;
    decltype(&curl_easy_perform) perform;
    decltype(&curl_easy_strerror) strerror;
};

const Curl& libcurl() {
    static const Curl api = [] {
        const RequiredLibrary curl({"libcurl.so.4", "libcurl-gnutls.so.4"}, "reading ClickHouse needs libcurl",
                                   "libcurl4 (libcurl4t64 on Debian 13)");
        Curl c{};
        curl.bind("curl_global_init", c.globalInit);
        curl.bind("curl_easy_init", c.init);
        curl.bind("curl_easy_cleanup", c.cleanup);
        curl.bind("curl_easy_reset", c.reset);
        curl.bind("curl_easy_escape", c.escape);
        curl.bind("curl_free", c.free);
        curl.bind("curl_easy_setopt", c.setopt);
        curl.bind("curl_easy_getinfo", c.getinfo);
        curl.bind("curl_easy_perform", c.perform);
        curl.bind("curl_easy_strerror", c.strerror);
        c.globalInit(CURL_GLOBAL_DEFAULT);
        return c;
    }();
    return api;
}

// The fields of a TabSeparated line.
std::vector<std::string_view> tabFields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t pos = 0;
    while (true) {
        const std::size_t tab = line.find('\t', pos);
        out.push_back(line.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos));
        if (tab == std::string_view::npos) break;
        pos = tab + 1;
    }
    return out;
}

template <class T>
bool number(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc{} && p == s.data() + s.size();
}

template <class T>
T numberOr(std::string_view s, const ClickHouseUrl& url, const char* what) {
    T v{};
    if (!number(s, v))
        throw InputError({url.display(), 0, 0, std::string("the server answered ") + quoted(s) + " for " + what +
                                                   ", expected a number"});
    return v;
}

// A line the server wrote in place of data after an error broke off the answer.
void checkServerError(std::string_view line, const std::string& source) {
    if (line.rfind("Code: ", 0) == 0)
        throw InputError({source, 0, 0, "the server answered: " + std::string(line.substr(0, 400))});
}

// The columns of a flow record, in the order readRecordLine expects, for a table that has `packets` and the
// congestion columns or not; `src`, `dst`: its address columns (src_ip, dst_ip as in flows.csv, or src, dst).
std::string recordColumns(bool packets, bool congestion, const std::string& src, const std::string& dst) {
    return "start_ns, end_ns, " + src + ", " + dst + ", src_port, dst_port, proto, bytes, " +
           (packets ? "packets" : "toUInt64(0)") + (congestion ? ", retransmits, cnps, ecn_ce" : ", NULL, NULL, NULL");
}

// One TabSeparated row of recordColumns into `out`; false (with `why`) when it cannot be read.
bool readRecordLine(std::string_view line, FlowTable& out, bool& anyCongestion, std::string& why) {
    const auto f = tabFields(line);
    if (f.size() != 12) {
        why = "a row of " + std::to_string(f.size()) + " fields, expected 12";
        return false;
    }
    FlowRecord r;
    std::uint32_t c[3] = {0, 0, 0};
    bool hasC = false;
    unsigned port = 0, dport = 0, proto = 0;
    if (!number(f[0], r.startNs) || !number(f[1], r.endNs)) {
        why = "start_ns " + quoted(f[0]) + ", end_ns " + quoted(f[1]) + ": expected integers";
        return false;
    }
    if (r.endNs < r.startNs) {
        why = "end_ns " + std::string(f[1]) + " before start_ns " + std::string(f[0]);
        return false;
    }
    auto src = IpAddr::parse(f[2]), dst = IpAddr::parse(f[3]);
    if (!src || !dst) {
        why = "src " + quoted(f[2]) + ", dst " + quoted(f[3]) + ": expected IPv4 or IPv6 addresses";
        return false;
    }
    if (!number(f[4], port) || !number(f[5], dport) || !number(f[6], proto) || port > 65535 || dport > 65535 ||
        proto > 255 || !number(f[7], r.bytes) || !number(f[8], r.packets)) {
        why = "ports, proto, bytes or packets not numbers in range";
        return false;
    }
    for (int k = 0; k < 3; ++k) {
        if (f[9 + k] == "\\N") continue;
        if (!number(f[9 + k], c[k])) {
            why = "a congestion count " + quoted(f[9 + k]) + ", expected an integer or NULL";
            return false;
        }
        hasC = true;
    }
    r.src = *src;
    r.dst = *dst;
    r.srcPort = std::uint16_t(port);
    r.dstPort = std::uint16_t(dport);
    r.proto = std::uint8_t(proto);
    if (hasC && !anyCongestion) {
        out.enableCongestion();
        anyCongestion = true;
    }
    if (anyCongestion) {
        const EndpointId s = out.endpoints.intern(r.src), d = out.endpoints.intern(r.dst);
        out.append(r.startNs, r.endNs, s, d, r.srcPort, r.dstPort, r.proto, r.bytes, r.packets, c[0], c[1], c[2]);
    } else {
        out.append(r);
    }
    return true;
}

// Reads the answer of a record query into a table, skipping rows it cannot read (counted in `diag`).
// The rows of an answer, one line at a time, into a table; rows it cannot read are counted in `diag`.
class RowReader {
public:
    RowReader(std::string source, LoadDiagnostics& diag) : m_source(std::move(source)), m_diag(diag) {}
    // Returns the number of the row just read (1-based).
    std::uint64_t line(std::string_view text) {
        ++m_row;
        checkServerError(text, m_source);
        if (!readRecordLine(text, m_out, m_anyCongestion, m_why)) m_diag.addError({m_source, m_row, 0, m_why});
        return m_row;
    }
    FlowTable take() { return std::move(m_out); }

private:
    std::string m_source;
    LoadDiagnostics& m_diag;
    FlowTable m_out;
    bool m_anyCongestion = false;
    std::uint64_t m_row = 0;
    std::string m_why;
};

// Reads the answer of a record query into a table, sorted by start.
FlowTable readRecords(ClickHouseClient& client, const std::string& sql, LoadDiagnostics& diag,
                      const std::function<bool(std::uint64_t)>& rowProgress = {}) {
    RowReader reader(client.url().display(), diag);
    client.queryLines(sql, [&](std::string_view line) {
        const std::uint64_t row = reader.line(line);
        if (rowProgress && (row & 0xFFFF) == 0 && !rowProgress(row)) throw Cancelled();
    });
    FlowTable out = reader.take();
    if (!out.isSortedByStart()) out.sortByStart();
    return out;
}

} // namespace

FlowTable parseClickHouseRows(std::string_view answer, const std::string& source, LoadDiagnostics& diag) {
    RowReader reader(source, diag);
    while (!answer.empty()) {
        const std::size_t nl = answer.find('\n');
        reader.line(answer.substr(0, nl));
        answer = nl == std::string_view::npos ? std::string_view() : answer.substr(nl + 1);
    }
    return reader.take();
}

bool ClickHouseUrl::looksLikeUrl(std::string_view text) { return text.substr(0, kPrefix.size()) == kPrefix; }

ClickHouseUrl ClickHouseUrl::parse(const std::string& text) {
    ClickHouseUrl u;
    std::string_view rest = text;
    // The text as shown in messages: without a password.
    std::string shown = text;
    if (const auto at = shown.find('@'); at != std::string::npos) {
        const auto colon = shown.find(':', kPrefix.size());
        if (colon != std::string::npos && colon < at) shown = shown.substr(0, colon) + shown.substr(at);
    }
    auto bad = [&](const std::string& what) -> InputError {
        return InputError({shown, 0, 0, what + "; expected clickhouse://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE.TABLE"});
    };
    if (!looksLikeUrl(rest)) throw bad("not a ClickHouse URL");
    rest.remove_prefix(kPrefix.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) throw bad("no /DATABASE.TABLE");
    std::string_view authority = rest.substr(0, slash), path = rest.substr(slash + 1);
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        std::string_view userinfo = authority.substr(0, at);
        authority.remove_prefix(at + 1);
        const auto colon = userinfo.find(':');
        u.user = std::string(userinfo.substr(0, colon));
        if (colon != std::string_view::npos) u.password = std::string(userinfo.substr(colon + 1));
    }
    std::string_view portText;
    if (!authority.empty() && authority.front() == '[') { // [IPv6]:port
        const auto close = authority.find(']');
        if (close == std::string_view::npos) throw bad("an IPv6 host without its closing ]");
        u.host = std::string(authority.substr(0, close + 1));
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') throw bad("text after the host's ]");
            portText = after.substr(1);
        }
    } else {
        const auto colon = authority.find(':');
        u.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) portText = authority.substr(colon + 1);
    }
    if (u.host.empty()) throw bad("no host");
    if (!portText.empty() && (!number(portText, u.port) || u.port < 1 || u.port > 65535))
        throw bad("port " + quoted(portText) + " is not a number from 1 to 65535");
    if (const auto q = path.find('?'); q != std::string_view::npos) {
        std::string_view query = path.substr(q + 1);
        path = path.substr(0, q);
        while (!query.empty()) {
            const auto amp = query.find('&');
            const std::string_view item = query.substr(0, amp);
            query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
            const auto eq = item.find('=');
            const std::string_view key = item.substr(0, eq);
            const auto t = eq == std::string_view::npos ? std::nullopt : parseUtcTime(item.substr(eq + 1));
            if (key != "from" && key != "to") throw bad("unknown parameter " + quoted(key) + " (from, to)");
            if (!t) throw bad(std::string(key) + "= expects nanoseconds since the epoch or a UTC time");
            (key == "from" ? u.window.from : u.window.to) = *t;
        }
        if (u.window.from >= u.window.to) throw bad("from must come before to");
    }
    const auto dot = path.find('.');
    if (dot == std::string_view::npos) throw bad("no table: the path must be DATABASE.TABLE");
    u.database = std::string(path.substr(0, dot));
    u.table = std::string(path.substr(dot + 1));
    if (!identifier(u.database) || !identifier(u.table))
        throw bad("database " + quoted(u.database) + " and table " + quoted(u.table) +
                  " must be letters, digits and _");
    return u;
}

std::string ClickHouseUrl::display() const {
    std::string out = std::string(kPrefix) + (user.empty() ? "" : user + "@") + host + ":" + std::to_string(port) +
                      "/" + database + "." + table;
    const bool from = window.from != std::numeric_limits<std::int64_t>::min();
    const bool to = window.to != std::numeric_limits<std::int64_t>::max();
    if (from) out += "?from=" + std::to_string(window.from);
    if (to) out += std::string(from ? "&" : "?") + "to=" + std::to_string(window.to);
    return out;
}

std::string ClickHouseUrl::qualifiedTable() const { return "`" + database + "`.`" + table + "`"; }

ClickHouseClient::ClickHouseClient(ClickHouseUrl url) : m_url(std::move(url)) {
    m_curl = libcurl().init();
    if (!m_curl) throw std::runtime_error("libcurl could not start a session");
}

ClickHouseClient::~ClickHouseClient() { libcurl().cleanup(static_cast<CURL*>(m_curl)); }

void ClickHouseClient::run(const std::string& sql, std::string_view body,
                           const std::function<void(std::string_view)>& sink) {
    CURL* curl = static_cast<CURL*>(m_curl);
    libcurl().reset(curl);
    std::string address = "http://" + m_url.host + ":" + std::to_string(m_url.port) + "/?max_query_size=104857600";
    auto param = [&](const char* name, const std::string& value) {
        char* e = libcurl().escape(curl, value.c_str(), int(value.size()));
        address += std::string("&") + name + "=" + e;
        libcurl().free(e);
    };
    if (!m_url.user.empty()) param("user", m_url.user);
    if (!m_url.password.empty()) param("password", m_url.password);
    // The query goes in the URL when there is a body (the data of an INSERT), else as the body.
    std::string payload;
    if (!body.empty()) param("query", sql);
    else payload = sql;
    std::string_view post = body.empty() ? std::string_view(payload) : body;

    struct Receiver {
        const std::function<void(std::string_view)>* sink;
        std::string pending; // bytes after the last line end
        std::string error;   // the whole answer when the status is not 200
        long status = 0;
        CURL* curl;
        std::exception_ptr thrown;
        const std::function<bool()>* interrupt;
        bool interrupted = false;
    } rx{&sink, {}, {}, 0, curl, nullptr, &m_interrupt};
    auto write = +[](char* data, size_t, size_t n, void* user) -> size_t {
        auto* r = static_cast<Receiver*>(user);
        if (r->status == 0) libcurl().getinfo(r->curl, CURLINFO_RESPONSE_CODE, &r->status);
        if (r->status != 200) {
            if (r->error.size() < 4096) r->error.append(data, std::min<std::size_t>(n, 4096));
            return n;
        }
        try {
            r->pending.append(data, n);
            std::size_t start = 0;
            for (std::size_t nl; (nl = r->pending.find('\n', start)) != std::string::npos; start = nl + 1)
                (*r->sink)(std::string_view(r->pending).substr(start, nl - start));
            r->pending.erase(0, start);
        } catch (...) {
            r->thrown = std::current_exception();
            return 0; // stops the transfer
        }
        return n;
    };
    libcurl().setopt(curl, CURLOPT_URL, address.c_str());
    libcurl().setopt(curl, CURLOPT_POST, 1L);
    libcurl().setopt(curl, CURLOPT_POSTFIELDS, post.data());
    libcurl().setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(post.size()));
    libcurl().setopt(curl, CURLOPT_WRITEFUNCTION, write);
    libcurl().setopt(curl, CURLOPT_WRITEDATA, &rx);
    libcurl().setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    libcurl().setopt(curl, CURLOPT_NOSIGNAL, 1L);
    // A server or network that goes away without a reset (a partition, a suspended machine) ends the query after
    // TCP keepalive's probes go unanswered, instead of a wait without end; a long query on a live server is not
    // cut (no speed limit: a large GROUP BY may send nothing for minutes).
    libcurl().setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    libcurl().setopt(curl, CURLOPT_TCP_KEEPIDLE, 30L);
    libcurl().setopt(curl, CURLOPT_TCP_KEEPINTVL, 10L);
    auto xfer = +[](void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> int {
        auto* r = static_cast<Receiver*>(user);
        if (*r->interrupt && (*r->interrupt)()) r->interrupted = true;
        return r->interrupted ? 1 : 0; // non-zero: libcurl stops the transfer
    };
    libcurl().setopt(curl, CURLOPT_XFERINFOFUNCTION, xfer);
    libcurl().setopt(curl, CURLOPT_XFERINFODATA, &rx);
    libcurl().setopt(curl, CURLOPT_NOPROGRESS, m_interrupt ? 0L : 1L);
    char curlError[CURL_ERROR_SIZE] = {0};
    libcurl().setopt(curl, CURLOPT_ERRORBUFFER, curlError);
    const CURLcode rc = libcurl().perform(curl);
    if (rx.thrown) std::rethrow_exception(rx.thrown);
    if (rx.interrupted) throw Cancelled();
    if (rc != CURLE_OK)
        throw InputError({m_url.display(), 0, 0,
                          "cannot reach the server at " + m_url.host + ":" + std::to_string(m_url.port) + " (" +
                              (curlError[0] ? curlError : libcurl().strerror(rc)) +
                              "): is clickhouse-server running, with its HTTP interface on that port?"});
    long status = 0;
    libcurl().getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        std::string message = rx.error;
        while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
        throw InputError({m_url.display(), 0, 0, "the server answered HTTP " + std::to_string(status) + ": " + message});
    }
    if (!rx.pending.empty()) sink(rx.pending);
}

std::string ClickHouseClient::query(const std::string& sql) {
    std::string out;
    run(sql, {}, [&](std::string_view line) {
        out.append(line);
        out += '\n';
    });
    return out;
}

void ClickHouseClient::queryLines(const std::string& sql, const std::function<void(std::string_view)>& line) {
    run(sql, {}, line);
}

void ClickHouseClient::insert(const std::string& sql, std::string_view body) {
    run(sql, body.empty() ? std::string_view("\n") : body, [](std::string_view) {});
}

bool ClickHouseClient::reachable() {
    try {
        return query("SELECT 1") == "1\n";
    } catch (const InputError&) {
        return false;
    }
}

std::string clickHouseSchema(const ClickHouseUrl& url) {
    return "CREATE TABLE IF NOT EXISTS " + url.qualifiedTable() +
           " (start_ns Int64, end_ns Int64, src_ip String, dst_ip String, src_port UInt16, dst_port UInt16, "
           "proto UInt8, bytes UInt64, packets UInt64, retransmits Nullable(UInt32), cnps Nullable(UInt32), "
           "ecn_ce Nullable(UInt32)) ENGINE = MergeTree() ORDER BY (start_ns, src_ip, dst_ip)";
}

namespace {

// What the table has, checked against what we need: InputError naming the missing columns.
struct TableColumns {
    bool packets = false, congestion = false;
    std::string src = "src_ip", dst = "dst_ip"; // flows.csv's names; `src`, `dst` in tables of LLMPrism 0.1
};

TableColumns checkColumns(ClickHouseClient& client) {
    const ClickHouseUrl& url = client.url();
    const std::string answer =
        client.query("SELECT name FROM system.columns WHERE database = " + literal(url.database) +
                     " AND table = " + literal(url.table));
    std::vector<std::string> names;
    std::istringstream in(answer);
    for (std::string line; std::getline(in, line);) names.push_back(line);
    if (names.empty())
        throw InputError({url.display(), 0, 0,
                          "no table " + url.database + "." + url.table +
                              " on the server (llmprism-cli export-clickhouse creates one; docs/FORMATS.md)"});
    auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
    TableColumns cols;
    if (!(has("src_ip") && has("dst_ip")) && has("src") && has("dst")) { // the names of LLMPrism 0.1's tables
        cols.src = "src";
        cols.dst = "dst";
    }
    std::string missing;
    for (const std::string& n :
         {std::string("start_ns"), std::string("end_ns"), cols.src, cols.dst, std::string("src_port"),
          std::string("dst_port"), std::string("proto"), std::string("bytes")})
        if (!has(n)) missing += (missing.empty() ? "" : ", ") + n;
    if (!missing.empty())
        throw InputError({url.display(), 0, 0,
                          "the table has no column " + missing +
                              "; expected flows.csv's: start_ns, end_ns, src_ip, dst_ip, src_port, dst_port, proto, "
                              "bytes (docs/FORMATS.md)"});
    cols.packets = has("packets");
    cols.congestion = has("retransmits") && has("cnps") && has("ecn_ce");
    return cols;
}

} // namespace

std::uint64_t exportToClickHouse(const FlowTable& flows, const ClickHouseUrl& url, bool append,
                                 const std::function<bool(double)>& progress) {
    ClickHouseClient client(url);
    client.query("CREATE DATABASE IF NOT EXISTS `" + url.database + "`");
    client.query(clickHouseSchema(url));
    const TableColumns cols = checkColumns(client); // (a table made before may name its addresses src, dst)
    const std::string held = client.query("SELECT count() FROM " + url.qualifiedTable());
    std::uint64_t before = 0;
    number(std::string_view(held).substr(0, held.find('\n')), before);
    if (before && !append)
        throw InputError({url.display(), 0, 0,
                          "the table already holds " + formatCount(before) +
                              " records: --append adds to them, or drop the table first"});
    if (!cols.packets || !cols.congestion)
        throw InputError({url.display(), 0, 0,
                          "the table has no column " + std::string(cols.packets ? "" : "packets") +
                              (cols.packets || cols.congestion ? "" : ", ") +
                              (cols.congestion ? "" : "retransmits, cnps, ecn_ce") +
                              " to write to: export into a new table (docs/FORMATS.md has its schema)"});
    const std::string sql = "INSERT INTO " + url.qualifiedTable() + " (start_ns, end_ns, " + cols.src + ", " +
                            cols.dst +
                            ", src_port, dst_port, proto, bytes, packets, retransmits, cnps, ecn_ce) FORMAT "
                            "TabSeparated";
    std::vector<std::string> ipText(flows.endpoints.size());
    for (EndpointId e = 0; e < ipText.size(); ++e) ipText[e] = flows.endpoints.at(e).toString();
    constexpr std::size_t kRowsPerInsert = 500'000;
    std::string body;
    char buf[32];
    auto put = [&](auto v) {
        auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
        body.append(buf, p);
    };
    for (std::size_t first = 0; first < flows.size(); first += kRowsPerInsert) {
        body.clear();
        const std::size_t last = std::min(flows.size(), first + kRowsPerInsert);
        for (std::size_t i = first; i < last; ++i) {
            put(flows.startNs[i]);
            body += '\t';
            put(flows.end(i));
            body += '\t';
            body += ipText[flows.src[i]];
            body += '\t';
            body += ipText[flows.dst[i]];
            body += '\t';
            put(unsigned(flows.srcPort[i]));
            body += '\t';
            put(unsigned(flows.dstPort[i]));
            body += '\t';
            put(unsigned(flows.proto[i]));
            body += '\t';
            put(flows.bytes[i]);
            body += '\t';
            put(flows.packets[i]);
            if (flows.hasCongestion()) {
                for (const auto* col : {&flows.retransmits, &flows.cnps, &flows.ecnCe}) {
                    body += '\t';
                    put((*col)[i]);
                }
            } else {
                body += "\t\\N\t\\N\t\\N";
            }
            body += '\n';
        }
        client.insert(sql, body);
        if (progress && !progress(double(last) / double(flows.size()))) throw Cancelled();
    }
    return flows.size();
}

namespace {

TimeWindow intersect(const TimeWindow& a, const TimeWindow& b) {
    return {std::max(a.from, b.from), std::min(a.to, b.to)};
}

std::string windowCondition(const TimeWindow& w) {
    std::string out = "1";
    if (w.from != std::numeric_limits<std::int64_t>::min()) out += " AND start_ns >= " + std::to_string(w.from);
    if (w.to != std::numeric_limits<std::int64_t>::max()) out += " AND start_ns < " + std::to_string(w.to);
    return out;
}

constexpr const char* kRoce = "proto = 17 AND dst_port = 4791";

} // namespace

FlowTable readClickHouseTable(const ClickHouseUrl& url, const TimeWindow& window, LoadDiagnostics& diag,
                              const std::function<bool(double)>& progress) {
    ClickHouseClient client(url);
    const TableColumns cols = checkColumns(client);
    const std::string where = windowCondition(intersect(url.window, window));
    std::uint64_t total = 0;
    if (progress) {
        const std::string n = client.query("SELECT count() FROM " + url.qualifiedTable() + " WHERE " + where);
        number(std::string_view(n).substr(0, n.find('\n')), total);
    }
    return readRecords(
        client,
        "SELECT " + recordColumns(cols.packets, cols.congestion, cols.src, cols.dst) + " FROM " + url.qualifiedTable() +
            " WHERE " + where + " ORDER BY start_ns, end_ns, " + cols.src + ", " + cols.dst +
            ", src_port, dst_port FORMAT TabSeparated",
        diag, [&](std::uint64_t rows) { return !progress || progress(total ? double(rows) / double(total) : 0.0); });
}

ClickHouseStore::ClickHouseStore(const ClickHouseUrl& url, const TimeWindow& window)
    : m_client(std::make_unique<ClickHouseClient>(url)), m_window(intersect(url.window, window)) {
    const TableColumns cols = checkColumns(*m_client);
    m_packets = cols.packets;
    m_congestion = cols.congestion;
    m_src = cols.src;
    m_dst = cols.dst;
}

ClickHouseStore::~ClickHouseStore() = default;

std::string ClickHouseStore::source() const { return m_client->url().display(); }

std::string ClickHouseStore::where(bool roceOnly) const {
    return " FROM " + m_client->url().qualifiedTable() + " WHERE " + windowCondition(m_window) +
           (roceOnly ? std::string(" AND ") + kRoce : std::string());
}

StoreOverview ClickHouseStore::overview() {
    const ClickHouseUrl& url = m_client->url();
    const std::string r = std::string("(") + kRoce + ")";
    const std::string a = m_client->query("SELECT count(), countIf(" + r + "), sumIf(bytes, " + r + "), countIf(NOT " +
                                          r + "), sumIf(bytes, NOT " + r + "), min(start_ns), max(end_ns), minIf(start_ns, " +
                                          r + "), maxIf(end_ns, " + r + ")" + where(false) + " FORMAT TabSeparated");
    const auto f = tabFields(std::string_view(a).substr(0, a.find('\n')));
    if (f.size() != 9) throw InputError({url.display(), 0, 0, "the server answered " + quoted(a) + " to the counts"});
    StoreOverview o;
    o.records = numberOr<std::uint64_t>(f[0], url, "count()");
    o.roceRecords = numberOr<std::uint64_t>(f[1], url, "the RoCE count");
    o.roceBytes = numberOr<std::uint64_t>(f[2], url, "the RoCE bytes");
    o.otherRecords = numberOr<std::uint64_t>(f[3], url, "the other count");
    o.otherBytes = numberOr<std::uint64_t>(f[4], url, "the other bytes");
    if (o.records) {
        o.firstNs = numberOr<std::int64_t>(f[5], url, "min(start_ns)");
        o.lastNs = numberOr<std::int64_t>(f[6], url, "max(end_ns)");
    }
    if (o.roceRecords) {
        o.roceFirstNs = numberOr<std::int64_t>(f[7], url, "the first RoCE start");
        o.roceLastNs = numberOr<std::int64_t>(f[8], url, "the last RoCE end");
    }
    const std::string e = m_client->query("SELECT uniqExact(e) FROM (SELECT " + m_src + " AS e" + where(false) +
                                          " UNION ALL SELECT " + m_dst + " AS e" + where(false) + ")");
    o.endpoints = numberOr<std::uint64_t>(std::string_view(e).substr(0, e.find('\n')), url, "the endpoint count");
    return o;
}

FlowTable ClickHouseStore::groupedRoce(std::int64_t lo, std::int64_t width) {
    const std::string sql = "SELECT min(start_ns) AS first, max(end_ns) AS last, " + m_src + ", " + m_dst +
                            ", src_port, toUInt16(4791), toUInt8(17), sum(bytes), count(), NULL, NULL, NULL" +
                            where(true) + " GROUP BY " + m_src + ", " + m_dst + ", src_port, intDiv(start_ns - (" +
                            std::to_string(lo) + "), " + std::to_string(width) +
                            ") ORDER BY first, last FORMAT TabSeparated";
    return readRecords(*m_client, sql, m_diag);
}

FlowTable ClickHouseStore::roceRecords(const RecordSelection& selection) {
    std::string cond;
    if (!selection.whole.empty()) {
        cond = m_src + " IN (";
        for (std::size_t k = 0; k < selection.whole.size(); ++k)
            cond += (k ? "," : "") + literal(selection.whole[k].toString());
        cond += ")";
    }
    for (const SenderRange& r : selection.ranges) {
        cond += std::string(cond.empty() ? "" : " OR ") + "(" + m_src + " = " + literal(r.src.toString());
        if (r.from != std::numeric_limits<std::int64_t>::min()) cond += " AND start_ns >= " + std::to_string(r.from);
        if (r.to != std::numeric_limits<std::int64_t>::max()) cond += " AND start_ns < " + std::to_string(r.to);
        cond += ")";
    }
    if (cond.empty()) return {};
    // The job's span: the table is ordered by start_ns, so the server skips the parts of other times.
    std::string span;
    if (selection.from != std::numeric_limits<std::int64_t>::min())
        span += " AND start_ns >= " + std::to_string(selection.from);
    if (selection.to != std::numeric_limits<std::int64_t>::max())
        span += " AND start_ns < " + std::to_string(selection.to);
    return readRecords(*m_client,
                       "SELECT " + recordColumns(m_packets, m_congestion, m_src, m_dst) + where(true) + span +
                           " AND (" + cond + ") ORDER BY start_ns, end_ns, " + m_src + ", " + m_dst +
                           ", src_port, dst_port FORMAT TabSeparated",
                       m_diag);
}

TimeResolution ClickHouseStore::resolution() {
    const ClickHouseUrl& url = m_client->url();
    auto one = [&](const std::string& sql) {
        const std::string a = m_client->query(sql);
        return std::string(std::string_view(a).substr(0, a.find('\n')));
    };
    const bool anyRoce = numberOr<std::uint64_t>(one("SELECT count()" + where(true)), url, "the RoCE count") > 0;
    const std::string from = where(anyRoce);
    const std::string counts = one("SELECT count(), countIf(start_ns % 1000000000 != 0), countIf(start_ns % 1000000 != "
                                   "0), countIf(start_ns % 1000 != 0)" + from + " FORMAT TabSeparated");
    const auto f = tabFields(counts);
    if (f.size() != 4) throw InputError({url.display(), 0, 0, "the server answered no resolution counts"});
    TimeResolution r;
    r.records = numberOr<std::uint64_t>(f[0], url, "count()");
    if (!r.records) return r;
    r.stampGranularityNs = f[1] == "0" ? 1'000'000'000 : f[2] == "0" ? 1'000'000 : f[3] == "0" ? 1'000 : 1;
    r.typicalSpanNs = numberOr<std::int64_t>(
        one("SELECT end_ns - start_ns AS span" + from + " ORDER BY span LIMIT 1 OFFSET " + std::to_string(r.records / 2)),
        url, "the median span");
    if (r.typicalSpanNs > 0) {
        const std::int64_t m = r.typicalSpanNs, d = m / 10;
        const auto near = numberOr<std::uint64_t>(one("SELECT countIf(end_ns - start_ns >= " + std::to_string(m - d) +
                                                      " AND end_ns - start_ns <= " + std::to_string(m + d) + ")" + from),
                                                  url, "the count near the median");
        r.fixedSpan = near * 2 > r.records;
    }
    return r;
}

} // namespace prism
