#!/usr/bin/env python3
"""Runs simulate -> analyze -> evaluate over presets and seeds, checks the accuracy bars and writes docs/ACCURACY.md.

Usage: scripts/accuracy-sweep.py [--cli build/app/cli/llmprism-cli] [--seeds N] [--multi-seeds N]
                                 [--presets a,b] [--variant-seeds N] [--with-large] [--out docs/ACCURACY.md]
                                 [--check]
       scripts/accuracy-sweep.py --random N [--first-seed S] [--jobs J] [--failures-out FILE]
       scripts/accuracy-sweep.py --traces tests/data/megatron-trace

Besides the presets as they are, variants: presets with anomalies of varied strength, length and place drawn
per seed (`simulate --clear-anomalies --anomaly ...`), and with one or two channels per transfer and lost records
(`--channels`, `--loss`).

Bars (issues 3 and 4; figures as defined in docs/EVALUATION.md, micro-averaged over the runs):
  structure   every run: jobs, TP/PP/DP, DP groups, PP pairs and chain order exact
  steps       >= 99.5% of true steps found, no spurious step, mean duration error <= 0.1%, max <= 1%
  findings    precision >= 0.95 and recall >= 0.95 over the runs with anomalies; no finding on clean runs
Exit status: 0, or with --check 1 when a bar is missed; 2 when a command fails.
"""
import argparse, json, os, platform, random, subprocess, sys, tempfile, time

ALL = ["tiny", "two-jobs", "shared-hosts", "pure-dp", "pure-pp", "deep-pipeline", "anomalies", "pp-anomalies",
       "reuse",
       # Production styles (issue 12, docs/SIMULATOR.md)
       "shared-nics", "restart", "checkpoints", "long-run", "zero1", "fsdp", "moe", "moe-ep-lt-dp", "interleaved",
       "interleaved-nodp", "grad-accum", "megatron-64", "megatron-8"]
MULTI = {"two-jobs", "shared-hosts", "anomalies", "pp-anomalies", "reuse",
         "restart", "checkpoints", "long-run", "megatron-64", "megatron-8"}
