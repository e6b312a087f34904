#!/usr/bin/env bash
# Issue 15, items 1-3: the whole commands a user runs, side by side with the one-column awk scan of the same
# flows.csv, in rounds (scan, analyze, GUI, scan, analyze, GUI, ...) so that each ratio compares figures taken
# in the same minutes. Prints every wall time, the minimum and median of each command, its peak RSS (per record)
# and the medians' ratios to the scan's. docs/BENCHMARKS.md records what it printed.
#
# Usage: scripts/bench-scale.sh [--build DIR]... [--rounds N] [--capture DIR] [--pause S]
#   --build    a build folder holding app/cli/llmprism-cli and app/gui/llmprism (default build); several
#              (a "before" and an "after") are measured in the same rounds, each against the same scans
#   --rounds   rounds of the three commands (default 7)
#   --capture  a capture folder with flows.csv (default: the large preset, seed 1, simulated once into
#              ${TMPDIR:-/tmp}/llmprism-bench-large)
#   --pause    seconds of rest before each command (default 0): a command that follows another at once finds the
#              memory that one freed still backed by the host, one run after a rest (as a user's) does not
#              (docs/BENCHMARKS.md "Huge pages where the host takes memory back")
set -euo pipefail
builds=() rounds=7 capture="" pause=0
while [ $# -gt 0 ]; do
    case "$1" in
    --build) builds+=("$2"); shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --capture) capture=$2; shift 2 ;;
    --pause) pause=$2; shift 2 ;;
    *) echo "bench-scale.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#builds[@]} -gt 0 ] || builds=(build)
for b in "${builds[@]}"; do
    for p in "$b/app/cli/llmprism-cli" "$b/app/gui/llmprism"; do
        [ -x "$p" ] || { echo "bench-scale.sh: $p not found (build first)" >&2; exit 2; }
    done
done
[ -x /usr/bin/time ] || { echo "bench-scale.sh: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }
cli=${builds[0]}/app/cli/llmprism-cli
command -v mawk >/dev/null || { echo "bench-scale.sh: mawk not found (apt-get install mawk)" >&2; exit 2; }
if [ -z "$capture" ]; then
    capture=${TMPDIR:-/tmp}/llmprism-bench-large
    [ -f "$capture/flows.csv" ] || "$cli" simulate --preset large --seed 1 --out "$capture" >/dev/null
fi
records=$(($(wc -l <"$capture/flows.csv") - 1))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "capture $capture: $records records; $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ); rounds $rounds; pause $pause s"
for ((i = 0; i < rounds; ++i)); do
    sleep "$pause"
    /usr/bin/time -f "scan %e %M" -a -o "$work/t" mawk -F, '{s+=$8} END{print s}' "$capture/flows.csv" >/dev/null
    for ((b = 0; b < ${#builds[@]}; ++b)); do
        sleep "$pause"
        /usr/bin/time -f "analyze$b %e %M" -a -o "$work/t" "${builds[b]}/app/cli/llmprism-cli" analyze "$capture" \
            --quiet --json "$work/r.json"
        sleep "$pause"
        QT_QPA_PLATFORM=offscreen /usr/bin/time -f "gui$b %e %M" -a -o "$work/t" \
            "${builds[b]}/app/gui/llmprism" --screenshot "$work/shot.png" "$capture" >/dev/null 2>&1
    done
done
for ((b = 0; b < ${#builds[@]}; ++b)); do echo "build $b: ${builds[b]}"; done
awk -v records="$records" -v builds="${#builds[@]}" '
    { wall[$1] = wall[$1] " " $2; if ($3 > peak[$1]) peak[$1] = $3 }
    function show(c,    m, v, a, b, t) {
        m = split(substr(wall[c], 2), v, " ")
        for (a = 1; a <= m; ++a) for (b = a + 1; b <= m; ++b) if (v[b] < v[a]) { t = v[a]; v[a] = v[b]; v[b] = t }
        med[c] = m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
        printf "%-9s min %.2f s  median %.2f s  peak %.0f MB (%.0f B per record)  [%s ]\n", c, v[1], med[c],
               peak[c] / 1024, peak[c] * 1024 / records, wall[c]
    }
    END {
        show("scan")
        for (b = 0; b < builds; ++b) {
            show("analyze" b); show("gui" b)
            printf "build %d, ratios of the medians: analyze %.2fx the scan, GUI %.2fx the scan\n", b,
                   med["analyze" b] / med["scan"], med["gui" b] / med["scan"]
        }
    }' "$work/t"
