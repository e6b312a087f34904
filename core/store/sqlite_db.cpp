#include "store/sqlite_db.h"

#include <sqlite3.h>

namespace prism::store {

bool SqliteError::damaged() const {
    // Besides corruption proper, a file that passed the session checks but lacks a table or column
    // (SQLITE_ERROR from prepare) or holds values of the wrong type is damaged as far as a reader can tell.
    switch (m_code) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_ERROR:
    case SQLITE_SCHEMA:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
    case SQLITE_FORMAT: return true;
    default: return false;
    }
}

Database::Database(const std::string& path, Mode mode) {
    int flags = SQLITE_OPEN_NOMUTEX;
    switch (mode) {
    case Mode::ReadOnly: flags |= SQLITE_OPEN_READONLY; break;
    case Mode::ReadWrite: flags |= SQLITE_OPEN_READWRITE; break;
    case Mode::Create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
    }
    int rc = sqlite3_open_v2(path.c_str(), &m_db, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
        sqlite3_close(m_db);
        m_db = nullptr;
        throw SqliteError(rc & 0xff, msg);
    }
    sqlite3_extended_result_codes(m_db, 0);
    sqlite3_busy_timeout(m_db, 5000); // another program editing notes holds the lock briefly
}

Database::~Database() { sqlite3_close(m_db); }

void Database::fail(int rc, const std::string& context) const {
    std::string msg = m_db ? sqlite3_errmsg(m_db) : sqlite3_errstr(rc);
    throw SqliteError(rc & 0xff, context.empty() ? msg : context + ": " + msg);
}

void Database::exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        throw SqliteError(rc & 0xff, msg);
    }
}

Statement Database::prepare(std::string_view sql) { return Statement(*this, sql); }

std::int64_t Database::scalar(const std::string& sql) {
    Statement s(*this, sql);
    return s.step() ? s.integer(0) : 0;
}

bool Database::hasTable(const std::string& name) {
    Statement s(*this, "SELECT 1 FROM sqlite_schema WHERE type IN ('table','view') AND name = ?");
    s.bind(1, name);
    return s.step();
}

void Database::readBlob(const char* table, const char* column, std::int64_t rowid, std::string& out) {
    sqlite3_blob* blob = nullptr;
    int rc = sqlite3_blob_open(m_db, "main", table, column, rowid, 0, &blob);
    if (rc != SQLITE_OK) fail(rc, std::string(table) + "." + column);
    const int size = sqlite3_blob_bytes(blob);
    out.resize(std::size_t(size));
    rc = sqlite3_blob_read(blob, out.data(), size, 0);
    sqlite3_blob_close(blob);
    if (rc != SQLITE_OK) fail(rc, std::string(table) + "." + column);
}

std::int64_t Database::changes() const { return sqlite3_changes64(m_db); }

Statement::Statement(Database& db, std::string_view sql) : m_db(&db) {
    int rc = sqlite3_prepare_v2(db.handle(), sql.data(), int(sql.size()), &m_stmt, nullptr);
    if (rc != SQLITE_OK) db.fail(rc, "");
}

Statement::~Statement() { sqlite3_finalize(m_stmt); }

Statement& Statement::bind(int i, std::int64_t v) {
    if (int rc = sqlite3_bind_int64(m_stmt, i, v); rc != SQLITE_OK) m_db->fail(rc, "bind");
    return *this;
}

Statement& Statement::bind(int i, double v) {
    if (int rc = sqlite3_bind_double(m_stmt, i, v); rc != SQLITE_OK) m_db->fail(rc, "bind");
    return *this;
}

Statement& Statement::bind(int i, std::string_view text) {
    if (int rc = sqlite3_bind_text(m_stmt, i, text.data(), int(text.size()), SQLITE_TRANSIENT); rc != SQLITE_OK)
        m_db->fail(rc, "bind");
    return *this;
}

Statement& Statement::bindBlob(int i, const void* data, std::size_t size) {
    if (int rc = sqlite3_bind_blob64(m_stmt, i, size ? data : "", size, SQLITE_STATIC); rc != SQLITE_OK)
        m_db->fail(rc, "bind");
    return *this;
}

Statement& Statement::bindNull(int i) {
    if (int rc = sqlite3_bind_null(m_stmt, i); rc != SQLITE_OK) m_db->fail(rc, "bind");
    return *this;
}

bool Statement::step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    m_db->fail(rc, "");
}

void Statement::run() {
    while (step()) {
    }
    reset();
}

void Statement::reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

std::int64_t Statement::integer(int col) const { return sqlite3_column_int64(m_stmt, col); }
double Statement::real(int col) const { return sqlite3_column_double(m_stmt, col); }

std::string Statement::text(int col) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, col));
    return p ? std::string(p, std::size_t(sqlite3_column_bytes(m_stmt, col))) : std::string();
}

bool Statement::isNull(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }

std::string_view Statement::blob(int col) const {
    auto p = static_cast<const char*>(sqlite3_column_blob(m_stmt, col));
    return p ? std::string_view(p, std::size_t(sqlite3_column_bytes(m_stmt, col))) : std::string_view();
}

int Statement::columns() const { return sqlite3_column_count(m_stmt); }
std::string Statement::columnName(int col) const { return sqlite3_column_name(m_stmt, col); }

} // namespace prism::store
