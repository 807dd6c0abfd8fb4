#!/usr/bin/env bash
# Builds a user's program (one workload, one call site: vmap(grad(energy))(R), R [2^20, 3]) with
# each compiler at the users' line and fails when any function on per-element values (the
# forward-mode numbers scalar_dual, jet2, elementwise_jet) was emitted out of line: each would be
# a call inside the per-example loop. Then runs it: the forces must match the hand-written loop.
# The build is the user's -Werror build (-Wall -Wextra): clang's "loop not vectorized" remark on a
# per-example loop inlined into the user's function would fail it (force_inline.hpp).
set -euo pipefail
root=$(pwd)
[[ -f "$root/include/tower/tower.hpp" ]] || root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for cc in g++ clang++; do
  command -v "$cc" >/dev/null || { echo "inlining_test: $cc not found"; exit 1; }
  exe="$tmp/lj_$cc"
  "$cc" -std=c++20 -O2 -march=native -DNDEBUG -Wall -Wextra -Werror -I"$root/include" -I"$root" -I"$root/dsl" -I/usr/include/eigen3 \
    "$root/bench/user_tu/lennard_jones.cpp" -lmvec -o "$exe" 2>"$tmp/build_$cc.log" || { cat "$tmp/build_$cc.log"; exit 1; }
  out_of_line=$(nm -C "$exe" | grep -E ' [tTwW] .*(scalar_dual|jet2<|elementwise_jet<)' || true)
  if [[ -n "$out_of_line" ]]; then
    echo "inlining_test: $cc left $(wc -l <<<"$out_of_line") per-element functions out of line, e.g.:"
    head -5 <<<"$out_of_line" | cut -c1-300
    fail=1
  else
    echo "inlining_test: $cc: no per-element function out of line"
  fi
  "$exe" || { echo "inlining_test: $cc: wrong forces"; fail=1; }
done
exit $fail
