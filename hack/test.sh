#!/usr/bin/env bash
# Copyright 2026 The Tollgate Authors.
# SPDX-License-Identifier: Apache-2.0
#
# test.sh runs every Go test of the module against envtest binaries provided by
# hack/envtest-assets.sh, then a short fuzz run of the validation entry points.
# gotestsum prints one line per package as it finishes (and the output of the
# tests that fail); the run is kept as test2json events in out/test.json, as a
# verbose log in out/test.log and as a JUnit report in out/junit.xml. It ends
# with a summary line, also written to out/test-summary.txt, counted from the
# same events that decide the exit code; the skipped tests follow it there, each
# with its skip message, so that no skip is silent.
#
# GO_TEST_FLAGS (the Makefile's: -race -vet=off) go to every go test. The race
# detector needs cgo and a C compiler: where `go env CGO_ENABLED` is not 1 or
# `go env CC` is not on PATH, -race is left out, and the output and the summary
# file say so. TEST_PACKAGES (./... by default) narrows the test run, for
# example to try this script; FUZZ_TIME=0 leaves out the fuzz run.
#
# TEST_NO_RACE_PACKAGES (the Makefile's: the suites that build whole worlds,
# test/integration, test/soak and test/demo) run without -race, in a go test of
# their own beside the others': most of their CPU is spent by the processes they
# start (apiservers, etcd, CAPI core, manager replicas), which the race
# detector does not instrument, and the code of Tollgate they run is run with
# -race by the suites of its own packages (the engine's, the
# ClusterHealthCheck's, the ReleaseChannel's, the webhooks'). Without it their
# test process spends about a fifth less CPU. The Makefile's also names the
# krew release tool, which runs no goroutine and whose test, under -race, spent
# most of its CPU compressing the plugin. TEST_FIRST_PACKAGES (the
# Makefile's: the longest suites) are started first. TEST_RACE_PACKAGES_AT_ONCE
# (go test -p of the -race run when both run; the Makefile's is 3 on 2 cores)
# lets it run one package more than the cores: after its long suites come some
# fifty small packages, each linked with -race and run, which two at a time
# left a 2-core machine 20 to 40% idle for the last seven minutes (make test
# 1,513s with 2, 1,381s and 1,527s with 3: within the noise of a run).
# TEST_NO_RACE_PACKAGES_AT_ONCE (the Makefile's is 3) is the same for the
# run without -race, which runs at the lower priority (below).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
GO="${GO:-go}"
GO_TEST_FLAGS="${GO_TEST_FLAGS:-}"
GOTESTSUM="${GOTESTSUM:-gotestsum}"
FUZZ_TIME="${FUZZ_TIME:-10000x}"
FUZZ_MINIMIZE_TIME="${FUZZ_MINIMIZE_TIME:-100x}"
TEST_PACKAGES="${TEST_PACKAGES:-./...}"
TEST_NO_RACE_PACKAGES="${TEST_NO_RACE_PACKAGES:-}"
TEST_FIRST_PACKAGES="${TEST_FIRST_PACKAGES:-}"
TEST_RACE_PACKAGES_AT_ONCE="${TEST_RACE_PACKAGES_AT_ONCE:-}"
TEST_PRIORITY_PACKAGES="${TEST_PRIORITY_PACKAGES:-}"
TEST_NO_RACE_PACKAGES_AT_ONCE="${TEST_NO_RACE_PACKAGES_AT_ONCE:-}"
TEST_NICE="${TEST_NICE:-10}"
TEST_GOGC="${TEST_GOGC:-}"

