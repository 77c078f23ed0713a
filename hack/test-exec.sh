#!/usr/bin/env bash
# Copyright 2026 The Tollgate Authors.
# SPDX-License-Identifier: Apache-2.0
#
# test-exec.sh runs a test binary for hack/test.sh (go test -exec): at the
# normal CPU priority when its name is one of TEST_PRIORITY_BINARIES (the
# suites that wait on timers one test after another, on make test's critical
# path), at the lower priority TEST_NICE (nice(1)) otherwise. The processes a
# test starts (kube-apiservers, etcd, CAPI core) inherit its priority.
set -euo pipefail
if [[ " ${TEST_PRIORITY_BINARIES:-} " == *" $(basename "$1") "* ]]; then
  exec "$@"
fi
exec nice -n "${TEST_NICE:-10}" "$@"
