// Text input shared by the CSV readers: plain or gzip bytes (ByteSource) and the field helpers.
#include "io/text_input.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace prism {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

bool isBinaryByte(unsigned char c) { return (c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f; }

const char* findBinary(const char* p, const char* e) {
    while (p < e) {
        auto c = static_cast<unsigned char>(*p);
        if (c < 0x80) {
            if (isBinaryByte(c)) return p;
            ++p;
            continue;
        }
        int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (len == 0 || e - p < len) return p;
        for (int k = 1; k < len; ++k)
            if ((static_cast<unsigned char>(p[k]) & 0xC0) != 0x80) return p;
        p += len;
    }
    return nullptr;
}

std::string_view trimField(std::string_view f) {
    while (!f.empty() && isSpace(f.front())) f.remove_prefix(1);
    while (!f.empty() && isSpace(f.back())) f.remove_suffix(1);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') {
        f = f.substr(1, f.size() - 2);
        while (!f.empty() && isSpace(f.front())) f.remove_prefix(1);
        while (!f.empty() && isSpace(f.back())) f.remove_suffix(1);
    }
    return f;
}

std::vector<std::string_view> splitFields(std::string_view line) {
    std::vector<std::string_view> out;
    out.reserve(std::size_t(std::count(line.begin(), line.end(), ',')) + 1); // one allocation, not one per doubling
    std::size_t pos = 0;
    for (;;) {
        std::size_t c = line.find(',', pos);
        if (c == std::string_view::npos) {
            out.push_back(line.substr(pos));
            return out;
        }
        out.push_back(line.substr(pos, c - pos));
        pos = c + 1;
    }
}

std::string lowerAscii(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; });
    return out;
}

std::vector<std::string> headerNames(std::string_view line) {
    std::vector<std::string> names;
    const auto fields = splitFields(line);
    names.reserve(fields.size());
    for (std::string_view f : fields) names.push_back(lowerAscii(trimField(f)));
    return names;
}

std::string quoted(std::string_view v) {
    std::string s = "\"";
    std::size_t n = 0;
    for (char c : v) {
        if (++n > 60) {
            s += "...";
            break;
        }
        if (isBinaryByte(static_cast<unsigned char>(c)))
            s += '?';
        else
            s += c;
    }
    s += '"';
    return s;
}