# The race detector needs cgo, and cgo a C compiler (gcc by default).
race_note=""
if [[ " ${GO_TEST_FLAGS} " == *" -race "* ]]; then
  cgo="$("${GO}" env CGO_ENABLED)"
  cc="$("${GO}" env CC)"
  why=""
  fix="install gcc (or set CC to a C compiler) to run them with it"
  if [[ "${cgo}" != "1" && -n "${CGO_ENABLED:-}" ]]; then
    why="cgo is off (CGO_ENABLED=${CGO_ENABLED} is set)"
    fix="unset CGO_ENABLED, with gcc installed, to run them with it"
  elif [[ "${cgo}" != "1" ]]; then
    why="cgo is off: Go found no C compiler (go env CC is \"${cc}\")"
  elif ! command -v "${cc%% *}" >/dev/null 2>&1; then
    why="cgo's C compiler \"${cc%% *}\" (go env CC) is not on PATH"
  fi
  if [[ -n "${why}" ]]; then
    flags=()
    for f in ${GO_TEST_FLAGS}; do
      [[ "${f}" == "-race" ]] || flags+=("${f}")
    done
    GO_TEST_FLAGS="${flags[*]}"
    # Without a C compiler no package can be built with cgo on.
    export CGO_ENABLED=0
    race_note="WARNING: the tests ran WITHOUT the race detector (-race): ${why}; ${fix}"
    echo "WARNING: running the tests WITHOUT the race detector (-race): ${why}; ${fix}"
  fi
fi

# TEST_GOGC (the Makefile's: 400) is the GOGC of every process of the run,
# the kube-apiservers, etcd and CAPI core the tests start among them: they
# inherit it from the test binaries, which inherit it from go test. The run is
# bound by its CPU, and a fifth of a test kube-apiserver's was its garbage
# collector's (a CPU profile of the management kube-apiserver of three CAPI
# core tests: 18% in its mark workers). With 400 each process collects a
# quarter as often and holds up to five times its live heap instead of twice.
# On 2026-12-08 the tests' processes spent 1,417 CPU-seconds instead of
# 1,635 and make test took 979s instead of 1,081s, while the machine kept at
# least 11 of its 24 GiB available. Empty: each process's GOGC from the
# environment.
if [[ -n "${TEST_GOGC}" ]]; then
  export GOGC="${TEST_GOGC}"
fi

KUBEBUILDER_ASSETS="$("${root}/hack/envtest-assets.sh")"
export KUBEBUILDER_ASSETS
echo "Using envtest binaries from ${KUBEBUILDER_ASSETS}"

mkdir -p out
rm -f out/test.json out/test-norace.json out/fuzz-*.json out/test.log out/junit.xml out/test-summary.txt
rc=0
# TEST_PRIORITY_PACKAGES (the Makefile's: the engine suite) keep the normal
# CPU priority; every other test binary, the run without -race and the fuzz
# run get a lower one (nice -n TEST_NICE). make test is bound by its CPU,
# and the engine suite, which runs its tests one after another and waits on
# reboots and health-check intervals, ended last: sharing the CPU equally,
# its waits ended late (981s in a run where it needs about 800 alone), while
# the others, which do work rather than wait, lose nothing to a lower
# priority but its share. The go commands that compile and link stay at the
# normal priority: the engine suite's binary is among what they build.
# Empty: every test at the normal priority.
priority_binaries=""
if [[ -n "${TEST_PRIORITY_PACKAGES}" ]]; then
  # shellcheck disable=SC2086 # Lists of packages.
  for p in $("${GO}" list ${TEST_PRIORITY_PACKAGES}); do
    priority_binaries+="${p##*/}.test "
  done
fi
export TEST_PRIORITY_BINARIES="${priority_binaries}" TEST_NICE

# run_tests EVENTS [--low] ARGS... runs go test ARGS through gotestsum,
# keeping the test2json events in the file EVENTS; with --low, at the lower
# priority when TEST_PRIORITY_PACKAGES are set, and otherwise each test
# binary at the priority hack/test-exec.sh gives it.
run_tests() {
  local jsonfile=$1
  shift
  local prefix=() exec=()
  if [[ -n "${priority_binaries}" ]]; then
    if [[ "${1:-}" == "--low" ]]; then
      prefix=(nice -n "${TEST_NICE}")
    else
      exec=(-exec "${root}/hack/test-exec.sh")
    fi
  fi
  [[ "${1:-}" == "--low" ]] && shift
  GOTESTSUM_FORMAT_ICONS=text "${prefix[@]}" "${GOTESTSUM}" --format pkgname-and-test-fails --format-hide-empty-pkg \
    --jsonfile "${jsonfile}" -- "${exec[@]}" "$@"
}

