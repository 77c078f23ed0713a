#!/usr/bin/env bash
# Copyright 2026 The Tollgate Authors.
# SPDX-License-Identifier: Apache-2.0
#
# test.sh runs every Go test of the module against envtest binaries provided by
# hack/envtest-assets.sh, keeps the verbose log in out/test.log, prints each
# package's result and failures, and ends with a summary line.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
GO="${GO:-go}"
GO_TEST_FLAGS="${GO_TEST_FLAGS:-}"

KUBEBUILDER_ASSETS="$("${root}/hack/envtest-assets.sh")"
export KUBEBUILDER_ASSETS
echo "Using envtest binaries from ${KUBEBUILDER_ASSETS}"

mkdir -p out
log="out/test.log"
rc=0
# shellcheck disable=SC2086 # GO_TEST_FLAGS is a list of flags.
"${GO}" test ${GO_TEST_FLAGS} -count=1 -timeout 30m -v ./... >"${log}" 2>&1 || rc=$?

# A short fuzz run of the validation entry points: it must find no panic.
# go test fuzzes one target per run.
FUZZ_TIME="${FUZZ_TIME:-10s}"
if [[ "${FUZZ_TIME}" != "0" ]]; then
  for target in FuzzValidatePolicy FuzzValidateTalosUpgrade FuzzValidateClusterHealthCheck; do
    echo "Fuzzing ${target} for ${FUZZ_TIME}"
    for attempt in 1 2; do
      if "${GO}" test -run='^$' -fuzz="^${target}\$" -fuzztime="${FUZZ_TIME}" ./webhooks/ >>"${log}" 2>&1; then
        break
      fi
      # A finding is written to testdata/fuzz. Without one, the failure is
      # the fuzzer's own "context deadline exceeded" when -fuzztime ends in
      # the middle of an input on a loaded machine: run it once more.
      if [[ -d "webhooks/testdata/fuzz/${target}" || ${attempt} -eq 2 ]]; then
        echo "--- FAIL: ${target} (fuzzing failed; see ${log} and webhooks/testdata/fuzz/${target})" | tee -a "${log}"
        rc=1
        break
      fi
      echo "Fuzzing ${target} stopped without a finding; running it again" | tee -a "${log}"
    done
  done
fi

# Package results and the failures, without the verbose noise.
grep -E '^(ok|FAIL|---- FAIL|--- FAIL|panic:)|^\s+--- FAIL|\[FAIL\]|_test\.go:[0-9]+:' "${log}" | grep -v '^ok .*no test files' || true

passed=$(grep -cE '^\s*--- PASS' "${log}" || true)
failed=$(grep -cE '^\s*--- FAIL' "${log}" || true)
skipped=$(grep -cE '^\s*--- SKIP' "${log}" || true)
if [[ ${rc} -ne 0 && ${failed} -eq 0 ]]; then
  # A build failure or a panic fails no named test; show the end of the log.
  tail -50 "${log}"
  failed=1
fi
echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped" | tee out/test-summary.txt
exit "${rc}"
