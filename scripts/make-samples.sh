#!/usr/bin/env bash
# Regenerates samples/ with the simulator (deterministic: same simulator, same files).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="${1:-$root/build/app/cli/llmprism-cli}"
for preset in two-jobs shared-hosts anomalies; do
  "$cli" simulate --preset "$preset" --seed 1 --gzip --out "$root/samples/$preset"
done
