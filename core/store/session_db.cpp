#include "store/session_db.h"

#include "model/diagnostics.h"
#include "store/session.h"

#include <sqlite3.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>

namespace prism::store {

const char* const kSchemaSql = R"SQL(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;

CREATE TABLE hosts(host INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE switches(switch INTEGER PRIMARY KEY, name TEXT NOT NULL, tier TEXT NOT NULL,
                      uplinks TEXT NOT NULL);
CREATE TABLE nics(nic INTEGER PRIMARY KEY, ip TEXT NOT NULL UNIQUE, host INTEGER, host_name TEXT,
                  host_position INTEGER, gpu INTEGER, gpus TEXT NOT NULL, rail INTEGER NOT NULL,
                  switch TEXT NOT NULL);
-- The topology as topology.json has it, a row per NIC: its address, host, GPUs and leaf switch.
CREATE VIEW topology AS
  SELECT ip, host_name AS host, gpu, gpus, rail, switch FROM nics ORDER BY nic;

CREATE TABLE endpoints(endpoint INTEGER PRIMARY KEY, ip TEXT NOT NULL, nic INTEGER, host_name TEXT);
CREATE TABLE flow_chunks(id INTEGER PRIMARY KEY, chunk INTEGER NOT NULL, column TEXT NOT NULL,
                         first_record INTEGER NOT NULL, records INTEGER NOT NULL, encoding TEXT NOT NULL,
                         crc32c INTEGER NOT NULL, data BLOB NOT NULL, UNIQUE(chunk, column));
CREATE TABLE flow_pairs(src_ip TEXT NOT NULL, dst_ip TEXT NOT NULL, roce INTEGER NOT NULL,
                        records INTEGER NOT NULL, bytes INTEGER NOT NULL, packets INTEGER NOT NULL,
                        first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL);
CREATE VIEW nic_traffic AS
  SELECT ip, SUM(sent_bytes) AS sent_bytes, SUM(received_bytes) AS received_bytes,
         SUM(sent_records) AS sent_records, SUM(received_records) AS received_records
  FROM (SELECT src_ip AS ip, bytes AS sent_bytes, 0 AS received_bytes, records AS sent_records,
               0 AS received_records FROM flow_pairs
        UNION ALL
        SELECT dst_ip, 0, bytes, 0, records FROM flow_pairs)
  GROUP BY ip;

CREATE TABLE report(json TEXT NOT NULL, crc32c INTEGER NOT NULL);
CREATE TABLE jobs(job INTEGER PRIMARY KEY, id TEXT NOT NULL, name TEXT, gpus INTEGER NOT NULL,
                  hosts INTEGER NOT NULL, tp INTEGER NOT NULL, pp INTEGER NOT NULL, dp INTEGER NOT NULL,
                  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, steps INTEGER NOT NULL,
                  findings INTEGER NOT NULL, clusters INTEGER NOT NULL, roce_bytes INTEGER NOT NULL,
                  roce_records INTEGER NOT NULL);
CREATE TABLE job_ranks(job INTEGER NOT NULL, position INTEGER NOT NULL, ip TEXT NOT NULL,
                       endpoint INTEGER NOT NULL, host_name TEXT, label TEXT NOT NULL, stage INTEGER,
                       dp_group INTEGER, unknown_position INTEGER, PRIMARY KEY(job, position)) WITHOUT ROWID;
CREATE TABLE job_hosts(job INTEGER NOT NULL, position INTEGER NOT NULL, host INTEGER NOT NULL,
                       name TEXT NOT NULL, PRIMARY KEY(job, position)) WITHOUT ROWID;
CREATE TABLE job_records(job INTEGER PRIMARY KEY, records INTEGER NOT NULL, encoding TEXT NOT NULL,
                         crc32c INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE parallelism(job INTEGER PRIMARY KEY, gpus INTEGER NOT NULL, tp INTEGER NOT NULL,
                         pp INTEGER NOT NULL, dp INTEGER NOT NULL, notes TEXT NOT NULL);
CREATE TABLE dp_groups(job INTEGER NOT NULL, job_id TEXT NOT NULL, dp_group INTEGER NOT NULL,
                       position INTEGER NOT NULL, ip TEXT NOT NULL, endpoint INTEGER NOT NULL,
                       PRIMARY KEY(job, dp_group, position)) WITHOUT ROWID;
CREATE TABLE pp_chains(job INTEGER NOT NULL, job_id TEXT NOT NULL, chain INTEGER NOT NULL,
                       stage INTEGER NOT NULL, ip TEXT NOT NULL, endpoint INTEGER NOT NULL,
                       PRIMARY KEY(job, chain, stage)) WITHOUT ROWID;
CREATE TABLE pairs(job INTEGER NOT NULL, job_id TEXT NOT NULL, position INTEGER NOT NULL,
                   a_ip TEXT NOT NULL, b_ip TEXT NOT NULL, a INTEGER NOT NULL, b INTEGER NOT NULL,
                   kind TEXT NOT NULL, bytes_ab INTEGER NOT NULL, bytes_ba INTEGER NOT NULL,
                   records_ab INTEGER NOT NULL, records_ba INTEGER NOT NULL, asymmetry REAL NOT NULL,
                   simultaneity REAL NOT NULL, forward_votes INTEGER NOT NULL, forward_score REAL NOT NULL,
                   distinct_sizes INTEGER NOT NULL, PRIMARY KEY(job, position)) WITHOUT ROWID;
CREATE TABLE steps(job INTEGER NOT NULL, job_id TEXT NOT NULL, step INTEGER NOT NULL, idx INTEGER NOT NULL,
                   start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL,
                   slow INTEGER NOT NULL, PRIMARY KEY(job, step)) WITHOUT ROWID;
CREATE TABLE findings(job INTEGER NOT NULL, job_id TEXT NOT NULL, finding INTEGER NOT NULL,
                      kind TEXT NOT NULL, ip TEXT, src_ip TEXT, dst_ip TEXT, switch TEXT,
                      first_step INTEGER NOT NULL, last_step INTEGER NOT NULL, score REAL NOT NULL,
                      message TEXT NOT NULL, PRIMARY KEY(job, finding)) WITHOUT ROWID;

CREATE TABLE step_divisions(job INTEGER PRIMARY KEY, job_id TEXT NOT NULL, source TEXT NOT NULL,
                            steps INTEGER NOT NULL, median_step_ns INTEGER NOT NULL,
                            first_step_cut INTEGER NOT NULL, last_step_cut INTEGER NOT NULL,
                            change_points TEXT NOT NULL, json TEXT NOT NULL);

CREATE TABLE timelines(job INTEGER PRIMARY KEY, job_id TEXT NOT NULL, start_ns INTEGER NOT NULL,
                       end_ns INTEGER NOT NULL, ranks INTEGER NOT NULL, segments INTEGER NOT NULL,
                       steps TEXT NOT NULL, stats_encoding TEXT NOT NULL, stats_crc32c INTEGER NOT NULL,
                       stats BLOB NOT NULL);
CREATE TABLE timeline_ranks(job INTEGER NOT NULL, rank INTEGER NOT NULL, endpoint INTEGER NOT NULL,
                            ip TEXT NOT NULL, label TEXT NOT NULL, stage INTEGER NOT NULL,
                            dp_group INTEGER NOT NULL, host INTEGER NOT NULL, max_segment_ns INTEGER NOT NULL,
                            segments INTEGER NOT NULL, step_stats INTEGER NOT NULL,
                            PRIMARY KEY(job, rank)) WITHOUT ROWID;
CREATE TABLE timeline_chunks(id INTEGER PRIMARY KEY, job INTEGER NOT NULL, chunk INTEGER NOT NULL,
                             first_rank INTEGER NOT NULL, ranks INTEGER NOT NULL, segments INTEGER NOT NULL,
                             column TEXT NOT NULL, encoding TEXT NOT NULL, crc32c INTEGER NOT NULL,
                             data BLOB NOT NULL, UNIQUE(job, chunk, column));

CREATE TABLE notes(note INTEGER PRIMARY KEY,
                   target TEXT NOT NULL CHECK(target IN ('step', 'rank', 'finding', 'range')),
                   job_id TEXT NOT NULL, step INTEGER, ip TEXT, finding INTEGER,
                   start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, text TEXT NOT NULL,
                   author TEXT NOT NULL, created_ms INTEGER NOT NULL, modified_ms INTEGER NOT NULL);
)SQL";

namespace {

namespace fs = std::filesystem;

std::uint32_t be32(const unsigned char* p) {
    return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | std::uint32_t(p[3]);
}

// A few words on what a foreign file looks like, for the error message.
std::string describe(const std::string& head, std::uintmax_t size) {
    if (size == 0) return "an empty file";
    if (head.size() >= 2 && (unsigned char)head[0] == 0x1f && (unsigned char)head[1] == 0x8b) return "a gzip file";
    std::size_t printable = 0;
    for (char c : head)
        if (std::isprint((unsigned char)c) || std::isspace((unsigned char)c) || (unsigned char)c >= 0x80) ++printable;
    if (printable == head.size()) {
        std::size_t first = head.find_first_not_of(" \t\r\n\xef\xbb\xbf");
        if (first != std::string::npos && (head[first] == '{' || head[first] == '[')) return "a JSON text file";
        return "a text file";
    }
    return "binary data of another format";
}

InputError inputError(const std::string& path, const std::string& what) { return InputError({path, 0, 0, what}); }

// Checks what can be checked without SQLite: the header says whose file it is and how long it must be.
void checkHeader(const std::string& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw inputError(path, "cannot open the session: no such file");
    if (fs::is_directory(path, ec))
        throw inputError(path, "is a folder, expected an LLMPrism session file (.prism); a capture folder is "
                               "opened with `analyze` or `import`");
    const std::uintmax_t size = fs::file_size(path, ec);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw inputError(path, std::string("cannot open the session: ") + std::strerror(errno));
    if (ec) throw inputError(path, "cannot open the session: " + ec.message());
    std::string head(100, '\0');
    in.read(head.data(), 100);
    head.resize(std::size_t(in.gcount()));
    static const char kMagic[] = "SQLite format 3";
    if (head.size() < 100 || head.compare(0, 16, std::string(kMagic, 16)) != 0) {
        if (head.size() >= 16 && head.compare(0, 16, std::string(kMagic, 16)) == 0)
            throw inputError(path, "the session file is damaged: it ends inside the database header (truncated)");
        throw inputError(path, "is not an LLMPrism session: expected an SQLite database written by LLMPrism "
                               "(.prism), found " + describe(head, size));
    }
    auto h = reinterpret_cast<const unsigned char*>(head.data());
    const std::uint32_t pageSize = h[16] == 0 && h[17] == 1 ? 65536u : (std::uint32_t(h[16]) << 8 | h[17]);
    const std::uint32_t appId = be32(h + 68);
    const std::uint32_t userVersion = be32(h + 60);
    if (appId != kApplicationId) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%08X", appId);
        throw inputError(path, std::string("is an SQLite database but not an LLMPrism session (application_id ") +
                                   buf + ", expected 0x5052534D \"PRSM\")");
    }
    if (int(userVersion) > kSessionSchemaVersion || userVersion > 0x7fffffffu)
        throw inputError(path, "was written with session schema version " + std::to_string(userVersion) +
                                   ", newer than this LLMPrism reads (" + std::to_string(kSessionSchemaVersion) +
                                   "): open it with a newer LLMPrism");
    if (pageSize < 512 || (pageSize & (pageSize - 1)))
        throw inputError(path, "the session file is damaged: its header gives an invalid page size");
    // The page count is trustworthy when the change counter matches version-valid-for (SQLite file format 1.3).
    if (be32(h + 24) == be32(h + 92)) {
        const std::uint64_t expected = std::uint64_t(be32(h + 28)) * pageSize;
        if (expected && size < expected)
            throw inputError(path, "the session file is damaged: truncated (the database needs " +
                                       std::to_string(expected) + " bytes, the file has " + std::to_string(size) + ")");
    }
    if (size % pageSize)
        throw inputError(path, "the session file is damaged: its size is not a whole number of pages");
}

} // namespace

std::unique_ptr<Database> openSessionDatabase(const std::string& path, bool writable) {
    checkHeader(path);
    try {
        auto db = std::make_unique<Database>(path, writable ? Database::Mode::ReadWrite : Database::Mode::ReadOnly);
        // Read through SQLite's page cache, not a mapping: every mapped page read counts as the process's resident
        // memory while the session is open (clean file pages the kernel could drop, but counted: the GUI opening
        // large's session peaked at 895 MB mapped, 736 MB not) and the mapping was no faster (0.39-0.40 s).
        db->exec("PRAGMA mmap_size = 0");
        if (!db->hasTable("meta"))
            throw inputError(path, "is an SQLite database but not an LLMPrism session (no meta table)");
        Statement s(*db, "SELECT key, value FROM meta WHERE key IN ('format', 'schema_version')");
        std::string format, version;
        while (s.step()) (s.text(0) == "format" ? format : version) = s.text(1);
        if (format != kSessionFormat)
            throw inputError(path, "is an SQLite database but not an LLMPrism session (meta format \"" + format +
                                       "\", expected \"" + kSessionFormat + "\")");
        if (version != std::to_string(kSessionSchemaVersion)) {
            if (std::atoi(version.c_str()) > kSessionSchemaVersion)
                throw inputError(path, "was written with session schema version " + version +
                                           ", newer than this LLMPrism reads (" +
                                           std::to_string(kSessionSchemaVersion) + "): open it with a newer LLMPrism");
            throw inputError(path, "the session file is damaged: meta schema_version is \"" + version +
                                       "\", expected " + std::to_string(kSessionSchemaVersion));
        }
        return db;
    } catch (...) {
        rethrowReadError(path);
    }
}

void rethrowReadError(const std::string& path) {
    try {
        throw;
    } catch (const InputError&) {
        throw;
    } catch (const Cancelled&) {
        throw;
    } catch (const SqliteError& e) {
        if (e.damaged()) throw inputError(path, std::string("the session file is damaged (") + e.what() + ")");
        if (e.code() == SQLITE_READONLY || e.code() == SQLITE_PERM || e.code() == SQLITE_CANTOPEN)
            throw inputError(path, std::string("cannot open the session for writing (") + e.what() + ")");
        if (e.code() == SQLITE_BUSY || e.code() == SQLITE_LOCKED)
            throw inputError(path, std::string("the session is locked by another program (") + e.what() + ")");
        throw inputError(path, std::string("cannot read the session (") + e.what() + ")");
    } catch (const std::bad_alloc&) {
        throw inputError(path, "the session file is damaged (a stored size is impossibly large)");
    } catch (const std::length_error&) {
        throw inputError(path, "the session file is damaged (a stored size is impossibly large)");
    } catch (const std::exception& e) {
        throw inputError(path, std::string("the session file is damaged (") + e.what() + ")");
    }
}

void insertNotes(Database& db, const std::vector<Note>& notes) {
    Statement s(db, "INSERT INTO notes(note, target, job_id, step, ip, finding, start_ns, end_ns, text, author, "
                    "created_ms, modified_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
    for (const Note& n : notes) {
        if (n.id > 0)
            s.bind(1, n.id);
        else
            s.bindNull(1);
        s.bind(2, noteTargetName(n.target)).bind(3, n.jobId);
        if (n.step >= 0) s.bind(4, n.step); else s.bindNull(4);
        if (!n.ip.empty()) s.bind(5, n.ip); else s.bindNull(5);
        if (n.finding >= 0) s.bind(6, n.finding); else s.bindNull(6);
        s.bind(7, n.startNs).bind(8, n.endNs).bind(9, n.text).bind(10, n.author).bind(11, n.createdMs);
        s.bind(12, n.modifiedMs);
        s.run();
    }
}

std::vector<Note> selectNotes(Database& db, const std::string& path) {
    std::vector<Note> out;
    Statement s(db, "SELECT note, target, job_id, step, ip, finding, start_ns, end_ns, text, author, created_ms, "
                    "modified_ms FROM notes ORDER BY note");
    while (s.step()) {
        Note n;
        n.id = s.integer(0);
        auto target = parseNoteTarget(s.text(1));
        if (!target)
            throw inputError(path, "the session file is damaged: note " + std::to_string(n.id) + " has target \"" +
                                       s.text(1) + "\", expected step, rank, finding or range");
        n.target = *target;
        n.jobId = s.text(2);
        n.step = s.isNull(3) ? -1 : int(s.integer(3));
        n.ip = s.text(4);
        n.finding = s.isNull(5) ? -1 : int(s.integer(5));
        n.startNs = s.integer(6);
        n.endNs = s.integer(7);
        n.text = s.text(8);
        n.author = s.text(9);
        n.createdMs = s.integer(10);
        n.modifiedMs = s.integer(11);
        out.push_back(std::move(n));
    }
    return out;
}

} // namespace prism::store
