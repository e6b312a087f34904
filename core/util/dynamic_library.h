#pragma once
// Shared libraries loaded when first needed (dlopen) rather than at every start.
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

} // namespace prism
