#pragma once
// Internal to core/store: the schema, the checks every reader runs before trusting a file, and the note
// rows shared by the session reader, its writer and notes.cpp.
#include "model/note.h"
#include "store/sqlite_db.h"

#include <memory>
#include <string>
#include <vector>

namespace prism::store {

// PRAGMA application_id: "PRSM". A reader checks it in the file header before SQLite opens the file.
inline constexpr std::uint32_t kApplicationId = 0x5052534D;

// CREATE statements of schema version 1 (docs/SESSION_FORMAT.md mirrors them).
extern const char* const kSchemaSql;

// Opens a session after checking the header (SQLite magic, size, application id, schema version) and the
// meta table. Throws InputError naming `path` and what was expected.
std::unique_ptr<Database> openSessionDatabase(const std::string& path, bool writable);

// Turns an error met while reading `path` into an InputError ("damaged", "cannot read") and throws it;
// Cancelled and InputError pass through unchanged. Call inside a catch block.
[[noreturn]] void rethrowReadError(const std::string& path);

void insertNotes(Database& db, const std::vector<Note>& notes);
std::vector<Note> selectNotes(Database& db, const std::string& path);

} // namespace prism::store
