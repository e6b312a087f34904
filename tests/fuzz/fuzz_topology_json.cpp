// libFuzzer harness for the topology reader (docs/FORMATS.md "topology.json", and "Topology from a hostfile": the
// reader tells the two apart by content): any bytes give a topology whose
// indices hold together, or an InputError naming the file, never a crash, a hang or a sanitizer report.
// Built by tests/fuzz/CMakeLists.txt (-DLLMPRISM_FUZZ=ON); run by scripts/fuzz.sh.
#include "fuzz_util.h"
#include "io/capture.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = fuzz::tempPath("topology.json");
    fuzz::writeFile(path, data, size);
    try {
        const prism::Topology t = prism::readTopologyJson(path);
        for (std::size_t h = 0; h < t.hosts.size(); ++h)
            for (int n : t.hosts[h].nics)
                if (n < 0 || std::size_t(n) >= t.nics.size() || t.nics[n].host != int(h)) __builtin_trap();
        for (std::size_t n = 0; n < t.nics.size(); ++n) {
            const prism::Nic& nic = t.nics[n];
            if (nic.host < 0 || std::size_t(nic.host) >= t.hosts.size()) __builtin_trap();
            if (nic.switchIndex >= int(t.switches.size())) __builtin_trap();
            const auto found = t.nicByIp(nic.ip);
            if (!found || t.nics[*found].ip != nic.ip) __builtin_trap();
            if (t.gpusBehind(nic.ip) < 1) __builtin_trap();
            (void)t.rankLabel(nic.ip);
        }
        (void)t.gpuCount();
    } catch (const prism::InputError& e) {
        fuzz::checkRefusal(e);
    }
    return 0;
}
