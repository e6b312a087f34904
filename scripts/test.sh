#!/usr/bin/env bash
# Installs what is needed, builds LLMPrism with its tests and runs every test through CTest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build-tests" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON \
      -DLLMPRISM_BUILD_BENCH=OFF
cmake --build "$root/build-tests"
cd "$root/build-tests"
QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j "$(nproc)"
