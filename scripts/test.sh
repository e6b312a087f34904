#!/usr/bin/env bash
# Installs what is needed, builds LLMPrism with its tests and runs every test through CTest.
#   scripts/test.sh              Release build in build-tests (with the benchmarks, compiled only)
#   scripts/test.sh --sanitize   the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer
#                                (LLMPRISM_SANITIZE, -O1) in build-sanitize; any sanitizer report fails the test
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
if [ "${1:-}" = "--sanitize" ]; then
  build="$root/build-sanitize"
  # -Og: the same checks as -O1 in 60% of its compile time (the template-heavy JSON and session files: 28 s
  # against 46 s each), still fast enough to run; line tables (-g1) for the reports; asserts stay on.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1" -DBUILD_TESTING=ON -DLLMPRISM_SANITIZE=ON \
        -DLLMPRISM_BUILD_BENCH=OFF
  # A sanitizer report ends the process with exit code 86, which no test expects of llmprism-cli; leaks are
  # reported (LeakSanitizer), less the ones of system libraries listed in tests/sanitizer/lsan.supp; malloc of
  # an impossible size returns null as without the sanitizer (allocator_may_return_null).
  export ASAN_OPTIONS="exitcode=86:detect_leaks=1:allocator_may_return_null=1:strict_string_checks=1:detect_stack_use_after_return=1"
  export UBSAN_OPTIONS="halt_on_error=1:exitcode=86:print_stacktrace=1"
  export LSAN_OPTIONS="suppressions=$root/tests/sanitizer/lsan.supp:print_suppressions=0"
else
  build="$root/build-tests"
  # The benchmarks are compiled (not run) so that none can rot: they use the engine's and the views' types.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON \
        -DLLMPRISM_BUILD_BENCH=ON
fi
cmake --build "$build"
cd "$build"
QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j "$(nproc)"
