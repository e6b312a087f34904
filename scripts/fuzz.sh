#!/usr/bin/env bash
# Fuzzes every reader with libFuzzer (clang, ASan + UBSan): the harnesses of tests/fuzz, docs/FUZZING.md.
#
#   scripts/fuzz.sh [--time SECONDS] [--runs N] [--jobs J] [HARNESS...]
#       builds build-fuzz (-DLLMPRISM_FUZZ=ON) and runs each harness (all when none is named) for SECONDS
#       (default 60 when no --runs) or N executions, whichever comes first, J harnesses at a time (default 1),
#       from its seeds (tests/fuzz/corpus/NAME)
#       and what earlier runs found (build-fuzz/corpus/NAME). --workers W runs W processes of each harness on
#       its one corpus (each takes up what the others find: libFuzzer's -reload), N/W executions each, and
#       stops them all when one finds something; the line counts them all. One line per harness in build-fuzz/results.tsv:
#       harness, executions, seconds, executions/s, corpus inputs, outcome. An input that breaks a harness is
#       kept in build-fuzz/crashes/NAME/ and the script exits 1.
#   scripts/fuzz.sh --seeds      (re)makes the seed corpora tests/fuzz/corpus/* from tests/data and samples/
#   scripts/fuzz.sh --keep NAME  merges build-fuzz/corpus/NAME into tests/fuzz/corpus/NAME, keeping only inputs
#                                that add coverage: the ordinary suite replays them (tst_fuzz_NAME)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-fuzz"
seeds="$root/tests/fuzz/corpus"

build_fuzzers() {
  if ! command -v clang++ >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq --no-install-recommends clang
  fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" -DLLMPRISM_FUZZ=ON >/dev/null
  cmake --build "$build"
}

harnesses() {
  for f in "$root"/tests/fuzz/fuzz_*.cpp; do n="$(basename "$f" .cpp)"; echo "${n#fuzz_}"; done
}