# go test starts the packages in the order it is given them, two at a time:
# the longest (TEST_FIRST_PACKAGES) go first, so that none of them starts last
# and runs alone while the other slot is idle.
# shellcheck disable=SC2086 # Lists of packages.
mapfile -t all < <("${GO}" list ${TEST_PACKAGES})
first=()
if [[ -n "${TEST_FIRST_PACKAGES}" ]]; then
  # shellcheck disable=SC2086 # Lists of packages.
  mapfile -t first < <("${GO}" list ${TEST_FIRST_PACKAGES} | grep -Fxf <(printf '%s\n' "${all[@]}") || true)
fi
mapfile -t all < <({ printf '%s\n' "${first[@]}" && printf '%s\n' "${all[@]}" | grep -Fvxf <(printf '%s\n' "${first[@]}" ""); } | grep -v '^$' || true)

# A short fuzz run of the validation entry points: it must find no panic.
# go test fuzzes one target per run. FUZZ_TIME is a number of executions, not
# a duration: Go's fuzz coordinator (before Go 1.27, go.dev/issue/75804) can
# report the -fuzztime deadline itself as the target's failure, "context
# deadline exceeded", with no input; a loaded machine makes that likelier.
# Each input that adds coverage is minimized by a worker, which reports no
# executions meanwhile (the "0/sec" lines): -fuzzminimizetime bounds that work
# (Go's default is 60s per input, longer than the whole run), so the workers
# keep fuzzing. It runs beside the tests, not after them: the two longest
# suites wait on reboots and health-check intervals for most of their 15
# minutes, and the fuzz run's 90s after them was the run's last part.
#
# Each run starts from the seeds (f.Add and webhooks/testdata/fuzz), as on a
# fresh CI machine, not from the inputs go keeps in its build cache: go first
# runs every input of that cache once ("gathering baseline coverage"), and it
# gains the new ones of every run. After some hundred runs on one machine
# that was 641 inputs and 19 of FuzzValidatePolicy's 26s; from the seeds the
# three targets take about 80 CPU-seconds, from that cache 150. The cache of
# this run (-test.fuzzcachedir, which go test passes itself before the
# arguments that follow -args) is a directory of its own, removed after it;
# an input that fails is written to webhooks/testdata/fuzz as ever. Fuzzing
# by hand (go test -fuzz) keeps using go's cache.
fuzz() {
  local status=0 cache
  cache="$(mktemp -d)"
  for target in FuzzValidatePolicy FuzzValidateTalosUpgrade FuzzValidateClusterHealthCheck; do
    echo "Fuzzing ${target}: ${FUZZ_TIME}"
    if ! run_tests "out/fuzz-${target}.json" --low -run='^$' -fuzz="^${target}\$" -fuzztime="${FUZZ_TIME}" \
      -fuzzminimizetime="${FUZZ_MINIMIZE_TIME}" ./webhooks/ -args -test.fuzzcachedir="${cache}"; then
      echo "Fuzzing ${target} failed: see out/test.log and webhooks/testdata/fuzz/${target}"
      status=1
    fi
  done
  rm -rf "${cache}"
  return "${status}"
}

# -timeout is a backstop for a package that hangs, not a measure of speed: on
# a loaded 2-core machine (load average 50) the race-detected engine suite
# took more than 30 minutes of a CI run's 90.
#
# The packages TEST_NO_RACE_PACKAGES names run without -race, at the same
# time as the others: two go test commands, each running two packages at once,
# so that the longest package of each overlaps.
norace=()
race=("${all[@]}")
if [[ " ${GO_TEST_FLAGS} " == *" -race "* && -n "${TEST_NO_RACE_PACKAGES}" ]]; then
  # shellcheck disable=SC2086 # Lists of packages.
  mapfile -t nr < <("${GO}" list ${TEST_NO_RACE_PACKAGES})
  mapfile -t norace < <(printf '%s\n' "${all[@]}" | grep -Fxf <(printf '%s\n' "${nr[@]}") || true)
  mapfile -t race < <(printf '%s\n' "${all[@]}" | grep -Fvxf <(printf '%s\n' "${norace[@]}" "") || true)
