#!/usr/bin/env python3
"""Builds every user-style benchmark (bench/user_tu/*.cpp: one workload and one call site per
program, hand-written code in the same binary) with g++ and clang at the users' line, runs each
and prints one markdown table of ratios to hand-written code (medians of interleaved samples).

    bench/user_tu/run.py                      # every workload, both compilers
    bench/user_tu/run.py --only lennard_jones --cc g++
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAGS = ["-std=c++20", "-O2", "-march=native", "-DNDEBUG",
         "-I" + os.path.join(ROOT, "include"), "-I" + ROOT, "-I" + os.path.join(ROOT, "dsl"), "-I/usr/include/eigen3"]
# (row name, source, extra flags)
WORKLOADS = [
    ("lennard_jones", "lennard_jones.cpp", []),
    ("lennard_jones_xyz", "lennard_jones_xyz.cpp", []),
    ("logistic_d16", "logistic.cpp", ["-DLOGISTIC_D=16"]),
    ("logistic_d256", "logistic.cpp", ["-DLOGISTIC_D=256"]),
    ("mlp_32_64_1", "mlp.cpp", []),
    ("hessian_r8", "hessian_r8.cpp", []),
    ("hessian_r8_nested", "hessian_r8.cpp", ["-DNESTED"]),
    ("jacrev_64", "jacobian64.cpp", []),
    ("jacfwd_64", "jacobian64.cpp", ["-DJACFWD"]),
    ("grad_chain10_double", "chain_grad.cpp", []),
    ("vmap_grad_batch1", "vmap_grad_batch1.cpp", []),
    ("vmap_grad_batch1_runtime", "vmap_grad_batch1.cpp", ["-DRUNTIME"]),
    ("lennard_jones_runtime", "lennard_jones.cpp", ["-DRUNTIME"]),
    ("hessian_r8_runtime", "hessian_r8.cpp", ["-DRUNTIME"]),
    ("logistic_d16_runtime", "logistic.cpp", ["-DLOGISTIC_D=16", "-DRUNTIME"]),
    ("logistic_d256_runtime", "logistic.cpp", ["-DLOGISTIC_D=256", "-DRUNTIME"]),
    ("mlp_32_64_1_runtime", "mlp.cpp", ["-DRUNTIME"]),
    ("jacrev_64_runtime", "jacobian64.cpp", ["-DRUNTIME"]),
    ("jacfwd_64_runtime", "jacobian64.cpp", ["-DJACFWD", "-DRUNTIME"]),
    ("grad_chain10_double_runtime", "chain_grad.cpp", ["-DRUNTIME"]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", help="row name (repeatable)")
    ap.add_argument("--cc", action="append", help="compiler (default: g++ and clang++)")
    args = ap.parse_args()
    ccs = args.cc or ["g++", "clang++"]
    rows = [w for w in WORKLOADS if not args.only or w[0] in args.only]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, src, extra in rows:
            for cc in ccs:
                exe = os.path.join(tmp, f"{name}_{cc}")
                t0 = time.time()
                b = subprocess.run([cc, *FLAGS, *extra, os.path.join(os.path.dirname(__file__), src), "-lmvec", "-o", exe],
                                   capture_output=True, text=True)
                build = time.time() - t0
                p = subprocess.run([exe], capture_output=True, text=True) if b.returncode == 0 else b
                line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr.strip()
                m = re.search(r"tower (\S+) s, hand (\S+) s, (\S+)x", line)
                out[(name, cc)] = (m.group(3) + "x" if m and p.returncode == 0 else "FAIL: " + line, build)
                print(f"{name} [{cc}]: {line} (built in {build:.0f} s)", file=sys.stderr)
    print("| workload | " + " | ".join(f"{cc} -O2 -march=native" for cc in ccs) + " | build time (s) |")
    print("|---|" + "---|" * len(ccs) + "---|")
    for name, _, _ in rows:
        cells = [out[(name, cc)][0] for cc in ccs]
        builds = "/".join(f"{out[(name, cc)][1]:.0f}" for cc in ccs)
        print(f"| {name} | " + " | ".join(cells) + f" | {builds} |")
    return 1 if any(v[0].startswith("FAIL") for v in out.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