# Variants: name -> (preset, what varies). "anomalies" draws a slow rank, a slow link and a slow step per seed
# (kinds listed), in disjoint step ranges of job 0; "loss" sets channels per transfer and the lost fraction.
VARIANTS = {
    "tiny, varied anomalies": ("tiny", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "pure-pp, varied anomalies": ("pure-pp", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "deep-pipeline, varied anomalies": ("deep-pipeline", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "pure-dp, varied anomalies": ("pure-dp", {"anomalies": ["slow_link", "slow_step"]}),  # no slow rank: see ENGINE.md
    "two-jobs, varied anomalies": ("two-jobs", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "anomalies, 1 channel, 2% lost": ("anomalies", {"channels": 1, "loss": 0.02}),
    "deep-pipeline, 1 channel, 2% lost": ("deep-pipeline", {"channels": 1, "loss": 0.02}),
    "pp-anomalies, 2 channels, 5% lost": ("pp-anomalies", {"channels": 2, "loss": 0.05}),
    "anomalies, 2 channels, 5% lost": ("anomalies", {"channels": 2, "loss": 0.05}),
    "shared-hosts, varied anomalies": ("shared-hosts", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "reuse, varied anomalies": ("reuse", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "tiny, varied anomalies, 1 channel, 2% lost":
        ("tiny", {"anomalies": ["slow_rank", "slow_link", "slow_step"], "channels": 1, "loss": 0.02}),
    "pure-pp, varied anomalies, 2 channels, 5% lost":
        ("pure-pp", {"anomalies": ["slow_rank", "slow_link", "slow_step"], "channels": 2, "loss": 0.05}),
    "deep-pipeline, varied anomalies, 1 channel, 2% lost":
        ("deep-pipeline", {"anomalies": ["slow_rank", "slow_link", "slow_step"], "channels": 1, "loss": 0.02}),
    "pure-dp, varied anomalies, 1 channel, 2% lost":
        ("pure-dp", {"anomalies": ["slow_link", "slow_step"], "channels": 1, "loss": 0.02}),
    "two-jobs, varied anomalies, 1 channel, 2% lost":
        ("two-jobs", {"anomalies": ["slow_rank", "slow_link", "slow_step"], "channels": 1, "loss": 0.02}),
    "shared-hosts, varied anomalies, 1 channel, 2% lost":
        ("shared-hosts", {"anomalies": ["slow_rank", "slow_link", "slow_step"], "channels": 1, "loss": 0.02}),
    "reuse, 1 channel, 2% lost": ("reuse", {"channels": 1, "loss": 0.02}),
    "anomalies, 1 channel, 5% lost": ("anomalies", {"channels": 1, "loss": 0.05}),
    "pp-anomalies, 1 channel, 2% lost": ("pp-anomalies", {"channels": 1, "loss": 0.02}),
    "deep-pipeline, 2 channels, 5% lost": ("deep-pipeline", {"channels": 2, "loss": 0.05}),
    # Production styles with anomalies
    "shared-nics, varied anomalies": ("shared-nics", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "zero1, varied anomalies": ("zero1", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "fsdp, varied anomalies": ("fsdp", {"anomalies": ["slow_link", "slow_step"]}),  # pure DP, like pure-dp
    "moe, varied anomalies": ("moe", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "moe-ep-lt-dp, varied anomalies": ("moe-ep-lt-dp", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "interleaved, varied anomalies": ("interleaved", {"anomalies": ["slow_rank", "slow_link", "slow_step"]}),
    "megatron-8, 1 channel, 2% lost": ("megatron-8", {"channels": 1, "loss": 0.02}),
}


def variant_args(name, seed, steps):
    """simulate options of a variant for a seed; `steps` is job 0's step count."""
    _, what = VARIANTS[name]
    args = []
    if "channels" in what:
        args += ["--channels", str(what["channels"]), "--loss", str(what["loss"])]
    kinds = what.get("anomalies")
    if kinds:
        rng = random.Random(f"{name}/{seed}")
        args.append("--clear-anomalies")
        # Disjoint slots in steps 1 .. steps-2 (the first and last step of a capture are often cut), up to 5
        # steps each: together they may cover most of a short job's steps.
        slot = (steps - 2) // len(kinds)
        longest = max(1, min(5, slot - 1))
        order = list(range(len(kinds)))
        rng.shuffle(order)
        for kind, i in zip(kinds, order):
            lo = 1 + i * slot
            length = rng.randint(1, longest)
            first = rng.randint(lo, lo + slot - length)
            rng_steps = f"steps={first}-{first + length - 1}"
            if kind == "slow_rank":
                args += ["--anomaly", f"slow_rank:{rng_steps},factor={rng.choice([1.3, 1.6, 2.0, 3.0])}"]
            elif kind == "slow_link":
                args += ["--anomaly", f"slow_link:{rng_steps},factor={rng.choice([2, 4, 8])}"]
            else:
                args += ["--anomaly", f"slow_step:{rng_steps},pause_ms={rng.choice([40, 150, 400])}"]
    return args


BARS = {"found": 0.995, "spurious": 0, "mean_err": 0.001, "max_err": 0.01, "precision": 0.95, "recall": 0.95}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 3):
        print(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr}", file=sys.stderr)
        sys.exit(2)
    return r


def frac(n, d):
    return 1.0 if d == 0 and n == 0 else (n / d if d else 0.0)


def pct(x, digits=3):
    return "–" if x is None else f"{x * 100:.{digits}f}%"


class Tally:
    """Summed counts of evaluate's totals, so that figures over many runs are micro-averaged."""

    def __init__(self):
        self.runs = self.exact = 0
        self.truth_steps = self.report_steps = self.matched_steps = 0
        self.samples = 0
        self.sum_err = 0.0
        self.max_err = 0.0
        self.f_truth = self.f_report = self.f_truth_matched = self.f_report_matched = 0
        self.clean_runs = self.clean_with_findings = 0
        self.by_kind = {}
        self.seconds = 0.0

    def add(self, t, structure_ok, has_anomalies, secs):
        s, f = t["steps"], t["findings"]
        self.runs += 1
        self.exact += structure_ok
        self.truth_steps += s["truth"]
        self.report_steps += s["report"]
        self.matched_steps += s["matched"]
        n = s["duration_samples"]
        self.samples += n
        if n:
            self.sum_err += s["mean_duration_error"] * n
            self.max_err = max(self.max_err, s["max_duration_error"])
        self.f_truth += f["truth"]
        self.f_report += f["report"]
        self.f_truth_matched += f["truth_matched"]
        self.f_report_matched += f["report_matched"]
        if not has_anomalies:
            self.clean_runs += 1
            self.clean_with_findings += f["report"] > 0
        for kind, pr in t.get("findings_by_kind", {}).items():
            k = self.by_kind.setdefault(kind, [0, 0, 0, 0])
            for i, key in enumerate(("truth", "report", "truth_matched", "report_matched")):
                k[i] += pr[key]
        self.seconds = max(self.seconds, secs)

    def merge(self, o):
        for key in ("runs", "exact", "truth_steps", "report_steps", "matched_steps", "samples", "sum_err", "f_truth",
                    "f_report", "f_truth_matched", "f_report_matched", "clean_runs", "clean_with_findings"):
            setattr(self, key, getattr(self, key) + getattr(o, key))
        self.max_err = max(self.max_err, o.max_err)
        self.seconds = max(self.seconds, o.seconds)
        for kind, v in o.by_kind.items():
            k = self.by_kind.setdefault(kind, [0, 0, 0, 0])
            for i in range(4):
                k[i] += v[i]

    def found(self):
        return frac(self.matched_steps, self.truth_steps)

    def spurious(self):
        return self.report_steps - self.matched_steps

    def mean_err(self):
        return self.sum_err / self.samples if self.samples else None

    def precision(self):
        return frac(self.f_report_matched, self.f_report)

    def recall(self):
        return frac(self.f_truth_matched, self.f_truth)

    def failures(self):
        """The bars this tally misses, as text."""
        out = []
        if self.exact < self.runs:
            out.append(f"structure exact in {self.exact} of {self.runs} runs")
        if self.found() < BARS["found"]:
            out.append(f"steps found {pct(self.found())} < {pct(BARS['found'], 1)}")
        if self.spurious() > BARS["spurious"]:
            out.append(f"{self.spurious()} spurious steps")
        if self.mean_err() is not None and self.mean_err() > BARS["mean_err"]:
            out.append(f"mean step error {pct(self.mean_err())} > {pct(BARS['mean_err'], 1)}")
        if self.max_err > BARS["max_err"]:
            out.append(f"max step error {pct(self.max_err)} > {pct(BARS['max_err'], 1)}")
        if self.f_truth and self.precision() < BARS["precision"]:
            out.append(f"finding precision {self.precision():.3f} < {BARS['precision']}")
        if self.f_truth and self.recall() < BARS["recall"]:
            out.append(f"finding recall {self.recall():.3f} < {BARS['recall']}")
        if self.clean_with_findings:
            out.append(f"findings on {self.clean_with_findings} of {self.clean_runs} clean runs")
        return out


# ---- the randomized sweep (--random N): whole configurations drawn by `simulate --random SEED` ----

FEATURES = [  # (tag, test on the config line simulate --random writes into truth.json's notes)
    ("experts", lambda c: ", EP " in c), ("interleaved", lambda c: "chunks a stage" in c),
    ("ZeRO-1/2", lambda c: "distributed optimizer" in c), ("ZeRO-3", lambda c: "ZeRO-3" in c),
    ("tied embedding", lambda c: "tied embedding" in c), ("accumulation", lambda c: "accumulation" in c),
    ("heavy last stage", lambda c: "last stage x" in c), ("overlapped sync", lambda c: "sync overlapped" in c), ("shared NICs", lambda c: "(2 a NIC)" in c),
    ("no DP", lambda c: " x DP 1 " in c), ("no PP", lambda c: " x PP 1 " in c),
    ("PP 2", lambda c: " x PP 2 " in c), ("timeout 1 s", lambda c: "active timeout 1000 ms" in c),
    ("skew > 0.5 ms", lambda c: any(int(w) > 500 for w in __import__("re").findall(r"skew (\d+) us", c))),
    ("straggler all run", lambda c: "slow_rank steps 0-" in c),
]


def draw_once(cli, seed, tmp):
    """simulate --random seed, analyze, evaluate: (config line, evaluation totals, per-kind findings, seconds)."""
    d = os.path.join(tmp, f"random-{seed}")
    run([cli, "simulate", "--random", str(seed), "--out", d])
    t0 = time.time()
    run([cli, "analyze", d, "--quiet", "--json", d + "/report.json"])
    secs = time.time() - t0
    run([cli, "evaluate", "--report", d + "/report.json", "--truth", d + "/truth.json", "--json", d + "/eval.json"])
    e = json.load(open(d + "/eval.json"))
    truth = json.load(open(d + "/truth.json"))
    config = next((n for n in truth.get("notes", []) if n.startswith("random configuration")), "")
    subprocess.run(["rm", "-rf", d])
    return config, e, truth, secs


def failure_classes(e, truth):
    """What a draw got wrong, as classes: shape, groups, steps missed/spurious, false or missed findings by kind."""
    t = e["totals"]
    out = []
    if not t["jobs"]["exact"]:
        out.append("jobs split or merged")
    elif not all(t[k]["fraction"] == 1.0 for k in ("tp", "pp", "dp")):
        out.append("wrong shape")
    elif not (t["dp_pairs"]["exact"] and t["pp_pairs"]["exact"] and t["pp_chains"]["exact"]):
        out.append("wrong DP groups or PP chains")
    st = t["steps"]
    if st["matched"] < st["truth"]:
        out.append("steps missed")
    if st["spurious"]:
        out.append("spurious steps")
    clean = not any(j.get("anomalies") for j in truth["jobs"])
    for kind, pr in t.get("findings_by_kind", {}).items():
        if pr["report"] > pr["report_matched"]:
            out.append("false finding on a clean draw" if clean else f"false {kind}")
        if pr["truth"] > pr["truth_matched"]:
            out.append(f"missed {kind}")
    return out


def run_random(a):
    from concurrent.futures import ThreadPoolExecutor
    seeds = list(range(a.first_seed, a.first_seed + a.random))
    total, classes, features, rows, per_draw = Tally(), {}, {}, [], ([], [])
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for seed, (config, e, truth, secs) in zip(seeds, pool.map(lambda s: draw_once(a.cli, s, tmp), seeds)):
            t = e["totals"]
            structure = t["jobs"]["exact"] and all(t[k]["fraction"] == 1.0 for k in ("tp", "pp", "dp")) and \
                t["dp_pairs"]["exact"] and t["pp_pairs"]["exact"] and t["pp_chains"]["exact"]
            total.add(t, structure, any(j.get("anomalies") for j in truth["jobs"]), secs)
            tags = [name for name, test in FEATURES if test(config)]
            for tag in tags:
                features[tag] = features.get(tag, 0) + 1
            failed = list(dict.fromkeys(failure_classes(e, truth)))  # each class once a draw
            for c in failed:
                classes.setdefault(c, []).append((seed, tags, config))
            st, fi = t["steps"], t["findings"]
            counts = (f"steps {st['matched']}/{st['truth']} found, {st['spurious']} spurious; "
                      f"findings {fi['report_matched']}/{fi['report']} right, {fi['truth_matched']}/{fi['truth']} found")
            if fi["report"]:
                per_draw[0].append(fi["report_matched"] / fi["report"])
            if fi["truth"]:
                per_draw[1].append(fi["truth_matched"] / fi["truth"])
            rows.append((seed, config, failed, counts))
            print(seed, "ok" if not failed else "FAILED: " + ", ".join(failed), flush=True)
    text = ["<!-- random sweep: made by scripts/accuracy-sweep.py --random; do not edit by hand -->",
            f"## Randomized sweep: {len(seeds)} drawn configurations (seeds {seeds[0]}–{seeds[-1]})", "",
            f"`scripts/accuracy-sweep.py --random {a.random} --first-seed {a.first_seed}` on "
            f"{time.strftime('%Y-%m-%d')} ({platform.machine()}, {os.cpu_count()} cores): each draw is a whole "
            "configuration from `llmprism-cli simulate --random SEED` (docs/SIMULATOR.md \"Random configurations\"), "
            "analysed and evaluated against its truth.", "",
            "| bar | target | measured |", "|---|---|---|",
            f"| structure exact | ≥ 99% of draws | {total.exact} of {total.runs} ({100 * total.exact / max(1, total.runs):.1f}%) |",
            f"| true steps found | ≥ 99.5% | {pct(total.found())} |",
            f"| spurious steps | 0 | {total.spurious()} |",
            f"| mean step error | ≤ 0.1% | {pct(total.mean_err(), 4)} |",
            f"| finding precision / recall | ≥ 0.95 | {total.precision():.3f} / {total.recall():.3f} |",
            f"| ... the mean of each draw's (draws with findings / with anomalies) | – | "
            f"{sum(per_draw[0]) / max(1, len(per_draw[0])):.3f} / {sum(per_draw[1]) / max(1, len(per_draw[1])):.3f} |",
            f"| clean draws with a finding | 0 | {total.clean_with_findings} of {total.clean_runs} |", "",
            "### Failures by class", "",
            "Each failed draw counts once per class it shows; the features most over-represented among a class's "
            "draws (their share there against their share of all draws) hint at the cause.", "",
            "| class | draws | over-represented features | seeds |", "|---|---|---|---|"]
    for c, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        lift = []
        for tag, n_all in features.items():
            n = sum(tag in tags for _, tags, _ in items)
            if n >= 2 and n / len(items) > 1.5 * n_all / len(seeds):
                lift.append((n / len(items) / (n_all / len(seeds)), f"{tag} ({n} of {len(items)})"))
        lift.sort(reverse=True)
        text.append(f"| {c} | {len(items)} | {', '.join(x for _, x in lift[:4]) or '–'} | "
                    f"{', '.join(str(s) for s, _, _ in items[:8])}{' …' if len(items) > 8 else ''} |")
    text += ["", "### Findings by kind", "", "| kind | anomalies | findings | found | right | precision | recall |",
             "|---|---|---|---|---|---|---|"]
    for kind, (tr, rp, tm, rm) in sorted(total.by_kind.items()):
        text.append(f"| {kind} | {tr} | {rp} | {tm} | {rm} | {frac(rm, rp):.3f} | {frac(tm, tr):.3f} |")
    text += ["<!-- /random sweep -->", ""]
    replace_section(a.out, "<!-- random sweep", "<!-- /random sweep -->", "\n".join(text))
    if a.failures_out:
        with open(a.failures_out, "w") as f:
            for seed, config, failed, counts in rows:
                if failed:
                    f.write(f"{seed}\t{'; '.join(failed)}\t{counts}\t{config}\n")
    print(f"{total.runs} draws; structure exact {total.exact}; steps found {pct(total.found())}, "
          f"{total.spurious()} spurious; findings P/R {total.precision():.3f}/{total.recall():.3f}; "
          f"clean draws with findings {total.clean_with_findings} of {total.clean_runs}; wrote {a.out}")
    return 0


# ---- real traces (--traces DIR): timeline-X.json.gz through simulate --from-trace, against the source's own
# what-if decomposition (result-X.json) ----

def run_traces(a):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for trace in sorted(f for f in os.listdir(a.traces) if f.startswith("timeline-") and f.endswith(".json.gz")):
            trial = trace[len("timeline-"):-len(".json.gz")]
            d = os.path.join(tmp, trial)
            run([a.cli, "simulate", "--from-trace", os.path.join(a.traces, trace), "--out", d])
            t0 = time.time()
            run([a.cli, "analyze", d, "--quiet", "--json", d + "/report.json"])
            secs = time.time() - t0
            run([a.cli, "evaluate", "--report", d + "/report.json", "--truth", d + "/truth.json", "--json",
                 d + "/eval.json"])
            e = json.load(open(d + "/eval.json"))["jobs"][0]
            report = json.load(open(d + "/report.json"))["jobs"][0]
            truth = json.load(open(d + "/truth.json"))["jobs"][0]
            top = report["findings"][0] if report["findings"] else None
            labelled = max(truth.get("anomalies", []), key=lambda x: x.get("saves_share", 0), default=None)
            source = ""
            result = os.path.join(a.traces, f"result-{trial}.json")
            if os.path.exists(result) and top is not None:
                r = json.load(open(result))
                by = "dp_rank" if top["kind"] == "slow_rank" else "stage" if top["kind"] == "slow_stage" else None
                key = None
                if by == "stage":
                    key = str(top.get("stage"))
                elif by == "dp_rank" and labelled and labelled.get("ip") == top.get("ip"):
                    key = max(r["blocking_decompose_by_dp_rank"], key=lambda k: r["blocking_decompose_by_dp_rank"][k])
                if key is not None and r.get(f"blocking_decompose_by_{by}") and key in r[f"blocking_decompose_by_{by}"]:
                    share = (r[f"blocking_decompose_by_{by}"][key] - 1) / r["blocking_slowdown"]
                    source = f"{share:.3f} ({by} {key}: (S_w − 1) / S)"
            shape = all(e[k]["exact"] for k in ("tp", "pp", "dp")) and e["dp_pairs"]["precision"] == 1 and \
                e["pp_chains"]["precision"] == 1
            rows.append((trial, f"TP {truth['tp']} × PP {truth['pp']} × DP {truth['dp']}",
                         "exact" if shape else "**wrong**",
                         f"{e['steps']['matched']}/{e['steps']['truth']}, {e['steps']['spurious']} spurious",
                         f"{e['findings']['precision']:.2f}/{e['findings']['recall']:.2f}",
                         f"{top['kind']} {top.get('ip', top.get('stage', ''))}" if top else "none",
                         f"{top.get('saves_share', -1):.3f}" if top else "–",
                         f"{labelled.get('saves_share', -1):.3f} ({labelled['kind']})" if labelled else "–",
                         source or "–", f"{secs:.1f}"))
            print(trial, rows[-1], flush=True)
    text = ["<!-- real traces: made by scripts/accuracy-sweep.py --traces; do not edit by hand -->",
            "## Real traces", "",
            f"`scripts/accuracy-sweep.py --traces {a.traces}` on {time.strftime('%Y-%m-%d')}: each real trace through "
            "`simulate --from-trace` (docs/SIMULATOR.md \"Real traces\"), analysed and evaluated; the top finding's "
            "cost (`saves_share`) against the simulated what-if of the labelled anomaly and against the source's own "
            "decomposition (result-X.json).", "",
            "| trace | shape | shape found | steps found | findings P/R | top finding | its cost | labelled what-if | "
            "source's decomposition | analyze s |", "|" + "---|" * 10]
    text += ["| " + " | ".join(row) + " |" for row in rows]
    text += ["<!-- /real traces -->", ""]
    replace_section(a.out, "<!-- real traces", "<!-- /real traces -->", "\n".join(text))
    return 0


def replace_section(path, start_marker, end_marker, section):
    """Replaces the marked section of `path`, or inserts it before the second top-level section."""
    old = open(path).read() if os.path.exists(path) else ""
    start, end = old.find(start_marker), old.find(end_marker)
    if start >= 0 and end > start:
        new = old[:start] + section + old[end + len(end_marker) + 1:]
    else:
        at = old.find("\n## ", old.find("\n## ") + 1) if "\n## " in old else len(old)
        # Before another section's start marker too (a marker line right above that heading): inserted between
        # the two, the new section fell inside the other one and was lost when that was next replaced.
        line = old.rfind("\n", 0, at) if at < len(old) else -1
        if line >= 0 and old[line + 1:at].startswith("<!--"):
            at = line
        new = old[:at + 1] + section + "\n" + old[at + 1:] if at < len(old) else old + "\n" + section
    with open(path, "w") as f:
        f.write(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--cli", default=os.path.join(root, "build", "app", "cli", "llmprism-cli"))
    ap.add_argument("--seeds", type=int, default=3, help="seeds per single-job preset")
    ap.add_argument("--multi-seeds", type=int, default=20, help="seeds per multi-job and anomaly preset")
    ap.add_argument("--presets", default=",".join(ALL))
    ap.add_argument("--variant-seeds", type=int, default=20, help="seeds per variant (0: none)")
    ap.add_argument("--with-large", action="store_true", help="also one run of the `large` preset (~1 GB on disk)")
    ap.add_argument("--out", default=os.path.join(root, "docs", "ACCURACY.md"))
    ap.add_argument("--check", action="store_true", help="exit with status 1 when a bar is missed")
    ap.add_argument("--first-seed", type=int, default=1,
                    help="first seed of every preset and variant (seeds never tuned on: e.g. 21)")
    ap.add_argument("--no-runs", action="store_true", help="leave out the table of every run")
    ap.add_argument("--random", type=int, default=0,
                    help="instead of the presets: N whole configurations drawn by `simulate --random SEED` from "
                         "--first-seed on, their section of --out replaced, failures by class")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="draws run side by side (--random)")
    ap.add_argument("--failures-out", help="--random: write every failed draw (seed, classes, config) to this file")
    ap.add_argument("--traces", help="instead of the presets: every timeline-X.json.gz of this folder through "
                                     "simulate --from-trace, their section of --out replaced")
    a = ap.parse_args()
    if a.random:
        return run_random(a)
    if a.traces:
        return run_traces(a)

    presets = [p for p in a.presets.split(",") if p]
    first = a.first_seed
    plan = [(p, s) for p in presets for s in range(first, first + (a.multi_seeds if p in MULTI else a.seeds))]
    plan += [(v, s) for v in VARIANTS for s in range(first, first + a.variant_seeds)]
    if a.with_large:
        plan.append(("large", 1))
    rows, tallies = [], {}
    steps_of = {}
    with tempfile.TemporaryDirectory() as tmp:
        for preset, seed in plan:
            d = os.path.join(tmp, f"{preset}-{seed}".replace(" ", "_").replace(",", "").replace("%", ""))
            extra = []
            if preset in VARIANTS:
                base = VARIANTS[preset][0]
                if base not in steps_of:  # job 0's step count, from a run of the preset itself
                    probe = os.path.join(tmp, "probe-" + base)
                    run([a.cli, "simulate", "--preset", base, "--out", probe])
                    steps_of[base] = len(json.load(open(probe + "/truth.json"))["jobs"][0]["steps"])
                extra = variant_args(preset, seed, steps_of[base])
            else:
                base = preset
            run([a.cli, "simulate", "--preset", base, "--seed", str(seed), "--out", d] + extra)
            t0 = time.time()
            run([a.cli, "analyze", d, "--quiet", "--json", d + "/report.json"])
            secs = time.time() - t0
            run([a.cli, "evaluate", "--report", d + "/report.json", "--truth", d + "/truth.json",
                 "--json", d + "/eval.json"])
            e = json.load(open(d + "/eval.json"))
            t = e["totals"]
            truth = json.load(open(d + "/truth.json"))
            has_anomalies = any(j.get("anomalies") for j in truth["jobs"])
            structure = t["jobs"]["exact"] and all(t[k]["fraction"] == 1.0 for k in ("tp", "pp", "dp")) and \
                t["dp_pairs"]["exact"] and t["pp_pairs"]["exact"] and t["pp_chains"]["exact"]
            one = Tally()
            one.add(t, structure, has_anomalies, secs)
            tallies.setdefault(preset, Tally()).add(t, structure, has_anomalies, secs)
            st, f = t["steps"], t["findings"]
            rows.append((preset, seed, f"{t['jobs']['precision']:.3f}/{t['jobs']['recall']:.3f}",
                         f"{t['tp']['exact']}/{t['pp']['exact']}/{t['dp']['exact']} of {t['tp']['of']}",
                         "yes" if structure else "**no**",
                         f"{st['matched']}/{st['truth']}", str(st["spurious"]),
                         pct(st["mean_duration_error"], 4), pct(st["max_duration_error"], 4),
                         f"{f['report']}/{f['truth']}", f"{f['precision']:.2f}/{f['recall']:.2f}",
                         "ok" if not one.failures() else "**" + "; ".join(one.failures()) + "**", f"{secs:.2f}"))
            print(preset, seed, "ok" if not one.failures() else "MISSED: " + "; ".join(one.failures()), flush=True)

    total = Tally()
    for p in tallies.values():
        total.merge(p)
    missed = total.failures()
    for p, tl in tallies.items():
        missed += [f"{p}: {m}" for m in tl.failures() if m not in missed]

    with open(a.out, "w") as f:
        f.write("# Accuracy against simulator ground truth" +
                (f" — seeds {first} and up\n\n" if first > 1 else "\n\n"))
        f.write(f"Made by `scripts/accuracy-sweep.py` on {time.strftime('%Y-%m-%d')} ({platform.machine()}, "
                f"{os.cpu_count()} cores): for each preset and seed, `llmprism-cli simulate`, `analyze`, then "
                "`evaluate` against truth.json (figures defined in docs/EVALUATION.md). Totals are micro-averaged: "
                "the counts of all runs are summed before dividing. P/R = precision/recall. Rows named with a comma are "
                "variants of a preset made with `simulate --clear-anomalies --anomaly ...` (per seed a slow rank "
                "1.3–3×, a slow link 2–8× and a pause of 40–400 ms, 1–5 steps each, at places drawn from the "
                "seed, up to 15 of a 20-step job's 18 inner steps) or `--channels`/`--loss` (records lost by the "
                "exporter); see `VARIANTS` in the script and docs/SIMULATOR.md. Seeds "
                f"{first} and up: `{' '.join(['scripts/accuracy-sweep.py'] + sys.argv[1:])}`.\n\n")
        f.write("## Bars\n\n| bar | target | measured | met |\n|---|---|---|---|\n")
        bar_rows = [
            ("structure exact (jobs, TP/PP/DP, DP groups, PP pairs, chain order)", "every run",
             f"{total.exact} of {total.runs} runs", total.exact == total.runs),
            ("true steps found", f"≥ {pct(BARS['found'], 1)}", pct(total.found()), total.found() >= BARS["found"]),
            ("spurious steps", "0", str(total.spurious()), total.spurious() == 0),
            ("mean relative step-duration error", f"≤ {pct(BARS['mean_err'], 1)}", pct(total.mean_err(), 4),
             total.mean_err() is None or total.mean_err() <= BARS["mean_err"]),
            ("max relative step-duration error", f"≤ {pct(BARS['max_err'], 0)}", pct(total.max_err, 4),
             total.max_err <= BARS["max_err"]),
            ("finding precision (runs with anomalies)", f"≥ {BARS['precision']}", f"{total.precision():.3f}",
             not total.f_truth or total.precision() >= BARS["precision"]),
            ("finding recall (runs with anomalies)", f"≥ {BARS['recall']}", f"{total.recall():.3f}",
             not total.f_truth or total.recall() >= BARS["recall"]),
            ("clean runs with a finding", "0", f"{total.clean_with_findings} of {total.clean_runs}",
             total.clean_with_findings == 0),
        ]
        for name, target, measured, ok in bar_rows:
            f.write(f"| {name} | {target} | {measured} | {'yes' if ok else '**no**'} |\n")
        f.write(f"\nRuns: {total.runs}; {total.matched_steps} of {total.truth_steps} true steps found, "
                f"{total.samples} step durations measured; {total.f_truth} injected anomalies, "
                f"{total.f_report} findings.\n")
        if missed:
            f.write("\nMissed: " + "; ".join(missed) + ".\n")

        f.write("\n## Per preset\n\n| preset | runs | structure exact | steps found | spurious | mean step err | "
                "max step err | anomalies | findings | findings P/R | clean runs with findings | "
                "slowest analyze s |\n|" + "---|" * 12 + "\n")
        for p, tl in tallies.items():
            f.write(f"| {p} | {tl.runs} | {tl.exact} | {tl.matched_steps}/{tl.truth_steps} | {tl.spurious()} | "
                    f"{pct(tl.mean_err(), 4)} | {pct(tl.max_err, 4)} | {tl.f_truth} | {tl.f_report} | "
                    f"{tl.precision():.3f}/{tl.recall():.3f} | {tl.clean_with_findings} of {tl.clean_runs} | "
                    f"{tl.seconds:.2f} |\n")
        if total.by_kind:
            f.write("\n## Findings by kind (all runs)\n\nThe report side counted by the finding's kind, the truth "
                    "side by the anomaly's kind (a `slow_switch` finding on the right leaf is right, and finds the "
                    "slow link behind it).\n\n| kind | anomalies | findings | anomalies found | findings right | "
                    "precision | recall |\n|---|---|---|---|---|---|---|\n")
            for kind, (tr, rp, tm, rm) in sorted(total.by_kind.items()):
                f.write(f"| {kind} | {tr} | {rp} | {tm} | {rm} | {frac(rm, rp):.3f} | {frac(tm, tr):.3f} |\n")

        if not a.no_runs:
            f.write("\n## Every run\n\n| preset | seed | jobs P/R | TP/PP/DP exact | structure exact | steps found | "
                    "spurious | mean step err | max step err | findings/anomalies | findings P/R | bars | analyze s |\n")
            f.write("|" + "---|" * 13 + "\n")
            for r in rows:
                f.write("| " + " | ".join(str(x) for x in r) + " |\n")
    print(f"{total.runs} runs; " + ("all bars met" if not missed else "MISSED: " + "; ".join(missed)) +
          f"; wrote {a.out}")
    return 1 if a.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
