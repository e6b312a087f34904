#pragma once
// Shared libraries loaded when first needed (dlopen) rather than at every start.
#include <stdexcept>
#include <string>
#include <vector>

namespace prism {

// Loads the first of `names` (sonames, as the dynamic linker finds them, or paths) that loads, for the rest of the
// process, as a library linked at start stays; null when none does, and `error` then says what each gave. For a
// library a program needs for some work only: libcurl (ClickHouse), libpcap (capture files) and libcrypto
// (checksums), with the thirty-odd libraries they pull in, took 4 ms of each command's start (6.3 -> 2.5 ms for
// `llmprism-cli --version`) and 2.5 MB of its memory.
void* loadLibrary(const std::vector<std::string>& names, std::string& error);

// The address of `symbol` in a library loadLibrary gave; null when it has none.
void* librarySymbol(void* library, const char* symbol);

// Sets the function pointer `fn` to `symbol` of `library`; false (and `fn` null) when the library has none.
template <typename Fn>
bool bindSymbol(void* library, const char* symbol, Fn& fn) {
    fn = reinterpret_cast<Fn>(librarySymbol(library, symbol));
    return fn != nullptr;
}

// A library some work needs: loaded (the first of `names` that loads), else a std::runtime_error that says
// `needs`, why, and to install `package` (Debian's); its functions bound by name, else a std::runtime_error naming
// the one missing.
class RequiredLibrary {
public:
    RequiredLibrary(const std::vector<std::string>& names, const std::string& needs, const std::string& package);
    template <typename Fn>
    void bind(const char* symbol, Fn& fn) const {
        if (!bindSymbol(m_library, symbol, fn))
            throw std::runtime_error(m_name + " has no " + symbol + ": a version too old; install a newer " +
                                     m_package);
    }

private:
    void* m_library = nullptr;
    std::string m_name, m_package;
};

} // namespace prism
