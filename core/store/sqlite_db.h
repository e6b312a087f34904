#pragma once
// Thin RAII over the SQLite C API for the session store (internal to core/store). Every failure throws
// SqliteError carrying SQLite's result code, so callers can tell a damaged file from a full disk.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace prism::store {

class SqliteError : public std::runtime_error {
public:
    SqliteError(int code, const std::string& what) : std::runtime_error(what), m_code(code) {}
    int code() const { return m_code; }  // primary result code (SQLITE_CORRUPT, SQLITE_FULL, ...)
    bool damaged() const;               // the file is not a database, is corrupt or lacks what it should hold

private:
    int m_code;
};

class Statement;

class Database {
public:
    enum class Mode { ReadOnly, ReadWrite, Create };
    Database(const std::string& path, Mode mode);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    void exec(const std::string& sql);
    Statement prepare(std::string_view sql);
    // The first column of the first row of `sql` as an integer (0 when there is no row).
    std::int64_t scalar(const std::string& sql);
    bool hasTable(const std::string& name);
    // Reads the blob in table.column at `rowid` into `out` (reused: no allocation per blob once it is big
    // enough). The table must have rowids.
    void readBlob(const char* table, const char* column, std::int64_t rowid, std::string& out);
    std::int64_t changes() const; // rows changed by the last INSERT/UPDATE/DELETE
    sqlite3* handle() const { return m_db; }
    [[noreturn]] void fail(int rc, const std::string& context) const;

private:
    sqlite3* m_db = nullptr;
};

class Statement {
public:
    Statement(Database& db, std::string_view sql);
    ~Statement();
    Statement(Statement&& o) noexcept : m_db(o.m_db), m_stmt(o.m_stmt) { o.m_stmt = nullptr; }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // Binding (1-based like SQLite); each returns *this so a row binds in one expression.
    Statement& bind(int i, std::int64_t v);
    Statement& bind(int i, int v) { return bind(i, std::int64_t(v)); }
    Statement& bind(int i, std::uint64_t v) { return bind(i, std::int64_t(v)); }
    Statement& bind(int i, std::uint32_t v) { return bind(i, std::int64_t(v)); }
    Statement& bind(int i, double v);
    Statement& bind(int i, std::string_view text); // copied by SQLite
    Statement& bind(int i, const char* text) { return bind(i, std::string_view(text)); }
    Statement& bind(int i, const std::string& text) { return bind(i, std::string_view(text)); }
    Statement& bindBlob(int i, const void* data, std::size_t size); // not copied: keep alive until step()
    Statement& bindNull(int i);

    bool step();       // true: a row is ready; false: done
    void run();        // step() to completion, then reset() for the next row
    void reset();

    std::int64_t integer(int col) const;
    double real(int col) const;
    std::string text(int col) const;
    bool isNull(int col) const;
    // Valid until the next step()/reset().
    std::string_view blob(int col) const;
    int columns() const;
    std::string columnName(int col) const;

private:
    Database* m_db;
    sqlite3_stmt* m_stmt = nullptr;
};

} // namespace prism::store
