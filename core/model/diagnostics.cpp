#include "model/diagnostics.h"

namespace prism {

std::string InputIssue::toString() const {
    // Appends only: GCC 12 warns falsely (-Wrestrict, bug 105329) on "literal" + std::string at -O3.
    std::string s = file;
    if (line) {
        s.append(1, ':').append(std::to_string(line));
        if (column) s.append(1, ':').append(std::to_string(column));
    }
    s.append(": ").append(message);
    return s;
}

InputError::InputError(InputIssue issue) : std::runtime_error(issue.toString()), m_issue(std::move(issue)) {}

void LoadDiagnostics::addError(InputIssue issue) {
    ++skippedRows;
    if (errors.size() < kMaxMessages) errors.push_back(std::move(issue));
}

void LoadDiagnostics::addWarning(InputIssue issue) {
    ++warningCount;
    if (warnings.size() < kMaxMessages) warnings.push_back(std::move(issue));
}

void LoadDiagnostics::merge(const LoadDiagnostics& o) {
    skippedRows += o.skippedRows;
    warningCount += o.warningCount;
    for (const auto& e : o.errors)
        if (errors.size() < kMaxMessages) errors.push_back(e);
    for (const auto& w : o.warnings)
        if (warnings.size() < kMaxMessages) warnings.push_back(w);
}

} // namespace prism
