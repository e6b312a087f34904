#pragma once
// Text input shared by the CSV readers (flows.csv, collector CSVs) and the source detection: the bytes of a
// file, plain or gzip (by magic bytes, whatever the name), and the small text helpers every reader uses for
// fields and messages. Qt-free.
#include "model/diagnostics.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace prism {

bool isSpace(char c);
// Control bytes other than tab/CR/LF do not occur in a text CSV.
bool isBinaryByte(unsigned char c);
// The first byte that cannot be in a text file: a control byte, or one that breaks UTF-8 (a PNG's stray
// 0x89, say); nullptr when the text is clean.
const char* findBinary(const char* p, const char* e);
// Spaces around the field removed, then one pair of surrounding double quotes (and the spaces inside them).
std::string_view trimField(std::string_view f);
// The fields of one line separated by commas (no quoting rules: no reader here needs commas inside fields).
std::vector<std::string_view> splitFields(std::string_view line);
// ASCII letters in lower case (header and protocol names are matched whatever their case).
std::string lowerAscii(std::string_view s);
// The column names of a header line: each field trimmed (trimField) and in lower case.
std::vector<std::string> headerNames(std::string_view line);
// The fields of a data row that must have `columns` of them. Binary data or another count is a row error:
// error(column, message) is called (the column where it went wrong, 1-based; message() makes the text) and nullopt
// returned.
template <typename Error>
std::optional<std::vector<std::string_view>> rowFields(std::string_view line, std::size_t columns, Error&& error) {
    if (const char* b = findBinary(line.data(), line.data() + line.size())) {
        error(std::uint32_t(std::count(line.data(), b, ',') + 1),
              [] { return std::string("binary data: not a text CSV file"); });
        return std::nullopt;
    }
    auto fields = splitFields(line);
    if (fields.size() != columns) {
        const bool fewer = fields.size() < columns;
        error(std::uint32_t(std::min(fields.size(), columns) + 1), [&] {
            return "expected " + std::to_string(columns) + " fields, found " + std::to_string(fields.size()) +
                   (fewer ? " (truncated line?)" : "");
        });
        return std::nullopt;
    }
    return fields;
}
// A row skipped (in strict mode, the file refused: throws InputError). message() makes the text: past the first
// messages a lenient read keeps (LoadDiagnostics::kMaxMessages) the row is only counted, so a file of bad rows
// makes no text for most of them.
template <typename Message>
void skipRow(LoadDiagnostics& diag, bool strict, const std::string& path, std::uint64_t line, std::uint32_t column,
             Message&& message) {
    if (!strict && diag.errors.size() >= LoadDiagnostics::kMaxMessages) {
        ++diag.skippedRows;
        return;
    }
    InputIssue issue{path, line, column, message()};
    if (strict) throw InputError(std::move(issue));
    diag.addError(std::move(issue));
}
// Quoted for messages; long or odd values are shortened so one bad row cannot flood the output.
std::string quoted(std::string_view v);
// 1-based line and column of byte `offset` of `text`.
std::pair<std::uint64_t, std::uint32_t> lineColumnAt(std::string_view text, std::size_t offset);
// nlohmann's out_of_range error while parsing ("number overflow parsing '1e999'"): where the number is in `text`
// (line and column; 0, 0 when not found) and the message without nlohmann's prefix.
InputIssue jsonRangeIssue(const std::string& path, std::string_view text, const std::string& what,
                          const std::string& prefix);

// The bytes of the file: plain reads, or inflated when the file starts with the gzip magic. zlib's
// inflate() is used directly rather than gzread() so that the data decoded before a corrupt spot is
// kept (gzread drops everything of the call that fails). Throws InputError when the file cannot be opened.
// A read buffer for `dataBytes` of data (UINT64_MAX: unknown): the data and one byte more (the read that finds the
// end), at least 4 KiB, at most `most` — a small file reads with a small buffer.
inline std::size_t readBufferSize(std::uint64_t dataBytes, std::size_t most) {
    return dataBytes >= most ? most : std::size_t(std::max<std::uint64_t>(dataBytes + 1, 4096));
}

