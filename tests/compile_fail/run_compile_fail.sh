#!/usr/bin/env bash
# Compile-fail harness: compiles one snippet with the build's flags and checks the outcome.
#
#   run_compile_fail.sh SNIPPET.cpp
#
# The snippet's comment lines say what must happen:
#   // expect: (compiles)       the snippet must compile (the control: proves the harness can pass);
#   // expect: MESSAGE          compilation with g++ must fail, and the FIRST error line must
#                               contain MESSAGE (every "expect:" line must be contained);
#   // expect-clang: MESSAGE    the same for clang++ (tower's --config=clang), whose first line is a
#                               static_assert: its message and the requirement that names the types.
#   // flags: FLAGS             extra compiler flags, after the build's (e.g. -std=c++17).
# A snippet that starts compiling fails its test, on either compiler.
set -uo pipefail

src=$1
# Runfiles: the workspace root holds include/ (tower) and dsl/; Hana is in /usr/include, Eigen in
# /usr/include/eigen3 (Debian's libeigen3-dev).
root=${TEST_SRCDIR:-}/${TEST_WORKSPACE:-tower}
[[ -d $root/include/tower ]] || root=$(cd "$(dirname "$0")/../.." && pwd)
[[ -f $src ]] || src=$root/$src
name=$(basename "$src")

# The build's language and warning flags (.bazelrc) and tower's include paths. -fsyntax-only:
# the static checks fire during template instantiation; no code generation is needed.
flags=(-std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$root/include" -I"$root" -isystem /usr/include/eigen3)
read -ra extra <<<"$(sed -n 's|^// flags: ||p' "$src")"
flags+=("${extra[@]}")

failures=0
check() {  # check COMPILER TAG
  local cxx=$1 tag=$2 out status first e
  local -a expects=()
  mapfile -t expects < <(sed -n "s|^// ${tag}: ||p" "$src")
  if ((${#expects[@]} == 0)); then
    echo "FAIL: $name has no '// ${tag}: MESSAGE' line"
    failures=$((failures + 1))
    return
  fi
  out=$(LC_ALL=C "$cxx" "${flags[@]}" -x c++ "$src" 2>&1)
  status=$?
  if [[ ${expects[0]} == "(compiles)" ]]; then
    if [[ $status -eq 0 ]]; then
      echo "PASS [$cxx]: $name compiles"
    else
      echo "FAIL [$cxx]: $name must compile, but:"
      echo "$out" | head -n 40
      failures=$((failures + 1))
    fi
    return
  fi
  if [[ $status -eq 0 ]]; then
    echo "FAIL [$cxx]: $name compiled, but it must be rejected with: ${expects[*]}"
    failures=$((failures + 1))
    return
  fi
  first=$(echo "$out" | grep -m 1 -E '(^|: )(fatal )?error:')
  for e in "${expects[@]}"; do
    if [[ $first != *"$e"* ]]; then
      echo "FAIL [$cxx]: $name: the first error line does not contain the expected message."
      echo "  expected: $e"
      echo "  first error line: $first"
      echo "--- compiler output (head) ---"
      echo "$out" | head -n 30
      failures=$((failures + 1))
      return
    fi
  done
  echo "PASS [$cxx]: $name is rejected; first error line:"
  echo "  $first"
}

check g++ expect
if command -v clang++ >/dev/null; then
  if grep -q '^// expect: (compiles)' "$src"; then
    check clang++ expect
  else
    check clang++ expect-clang
  fi
fi
exit $((failures > 0))
