#include "util/dynamic_library.h"

#include <dlfcn.h>

namespace prism {

void* loadLibrary(const std::vector<std::string>& names, std::string& error) {
    std::string tried;
    for (const std::string& name : names) {
        if (void* library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
            error.clear();
            return library;
        }
        const char* why = ::dlerror();
        tried += (tried.empty() ? "" : "; ") + (why ? std::string(why) : name + ": cannot be loaded");
    }
    error = names.empty() ? "no library named" : tried;
    return nullptr;
}

void* librarySymbol(void* library, const char* symbol) { return library ? ::dlsym(library, symbol) : nullptr; }

RequiredLibrary::RequiredLibrary(const std::vector<std::string>& names, const std::string& needs,
                                 const std::string& package)
    : m_name(names.empty() ? std::string() : names.front()), m_package(package) {
    std::string error;
    m_library = loadLibrary(names, error);
    if (!m_library)
        throw std::runtime_error(needs + ", which cannot be loaded (" + error + "): install it (Debian: apt install " +
                                 package + ")");
}

} // namespace prism
