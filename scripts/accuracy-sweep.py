#!/usr/bin/env python3
"""Runs simulate -> analyze -> evaluate over presets and seeds and writes docs/ACCURACY.md.

Usage: scripts/accuracy-sweep.py [--cli build/app/cli/llmprism-cli] [--seeds N] [--multi-seeds N]
                                 [--presets a,b] [--out docs/ACCURACY.md]
"""
import argparse, json, os, subprocess, sys, tempfile, time, platform

ALL = ["tiny", "two-jobs", "shared-hosts", "pure-dp", "pure-pp", "deep-pipeline", "anomalies", "reuse"]
MULTI = {"two-jobs", "shared-hosts", "anomalies", "reuse"}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 3):
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}")
    return r


def pr(x):
    return f"{x['precision']:.3f}/{x['recall']:.3f}"


def pct(x):
    return "–" if x is None else f"{x * 100:.3f}%"


def main():
    ap = argparse.ArgumentParser()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--cli", default=os.path.join(root, "build", "app", "cli", "llmprism-cli"))
    ap.add_argument("--seeds", type=int, default=3, help="seeds per single-job preset")
    ap.add_argument("--multi-seeds", type=int, default=20, help="seeds per multi-job preset")
    ap.add_argument("--presets", default=",".join(ALL))
    ap.add_argument("--out", default=os.path.join(root, "docs", "ACCURACY.md"))
    a = ap.parse_args()
    rows, failures = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for preset in a.presets.split(","):
            for seed in range(1, (a.multi_seeds if preset in MULTI else a.seeds) + 1):
                d = os.path.join(tmp, f"{preset}-{seed}")
                run([a.cli, "simulate", "--preset", preset, "--seed", str(seed), "--out", d])
                t0 = time.time()
                run([a.cli, "analyze", d, "--quiet", "--json", d + "/report.json"])
                secs = time.time() - t0
                run([a.cli, "evaluate", "--report", d + "/report.json", "--truth", d + "/truth.json",
                     "--json", d + "/eval.json"])
                e = json.load(open(d + "/eval.json"))
                t = e["totals"]
                ok = t["jobs"]["exact"] and all(t[k]["fraction"] == 1.0 for k in ("tp", "pp", "dp")) and \
                    t["dp_pairs"]["exact"] and t["pp_pairs"]["exact"] and t["pp_chains"]["exact"]
                failures += not ok
                rows.append((preset, seed, pr(t["jobs"]), f"{t['tp']['exact']}/{t['pp']['exact']}/{t['dp']['exact']} of "
                             f"{t['tp']['of']}", pr(t["dp_pairs"]), pr(t["pp_pairs"]), pr(t["pp_chains"]),
                             f"{t['steps']['found']:.3f}", f"{t['steps']['spurious']}",
                             pct(t["steps"]["mean_duration_error"]), pct(t["steps"]["max_duration_error"]),
                             pr(t["findings"]), "yes" if ok else "**no**", f"{secs:.2f}"))
                print(preset, seed, "ok" if ok else "FAIL", flush=True)
    with open(a.out, "w") as f:
        f.write("# Accuracy against simulator ground truth\n\n")
        f.write(f"Made by `scripts/accuracy-sweep.py` on {time.strftime('%Y-%m-%d')} ({platform.machine()}, "
                f"{os.cpu_count()} cores): for each preset and seed, `llmprism-cli simulate`, `analyze`, then "
                "`evaluate` against truth.json (figures defined in docs/EVALUATION.md). P/R = precision/recall.\n\n")
        f.write(f"Runs: {len(rows)}; structure exact (jobs, TP/PP/DP, DP groups, PP pairs and chain order) in "
                f"{len(rows) - failures} of {len(rows)}.\n\n")
        f.write("| preset | seed | jobs P/R | TP/PP/DP exact | DP pairs P/R | PP pairs P/R | PP chains P/R | "
                "steps found | spurious | mean step err | max step err | findings P/R | structure exact | analyze s |\n")
        f.write("|" + "---|" * 14 + "\n")
        for r in rows:
            f.write("| " + " | ".join(str(x) for x in r) + " |\n")
    print(f"{len(rows) - failures}/{len(rows)} exact; wrote {a.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