class ByteSource {
public:
    // `expected` completes the message for a folder: "is a folder, expected <expected>".
    explicit ByteSource(const std::string& path, const std::string& expected = "a flows.csv file");
    ~ByteSource();
    ByteSource(const ByteSource&) = delete;
    ByteSource& operator=(const ByteSource&) = delete;

    // Up to n bytes; 0 at the end. A broken gzip stream ends the data (after what decoded before the
    // break) and sets streamError().
    std::size_t read(char* buf, std::size_t n) { return m_gzip ? inflateSome(buf, n) : rawRead(buf, n); }

    // Bytes the source gives at most, as far as known when it opens: the size of a plain file; for gzip or a
    // pipe, unknown (SIZE_MAX). Readers size their buffers with it.
    std::uint64_t sizeHint() const { return m_gzip || m_size == 0 ? UINT64_MAX : m_size; }
    // Fraction of the file (compressed bytes for gzip) consumed so far; -1 when the size is unknown.
    double fraction() const;
    bool gzip() const { return m_gzip; }
    const std::string& streamError() const { return m_streamError; }

private:
    static constexpr std::size_t kInput = std::size_t(1) << 20;

    [[noreturn]] void fail(const std::string& what);
    std::size_t rawRead(void* buf, std::size_t n);
    std::size_t inflateSome(char* buf, std::size_t n);

    std::string m_path;
    int m_fd = -1;
    std::uint64_t m_size = 0;
    std::uint64_t m_consumed = 0; // bytes read from the file
    bool m_gzip = false;
    z_stream m_zs{};
    std::unique_ptr<unsigned char[]> m_in; // compressed input, m_inSize bytes (the file's size when smaller)
    std::size_t m_inSize = 0;
    bool m_memberEnded = false;
    bool m_done = false;
    std::string m_streamError;
};

// A ByteSource read ahead on a thread of its own (for gzip: inflating on one core while the caller parses on
// the other), at most `depth` blocks of `block` bytes ahead. The same reads as the source's; an exception of
// the source's (a read error) comes out of read(). Blocks start at 64 KiB and double up to `block`: a small file
// is read with a small buffer.
class ReadAhead {
public:
    explicit ReadAhead(ByteSource& src, std::size_t block = std::size_t(4) << 20, std::size_t depth = 2);
    ~ReadAhead();
    ReadAhead(const ReadAhead&) = delete;
    ReadAhead& operator=(const ReadAhead&) = delete;

    // Up to n bytes; 0 at the end.
    std::size_t read(char* buf, std::size_t n);
    // The source's fraction, as of the last block read ahead.
    double fraction() const { return m_fraction.load(std::memory_order_relaxed); }
    // The source's stream error, once read() returned 0.
    const std::string& streamError() const { return m_src.streamError(); }

private:
    void run();

    ByteSource& m_src;
    const std::size_t m_block, m_depth;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    // A block read ahead, not zeroed first (a 4 MiB value-initialised vector per block cost more than a small
    // file's whole read). An empty block: the end.
    struct Block {
        std::unique_ptr<char[]> data;
        std::size_t size = 0;
    };
    std::deque<Block> m_queue;
    std::size_t m_used = 0;                // bytes of the front block already read
    bool m_stop = false;
    std::exception_ptr m_error;
    std::atomic<double> m_fraction{0.0};
    std::thread m_thread;
};

// Up to `max` bytes from the start of the file's content (inflated when gzip): what source detection looks at.
// `gzip` (when given) tells whether the file itself is gzip. Throws InputError when the file cannot be opened.
std::string readHead(const std::string& path, std::size_t max, bool* gzip = nullptr);

} // namespace prism
