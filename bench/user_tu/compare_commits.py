#!/usr/bin/env python3
"""Old against new: builds each user-style benchmark from a git revision and from the working
tree (the users' compiler line, as run.py), runs the two binaries alternately and prints each
one's ratios to hand-written code, so that a change's effect is read from interleaved runs on
the same machine state rather than from two tables taken at different times.

    bench/user_tu/compare_commits.py HEAD~1 --only logistic_d16 --cc clang++
    bench/user_tu/compare_commits.py main --runs 6          # every workload, both compilers
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import run as user_tu  # the workload list and the compiler line (this folder is on sys.path)


def flags_for(root):
    """run.py's FLAGS with its include paths pointing into `root`."""
    out = []
    for f in user_tu.FLAGS:
        if f.startswith("-I") and f[2:].startswith(user_tu.ROOT):
            f = "-I" + root + f[2 + len(user_tu.ROOT):]
        out.append(f)
    return out


def build(cc, root, src, extra, exe):
    cmd = [cc, *flags_for(root), *extra, os.path.join(root, "bench", "user_tu", src), "-lmvec", "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"build failed ({root}): {' '.join(cmd)}\n{r.stderr[-2000:]}")


def ratio(exe):
    p = subprocess.run([exe], capture_output=True, text=True)
    m = re.search(r"tower \S+ s, hand \S+ s, (\S+)x", p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "")
    if p.returncode != 0 or not m:
        sys.exit(f"{exe} failed: {p.stdout[-500:]}{p.stderr[-500:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rev", help="the old revision (a commit, branch or tag)")
    ap.add_argument("--only", action="append", help="row name, as in run.py (repeatable)")
    ap.add_argument("--cc", action="append", help="compiler (default: g++ and clang++)")
    ap.add_argument("--runs", type=int, default=4, help="runs of each binary, alternating")
    args = ap.parse_args()
    ccs = args.cc or ["g++", "clang++"]
    rows = [w for w in user_tu.WORKLOADS if not args.only or w[0] in args.only]
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "old")
        os.makedirs(old)
        archive = subprocess.run(["git", "-C", user_tu.ROOT, "archive", args.rev, "include", "dsl", "bench"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
        print(f"| workload | compiler | {args.rev} | working tree |")
        print("|---|---|---|---|")
        for name, src, extra in rows:
            for cc in ccs:
                exes = {}
                for label, root in (("old", old), ("new", user_tu.ROOT)):
                    exes[label] = os.path.join(tmp, f"{name}_{cc}_{label}")
                    build(cc, root, src, extra, exes[label])
                got = {"old": [], "new": []}
                for k in range(args.runs):
                    order = ("old", "new") if k % 2 == 0 else ("new", "old")
                    for label in order:
                        got[label].append(ratio(exes[label]))
                cell = {k: " ".join(f"{x:.2f}" for x in sorted(v)) for k, v in got.items()}
                print(f"| {name} | {cc} | {cell['old']} | {cell['new']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