ByteSource::ByteSource(const std::string& path, const std::string& expected) : m_path(path) {
    m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (m_fd < 0) fail(std::string("cannot open the flows file: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(m_fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) fail("is a folder, expected " + expected);
        if (S_ISREG(st.st_mode)) m_size = std::uint64_t(st.st_size);
    }
    ::posix_fadvise(m_fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    unsigned char magic[2] = {0, 0};
    if (m_size >= 2 && ::pread(m_fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        m_inSize = std::size_t(std::min<std::uint64_t>(m_size, kInput));
        m_in.reset(new unsigned char[m_inSize]);
        if (::inflateInit2(&m_zs, 16 + MAX_WBITS) != Z_OK) fail("cannot start the gzip decoder");
        m_gzip = true;
    }
}

ByteSource::~ByteSource() {
    if (m_gzip) ::inflateEnd(&m_zs);
    if (m_fd >= 0) ::close(m_fd);
}

double ByteSource::fraction() const {
    if (m_size == 0) return -1.0;
    double used = double(m_consumed) - (m_gzip ? double(m_zs.avail_in) : 0.0);
    return std::clamp(used / double(m_size), 0.0, 1.0);
}

void ByteSource::fail(const std::string& what) { throw InputError({m_path, 0, 0, what}); }

std::size_t ByteSource::rawRead(void* buf, std::size_t n) {
    for (;;) {
        ssize_t got = ::read(m_fd, buf, n);
        if (got >= 0) {
            m_consumed += std::uint64_t(got);
            return std::size_t(got);
        }
        if (errno != EINTR) fail(std::string("read error: ") + std::strerror(errno));
    }
}

std::size_t ByteSource::inflateSome(char* buf, std::size_t n) {
    if (m_done) return 0;
    m_zs.next_out = reinterpret_cast<Bytef*>(buf);
    m_zs.avail_out = uInt(n);
    while (m_zs.avail_out > 0) {
        if (m_zs.avail_in == 0) {
            m_zs.next_in = m_in.get();
            m_zs.avail_in = uInt(rawRead(m_in.get(), m_inSize));
            if (m_zs.avail_in == 0) { // end of the file
                if (!m_memberEnded) m_streamError = "the compressed data ended early (truncated .gz file)";
                m_done = true;
                break;
            }
        }
        if (m_memberEnded) {
            // Another gzip member may follow (concatenated .gz files); anything else is trailing padding.
            if (m_zs.next_in[0] != 0x1f) {
                m_done = true;
                break;
            }
            ::inflateReset(&m_zs);
            m_memberEnded = false;
        }
        int ret = ::inflate(&m_zs, Z_NO_FLUSH);
        if (ret == Z_STREAM_END) {
            m_memberEnded = true;
        } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
            m_streamError = std::string("the compressed data is corrupt (zlib: ") +
                            (m_zs.msg ? m_zs.msg : "error " + std::to_string(ret)) + ")";
            m_done = true;
            break;
        }
    }
    return n - m_zs.avail_out;
}

std::string readHead(const std::string& path, std::size_t max, bool* gzip) {
    ByteSource src(path, "a flow data file");
    if (gzip) *gzip = src.gzip();
    std::string head(max, '\0');
    std::size_t have = 0;
    while (have < max) {
        std::size_t n = src.read(head.data() + have, max - have);
        if (n == 0) break;
        have += n;
    }
    head.resize(have);
    return head;
}

ReadAhead::ReadAhead(ByteSource& src, std::size_t block, std::size_t depth)
    : m_src(src), m_block(block), m_depth(std::max<std::size_t>(1, depth)), m_thread([this] { run(); }) {}

ReadAhead::~ReadAhead() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_changed.notify_all();
    m_thread.join();
}

void ReadAhead::run() {
    try {
        for (std::size_t size = std::min<std::size_t>(m_block, std::size_t(64) << 10);; size = std::min(2 * size, m_block)) {
            Block block{std::unique_ptr<char[]>(new char[size]), 0};
            block.size = m_src.read(block.data.get(), size);
            const bool end = block.size == 0;
            std::unique_lock lock(m_mutex);
            m_changed.wait(lock, [&] { return m_stop || m_queue.size() < m_depth; });
            if (m_stop) return;
            m_fraction.store(m_src.fraction(), std::memory_order_relaxed);
            m_queue.push_back(std::move(block));
            m_changed.notify_all();
            if (end) return;
        }
    } catch (...) {
        std::lock_guard lock(m_mutex);
        m_error = std::current_exception();
        m_queue.emplace_back(); // the end, with the error
        m_changed.notify_all();
    }
}

std::size_t ReadAhead::read(char* buf, std::size_t n) {
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [&] { return !m_queue.empty(); });
    Block& front = m_queue.front();
    if (front.size == 0) { // the end stays in the queue: every later read is 0 too
        if (m_error) std::rethrow_exception(m_error);
        return 0;
    }
    const std::size_t got = std::min(n, front.size - m_used);
    std::memcpy(buf, front.data.get() + m_used, got);
    m_used += got;
    if (m_used == front.size) {
        m_queue.pop_front();
        m_used = 0;
        m_changed.notify_all();
    }
    return got;
}

std::pair<std::uint64_t, std::uint32_t> lineColumnAt(std::string_view text, std::size_t offset) {
    std::uint64_t line = 1;
    std::size_t lineStart = 0;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i)
        if (text[i] == '\n') {
            ++line;
            lineStart = i + 1;
        }
    return {line, std::uint32_t(std::min(offset, text.size()) - lineStart + 1)};
}

InputIssue jsonRangeIssue(const std::string& path, std::string_view text, const std::string& what,
                          const std::string& prefix) {
    std::string message = what;
    if (auto p = message.find("] "); p != std::string::npos) message = message.substr(p + 2);
    InputIssue issue{path, 0, 0, prefix + message};
    const auto open = what.find('\''), close = what.rfind('\'');
    if (open != std::string::npos && close > open + 1)
        if (auto at = text.find(std::string_view(what).substr(open + 1, close - open - 1)); at != std::string::npos) {
            const auto [line, column] = lineColumnAt(text, at);
            issue.line = line;
            issue.column = column;
        }
    return issue;
}

} // namespace prism
