#!/usr/bin/env python3
"""Builds and runs every tower benchmark (one at a time: the machine is shared), runs the same
workloads with functorch when Debian's python3-torch is installed, and prints ONE markdown table:
workload, tower static, tower runtime, hand-written, peers, functorch, ratios. Times are medians
of CPU time over --reps repetitions (CPU time, not wall time, because the machine is shared).

    scripts/bootstrap-bench && bench/run_all.py            # the table in bench/README.md
    bench/run_all.py --reps 3 --only logistic_bench         # a quicker look at one binary
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

BENCHES = ["logistic_bench", "mlp_bench", "lennard_jones_bench", "hessian_bench", "jacobian_bench", "overhead_bench"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def fmt(t):
    if t is None:
        return "—"
    for u, s in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= s:
            return f"{t / s:.3g} {u}"
    return f"{t / 1e-9:.3g} ns"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "—"


def run_bench(name, args, outdir):
    if not args.skip_build:
        subprocess.run(["bazel", "build", "--config=opt", f"//bench:{name}"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = os.path.join(outdir, name + ".json")
    cmd = [os.path.join(ROOT, "bazel-bin", "bench", name), f"--benchmark_repetitions={args.reps}",
           "--benchmark_report_aggregates_only=true", f"--benchmark_min_time={args.min_time}",
           f"--benchmark_out={out}", "--benchmark_out_format=json"]
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        data = json.load(f)
    res = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name", "median") != "median" or b.get("error_occurred"):
            continue
        workload, variant = b["run_name"].split("/", 1)
        res.setdefault(workload, {})[variant] = b["cpu_time"] * UNIT[b["time_unit"]]
    return res


def run_functorch():
    py = "/usr/bin/python3"
    try:
        p = subprocess.run([py, os.path.join(ROOT, "bench", "functorch_bench.py")], capture_output=True, text=True, check=True)
        return json.loads(p.stdout.strip().splitlines()[-1])["times"]
    except Exception as e:  # no torch: the column stays empty
        print(f"run_all: functorch not run ({e})", file=sys.stderr)
        return {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--no-functorch", action="store_true")
    args = ap.parse_args()

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in BENCHES:
            if args.only and name not in args.only:
                continue
            results.update(run_bench(name, args, tmp))
    ft = {} if args.no_functorch else run_functorch()

    print("| workload | tower static | tower static, fixed | tower static, fused | tower static, batched | tower runtime | hand-written | static / hand | fixed / hand | fused / hand | runtime / static | peers (÷ hand) | functorch | functorch / static |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for workload, v in results.items():
        hand, st, rt = v.get("hand"), v.get("tower_static"), v.get("tower_runtime")
        batched, fused, fixed = v.get("tower_static_batched"), v.get("tower_static_fused"), v.get("tower_static_fixed")
        peers = ", ".join(f"{k} {fmt(t)} ({ratio(t, hand)})" for k, t in sorted(v.items())
                          if not k.startswith(("tower", "hand")))
        f = ft.get(workload)
        print(f"| {workload} | {fmt(st)} | {fmt(fixed)} | {fmt(fused)} | {fmt(batched)} | {fmt(rt)} | {fmt(hand)} | {ratio(st, hand)} | {ratio(fixed, hand)} | {ratio(fused, hand)} | {ratio(rt, st)} | "
              f"{peers or '—'} | {fmt(f)} | {ratio(f, st)} |")
    others = [(w, k, t, v.get("hand")) for w, v in results.items() for k, t in sorted(v.items())
              if k.startswith("hand_") or k.startswith("tower") and k not in ("tower_static", "tower_static_fixed", "tower_static_fused", "tower_static_batched", "tower_runtime")]
    if others:
        print()
        for w, k, t, hand in others:
            print(f"- {w} / {k}: {fmt(t)} ({ratio(t, hand)} hand-written)")


if __name__ == "__main__":
    main()
