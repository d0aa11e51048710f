#!/usr/bin/env bash
# (sourced by the cluster tests, not run on its own)
# Helpers for cluster tests: run commands on the fixture minicluster and assert on their output.
set -euo pipefail
: "${CNET_MINICLUSTER:?run through ctest}" "${CNET_BIN:?run through ctest}"

fail() { echo "FAIL: $*" >&2; exit 1; }
on_cluster() { "$CNET_MINICLUSTER" run -- timeout 120 "$@"; }
expect_eq() { [[ $1 == "$2" ]] || fail "$3: expected '$2', got '$1'"; }
