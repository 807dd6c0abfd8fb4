#!/usr/bin/env bash
# Runs an example; the example checks its own numbers, so its exit code is the test's result.
set -euo pipefail
"$@"