make_seeds() {
  local tmp; tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' RETURN
  local d m="$root/tests/data/malformed"
  for h in $(harnesses); do mkdir -p "$seeds/$h"; done
  # flows.csv: the head of each sample (plain, and one gzipped), the malformed ones.
  d="$seeds/flows_csv"
  for s in "$root"/samples/*/; do
    { zcat -f "$s"/flows.csv* | head -c 2048 || true; } > "$d/$(basename "$s").csv"
  done
  { zcat -f "$root"/samples/anomalies/flows.csv* | head -c 1024 || true; } | gzip -9n > "$d/anomalies-head.csv.gz"
  cp "$m"/flows_*.csv "$d/"
  cp "$m"/flows_truncated.csv.gz "$d/flows_truncated.csv.gz.bin"
  # topology.json, reports and truths.
  d="$seeds/topology_json"
  cp "$root"/samples/shared-hosts/topology.json "$d/shared-hosts.json"; cp "$m"/topology_*.json "$d/"
  d="$seeds/report_json"
  cp "$root"/tests/data/evaluate/*.json "$d/"; cp "$m"/report_*.json "$d/"
  cp "$root"/samples/shared-hosts/truth.json "$d/shared-hosts-truth.json"
  # Collector CSVs (nfdump, pmacct).
  d="$seeds/collector_csv"
  cp "$root"/tests/data/collector/*.csv "$d/"; cp "$m"/nfdump_*.csv "$m"/pmacct_*.csv "$d/"
  # Flow exports: each capture's UDP payloads, length-prefixed (tshark).
  d="$seeds/flow_export"
  for f in $(find "$root/tests/data/flow-exports" "$m" -name '*.pcap' -o -name '*.ipfix'); do
    case "$f" in *.ipfix) python3 -c 'import sys; b=open(sys.argv[1],"rb").read(); sys.stdout.buffer.write(len(b).to_bytes(2,"big")+b)' "$f" ;;
      *) tshark -r "$f" -T fields -e udp.payload 2>/dev/null | python3 -c 'import sys; sys.stdout.buffer.write(b"".join(
           len(b).to_bytes(2, "big") + b for b in (bytes.fromhex(l.strip().replace(":", "")) for l in sys.stdin if l.strip()))[:65536])' || true ;;
    esac > "$d/$(basename "$(dirname "$f")")-$(basename "$f").seed"
    [ -s "$d/$(basename "$(dirname "$f")")-$(basename "$f").seed" ] || rm -f "$d/$(basename "$(dirname "$f")")-$(basename "$f").seed"
  done
  # Packet captures: mode 1 (a file for readPcap) + the first 2 KiB of each capture, and simulated RoCE.
  d="$seeds/pcap"
  local cli="$build/app/cli/llmprism-cli"
  "$cli" simulate --preset tiny --format pcap --out "$tmp/sim" >/dev/null
  for f in $(find "$root/tests/data" "$tmp/sim" -name '*.pcap' -o -name '*.pcapng'); do
    { printf '\001'; head -c 2048 "$f" || true; } > "$d/$(basename "$(dirname "$f")")-$(basename "$f").seed"
  done
  # Sessions: a small one made by the CLI (3 steps), rewritten with 512-byte pages (85 KB instead of 1.7 MB: the
  # session writer's 64 KiB pages), and the malformed ones.
  d="$seeds/session"
  rm -f "$d"/*.prism
  "$cli" simulate --preset tiny --set steps=3,micro_batches=2 --out "$tmp/tiny" >/dev/null
  "$cli" import "$tmp/tiny" --out "$d/tiny.prism" >/dev/null
  sqlite3 "$d/tiny.prism" "PRAGMA page_size=512; VACUUM;"
  cp "$m"/session_*.prism "$d/"
  # ClickHouse answers and URLs: kept as written (tests/fuzz/corpus/clickhouse).
  for h in $(harnesses); do echo "seeds $h: $(ls "$seeds/$h" | wc -l) files, $(du -sh "$seeds/$h" | cut -f1)"; done
}

case "${1:-}" in
  --seeds) build_fuzzers; make_seeds; exit 0 ;;
  --keep)
    build_fuzzers
    h="$2"; mkdir -p "$build/corpus/$h"
    "$build/tests/fuzz/fuzz_$h" -merge=1 "$seeds/$h" "$build/corpus/$h" 2>&1 | tail -2
    exit 0 ;;
esac

time_limit=""; runs_limit=""; jobs=1; workers=1; names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) time_limit="$2"; shift 2 ;;
    --runs) runs_limit="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
[ -n "$time_limit$runs_limit" ] || time_limit=60
limit="-max_total_time=${time_limit:-0} -runs=$([ -z "$runs_limit" ] && echo -1 || echo $(((runs_limit + workers - 1) / workers)))"
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(harnesses)
build_fuzzers
mkdir -p "$build/logs"
run_one() {
  local h="$1" exe="$build/tests/fuzz/fuzz_$1"
  [ -x "$exe" ] || { echo "fuzz.sh: no harness $h" >&2; return 2; }
  mkdir -p "$build/corpus/$h" "$build/crashes/$h"
  local log="$build/logs/$h.log" rc=0 w pids=() r
  # A 16 MB quarantine (ASan's default: 256 MB) finds a use after free of anything freed during the execution
  # and made the harnesses that allocate large blocks (sessions) 1.5x faster. A hang is an execution over 60 s:
  # at nice 19 beside builds an input of 1.5 s (ASan) once took 22 s of wall time, and 20 s called it a hang.
  for ((w = 1; w <= workers; w++)); do
    ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:quarantine_size_mb=16" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
      "$exe" $limit -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$build/crashes/$h/" "$build/corpus/$h" "$seeds/$h" > "$log.$w" 2>&1 &
    pids+=($!)
  done
  # The first to fail stops the others (their corpus is shared; what it found is in crashes/).
  for ((w = 1; w <= workers; w++)); do
    r=0; wait -n || r=$?
    if [ "$r" -ne 0 ] && [ "$rc" -eq 0 ]; then rc=$r; kill "${pids[@]}" 2>/dev/null || true; fi
  done
  # Each process's count: its "Done N runs in S seconds", or its final stats when it was stopped.
  local runs=0 secs=0 n s
  for ((w = 1; w <= workers; w++)); do
    n="$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log.$w" | tail -1 | awk '{print $2}')"
    s="$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log.$w" | tail -1 | awk '{print $5}')"
    [ -n "$n" ] || n="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log.$w" | awk '{print $2}')"
    runs=$((runs + ${n:-0}))
    if [ -z "$s" ]; then secs="?"; elif [ "$secs" != "?" ] && [ "$s" -gt "$secs" ]; then secs="$s"; fi
  done
  cat "$log".[0-9]* > "$log"; rm -f "$log".[0-9]*
  local outcome="clean"
  # libFuzzer's slow-unit-* files are inputs that took over 10 s (at nice 19 beside builds, inputs of under a second
  # did): kept to look at, not failures.
  if [ "$rc" -eq 72 ] && [ -z "$(ls -A "$build/crashes/$h" | grep -v '^slow-unit-')" ]; then
    outcome="stopped (interrupted: libFuzzer's exit 72), clean"; rc=0 # killed from outside, nothing found
  elif [ "$rc" -ne 0 ]; then
    outcome="FAILED (exit $rc, see $log)"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$h" "${runs:-0}" "$secs" \
    "$(awk -v r="${runs:-0}" -v s="$secs" 'BEGIN{ if (s+0>0) printf "%d", r/s; else print "?" }')" \
    "$(ls "$build/corpus/$h" | wc -l)" "$outcome" | tee -a "$build/results.tsv"
  [ "$rc" -eq 0 ]
}
export -f run_one; export build seeds limit workers
printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} || exit 1