fi
fuzz_pid=""
if [[ "${FUZZ_TIME}" != "0" && "${FUZZ_TIME}" != "0x" ]]; then
  fuzz &
  fuzz_pid=$!
fi
if [[ ${#norace[@]} -eq 0 ]]; then
  # shellcheck disable=SC2086 # GO_TEST_FLAGS is a list.
  run_tests out/test.json ${GO_TEST_FLAGS} -count=1 -timeout 60m "${race[@]}" || rc=$?
else
  flags=()
  for f in ${GO_TEST_FLAGS}; do
    [[ "${f}" == "-race" ]] || flags+=("${f}")
  done
  echo "Running ${#race[@]} packages with -race and, at the same time, ${#norace[@]} without it (TEST_NO_RACE_PACKAGES: ${TEST_NO_RACE_PACKAGES})"
  pids=()
  if [[ ${#race[@]} -gt 0 ]]; then
    # shellcheck disable=SC2086 # GO_TEST_FLAGS is a list.
    run_tests out/test.json ${GO_TEST_FLAGS} ${TEST_RACE_PACKAGES_AT_ONCE:+-p "${TEST_RACE_PACKAGES_AT_ONCE}"} -count=1 -timeout 60m "${race[@]}" &
    pids+=($!)
  fi
  run_tests out/test-norace.json --low "${flags[@]}" ${TEST_NO_RACE_PACKAGES_AT_ONCE:+-p "${TEST_NO_RACE_PACKAGES_AT_ONCE}"} -count=1 -timeout 60m "${norace[@]}" &
  pids+=($!)
  for pid in "${pids[@]}"; do
    wait "${pid}" || rc=$?
  done
fi
if [[ -n "${fuzz_pid}" ]]; then
  wait "${fuzz_pid}" || rc=1
fi

# One verbose log and one JUnit report of every run, replayed from the events.
events=()
for f in out/test.json out/test-norace.json out/fuzz-*.json; do
  [[ -f "${f}" ]] && events+=("${f}")
done
"${GOTESTSUM}" --format standard-verbose --junitfile out/junit.xml --raw-command -- cat "${events[@]}" >out/test.log 2>&1 || true

# Count the tests (subtests and examples included) from the events: a test
# that failed anywhere fails the run, whatever the exit codes said.
count() { cat "${events[@]}" | grep -cE "\"Action\":\"$1\",\"Package\":\"[^\"]*\",\"Test\":" || true; }
passed=$(count pass)
failed=$(count fail)
skipped=$(count skip)
if [[ ${rc} -ne 0 && ${failed} -eq 0 ]]; then
  # A build failure or a panic fails no named test; show the end of the log.
  tail -50 out/test.log
  failed=1
fi
if [[ ${rc} -eq 0 && ${failed} -ne 0 ]]; then
  echo "A test failed in a run that exited 0: failing the run"
  rc=1
fi
# The summary line stays alone on the first line of out/test-summary.txt, in
# this form: CI reads it. What the tests did not check follows: every skipped
# test with its skip message, and a run without the race detector.
{
  echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
  if [[ ${skipped} -ne 0 ]]; then
    "${GO}" run ./hack/tools/testskips "${events[@]}" || echo "skipped: ${skipped} tests, listed in out/test.log (=== Skipped)"
  fi
  if [[ -n "${race_note}" ]]; then
    echo "${race_note}"
  fi
  if [[ ${#norace[@]} -gt 0 ]]; then
    echo "Without -race, by design (TEST_NO_RACE_PACKAGES): ${norace[*]#github.com/tollgate-dev/tollgate/}"
  fi
} | tee out/test-summary.txt
exit "${rc}"
