#!/usr/bin/env bash
# Copyright 2026 The Tollgate Authors.
# SPDX-License-Identifier: Apache-2.0
#
# demo.sh runs the local sandbox demo (`make demo`): it provides the envtest
# binaries with hack/envtest-assets.sh, saying so when they are being built
# for the first time, then runs ./test/cmd/demo with the arguments it was given.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
GO="${GO:-go}"

out="$(mktemp)"
trap 'rm -f "${out}"' EXIT
start=$(date +%s)
"${root}/hack/envtest-assets.sh" >"${out}" &
pid=$!

# A cached copy answers within a second; otherwise tell why nothing happens.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  kill -0 "${pid}" 2>/dev/null || break
  sleep 0.1
done
building=false
if kill -0 "${pid}" 2>/dev/null; then
  building=true
  echo "make demo: the envtest binaries (kube-apiserver, etcd, kube-controller-manager) and Cluster API's core manager are not cached yet:" \
    "building them once with hack/envtest-assets.sh, from Go module source where they cannot be downloaded;" \
    "a cold build took 1550s (26 minutes) on a 2-core machine, later runs start at once"
fi
wait "${pid}"
assets="$(tail -n 1 "${out}")"
if ${building}; then
  echo "make demo: envtest binaries ready in $(($(date +%s) - start))s, cached in ${assets}"
fi

KUBEBUILDER_ASSETS="${assets}" exec "${GO}" run ./test/cmd/demo "$@"
