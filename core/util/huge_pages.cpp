#include "util/huge_pages.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#endif

namespace prism {

#if defined(__linux__)
namespace {

// The first line of a (sysfs) file into buf, or "" (no operator new: this runs inside it).
void readLine(const char* path, char* buf, std::size_t size) {
    buf[0] = 0;
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    const ssize_t got = ::read(fd, buf, size - 1);
    ::close(fd);
    buf[got > 0 ? got : 0] = 0;
}

} // namespace
#endif

bool hostTakesFreeMemory(const char* devices) {
#if defined(__linux__)
    DIR* dir = ::opendir(devices);
    if (!dir) return false;
    bool reporting = false;
    while (const dirent* d = ::readdir(dir)) {
        if (d->d_name[0] == '.') continue;
        char path[1024], line[256];
        std::snprintf(path, sizeof path, "%s/%s/device", devices, d->d_name);
        readLine(path, line, sizeof line);
        if (std::strtol(line, nullptr, 16) != 5) continue; // not a balloon
        std::snprintf(path, sizeof path, "%s/%s/features", devices, d->d_name);
        readLine(path, line, sizeof line);
        if (std::strlen(line) > 5 && line[5] == '1') reporting = true; // bit 5: VIRTIO_BALLOON_F_REPORTING
    }
    ::closedir(dir);
    return reporting;
#else
    (void)devices;
    return false;
#endif
}

bool decideHugePages(const char* hugePages, const char* noHugePages, bool hostTakesMemory) {
    if (hugePages && *hugePages) return std::strcmp(hugePages, "0") != 0;
    if (noHugePages) return false;
    return !hostTakesMemory;
}

bool hugePagesAdvised() {
    static const bool advised = [] {
        const char* hugePages = std::getenv("LLMPRISM_HUGE_PAGES");
        const char* noHugePages = std::getenv("LLMPRISM_NO_HUGE_PAGES");
        const bool environmentDecides = (hugePages && *hugePages) || noHugePages;
        return decideHugePages(hugePages, noHugePages, !environmentDecides && hostTakesFreeMemory());
    }();
    return advised;
}

} // namespace prism
