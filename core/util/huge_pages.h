#pragma once
// Whether large blocks are advised for transparent huge pages (core/huge_pages.cpp, the replaced operator new,
// asks hugePagesAdvised).
// None of these allocates with operator new: they run inside it.

namespace prism {

// Whether a virtio balloon among `devices` (a sysfs folder of virtio devices, one folder each with `device` and
// `features`) has negotiated free page reporting: the guest hands its free memory back to the host.
bool hostTakesFreeMemory(const char* devices = "/sys/bus/virtio/devices");

// The advice from LLMPRISM_HUGE_PAGES ("0": never, anything else: always), else LLMPRISM_NO_HUGE_PAGES (set:
// never), else where the host does not take free memory back.
bool decideHugePages(const char* hugePages, const char* noHugePages, bool hostTakesMemory);

// This process' advice, decided once: at start-up in a program with the replaced operator new (core/huge_pages.cpp),
// before any thread could change the environment; else at the first call.
bool hugePagesAdvised();

} // namespace prism
