#!/usr/bin/env python3
"""Runs one benchmark binary from two checkouts in turn (old, new, old, new, ...), each with
interleaved repetitions, and prints per variant the medians, new/old, and new/hand-written.
The way to tell a change from the shared machine's drift: both binaries see the same minutes.
bazel-bin follows the last build's configuration: build both with --config=opt just before.

    git worktree add /tmp/old <commit> && (cd /tmp/old && bazel build --config=opt //bench:jacobian_bench)
    bazel build --config=opt //bench:jacobian_bench
    bench/compare.py jacobian_bench --old /tmp/old --filter 'hand|tower' --reps 10 --rounds 2
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("bench")
    p.add_argument("--old", required=True, help="the other checkout (its bazel-bin holds the built binary)")
    p.add_argument("--new", default=ROOT)
    p.add_argument("--filter", default=".")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--min-time", default="0.03")
    a = p.parse_args()
    times = {}
    out = os.path.join(tempfile.mkdtemp(), "run.json")
    for _ in range(a.rounds):
        for tag, root in (("old", a.old), ("new", a.new)):
            subprocess.run([os.path.join(root, "bazel-bin", "bench", a.bench), f"--benchmark_filter={a.filter}",
                            f"--benchmark_repetitions={a.reps}", "--benchmark_enable_random_interleaving=true",
                            f"--benchmark_min_time={a.min_time}", f"--benchmark_out={out}", "--benchmark_out_format=json"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            with open(out) as f:
                for b in json.load(f)["benchmarks"]:
                    if b.get("run_type") == "iteration":
                        times.setdefault((b["run_name"], tag), []).append(b["cpu_time"])
    names = sorted({n for n, _ in times})
    for n in names:
        old, new = times.get((n, "old")), times.get((n, "new"))
        line = f"{n:48s}"
        line += f" old {statistics.median(old):10.4g}" if old else " old        —"
        line += f" new {statistics.median(new):10.4g}" if new else " new        —"
        if old and new:
            line += f"  new/old {statistics.median(new) / statistics.median(old):.2f}"
        hand = times.get((n.split("/")[0] + "/hand", "new"))
        if hand and new and not n.endswith("/hand"):
            line += f"  new/hand {statistics.median(new) / statistics.median(hand):.2f}x (min {min(new) / min(hand):.2f}x)"
        print(line)


if __name__ == "__main__":
    main()
