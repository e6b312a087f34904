#!/usr/bin/env bash
# Installs what is needed, builds LLMPrism in Release and opens the GUI on the bundled sample capture.
# Extra arguments are passed to the app (e.g. another capture folder).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
cmake --build "$root/build" --target llmprism llmprism-cli
if [ $# -eq 0 ]; then set -- "$root/samples/anomalies"; fi
exec "$root/build/app/gui/llmprism" "$@"
