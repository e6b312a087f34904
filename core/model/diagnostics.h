#pragma once
// Problems found while reading input: where (file, line, column), what was found and what was expected.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace prism {

struct InputIssue {
    std::string file;
    std::uint64_t line = 0;   // 1-based; 0 when the issue concerns the whole file
    std::uint32_t column = 0; // 1-based column (CSV field number or JSON character column); 0 when unknown
    std::string message;      // what was found and what was expected
    // "file:line:column: message" (line and column left out when 0)
    std::string toString() const;
};

// Thrown for fatal input errors (missing file, unreadable header, strict-mode row error, bad JSON).
class InputError : public std::runtime_error {
public:
    explicit InputError(InputIssue issue);
    const InputIssue& issue() const { return m_issue; }

private:
    InputIssue m_issue;
};

// What a lenient load skipped: counts plus the first kMaxMessages issues for display.
struct LoadDiagnostics {
    static constexpr std::size_t kMaxMessages = 20;
    std::uint64_t skippedRows = 0;
    std::uint64_t warningCount = 0;
    std::vector<InputIssue> errors;   // first kMaxMessages rows skipped, with why
    std::vector<InputIssue> warnings; // first kMaxMessages warnings (not fatal, nothing skipped)

    void addError(InputIssue issue);
    void addWarning(InputIssue issue);
    void merge(const LoadDiagnostics& other);
    bool clean() const { return skippedRows == 0 && warningCount == 0; }
};

} // namespace prism

namespace prism {

// Thrown by long-running work when its progress callback asked to stop.
class Cancelled : public std::runtime_error {
public:
    Cancelled() : std::runtime_error("cancelled") {}
};

} // namespace prism
