#!/usr/bin/env bash
# Runs a program on 2 MPI ranks (as CI does: as root, on however many cores there are) under a
# time limit, so that ranks that deadlock fail the test instead of stalling the suite.
#   tests/mpi_run.sh [--no-leak-check] BINARY [ARGS...]
# LeakSanitizer (bazel test's --config=asan) cannot tell Open MPI's allocations from tower's
# once MPI_Finalize has unloaded its components, so its check at exit is off here: a test's
# main checks for leaks itself before MPI_Finalize (tests/mpi_main.cpp), and --no-leak-check
# turns that off too (examples, whose main is the user's). Open MPI's own small leaks in
# MPI_Init are suppressed (mpi_lsan.supp).
set -euo pipefail
export LSAN_OPTIONS="suppressions=$(dirname "$0")/mpi_lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
if [[ "${1:-}" == "--no-leak-check" ]]; then
  shift
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
binary="$1"
shift
exec timeout -k 10 120 mpirun -np 2 --allow-run-as-root --oversubscribe "$binary" "$@"
