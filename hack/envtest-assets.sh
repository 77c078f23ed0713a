#!/usr/bin/env bash
# Copyright 2026 The Tollgate Authors.
# SPDX-License-Identifier: Apache-2.0
#
# envtest-assets.sh provides the kube-apiserver and etcd binaries that
# controller-runtime's envtest starts, and prints the directory holding them
# (the value for KUBEBUILDER_ASSETS) on its last line of stdout. Progress goes
# to stderr.
#
# It tries, in order:
#   1. KUBEBUILDER_ASSETS, when it is set and holds both binaries;
#   2. the cache ${XDG_CACHE_HOME:-$HOME/.cache}/tollgate/envtest/<versions>;
#   3. setup-envtest (works where its download site is reachable);
#   4. a build from Go module source into that cache: kube-apiserver from
#      k8s.io/kubernetes with every staging module replaced by its v0.x
#      release, and etcd from go.etcd.io/etcd/server/v3.
#
# Safe to run concurrently: builds hold a lock and land by atomic rename.
set -euo pipefail

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
SETUP_ENVTEST_VERSION="${SETUP_ENVTEST_VERSION:-v0.24.1}"
GO="${GO:-go}"

log() { printf '[envtest-assets] %s\n' "$*" >&2; }

has_assets() { [[ -x "$1/kube-apiserver" && -x "$1/etcd" ]]; }

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]] && has_assets "${KUBEBUILDER_ASSETS}"; then
  echo "${KUBEBUILDER_ASSETS}"
  exit 0
fi

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/tollgate/envtest"
assets="${cache_root}/k8s-${KUBERNETES_VERSION}-etcd-${ETCD_VERSION}"
if has_assets "${assets}"; then
  echo "${assets}"
  exit 0
fi

mkdir -p "${cache_root}"
exec 9>"${cache_root}/.lock"
log "Waiting for the envtest cache lock (another build may be running)"
flock 9
if has_assets "${assets}"; then
  echo "${assets}"
  exit 0
fi

# setup-envtest downloads released binaries. It fails fast where its download
# site cannot be reached; we then build from source.
if [[ "${TOLLGATE_SKIP_SETUP_ENVTEST:-}" != "true" ]]; then
  log "Trying setup-envtest ${SETUP_ENVTEST_VERSION} for Kubernetes ${KUBERNETES_VERSION#v}"
  tmpbin="$(mktemp -d "${cache_root}/setup-envtest.XXXXXX")"
  if dir="$(timeout 180 "${GO}" run "sigs.k8s.io/controller-runtime/tools/setup-envtest@${SETUP_ENVTEST_VERSION}" \
      use "${KUBERNETES_VERSION#v}" --bin-dir "${tmpbin}" -p path 2>/dev/null)" && has_assets "${dir}"; then
    staged="$(mktemp -d "${cache_root}/stage.XXXXXX")"
    cp "${dir}/kube-apiserver" "${dir}/etcd" "${staged}/"
    mv -T "${staged}" "${assets}"
    rm -rf "${tmpbin}"
    echo "${assets}"
    exit 0
  fi
  rm -rf "${tmpbin}"
  log "setup-envtest could not download the binaries; building them from Go module source"
fi

work="$(mktemp -d "${cache_root}/build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/out"
start=$(date +%s)

# --- kube-apiserver -------------------------------------------------------
log "Building kube-apiserver ${KUBERNETES_VERSION} from source (about 10 minutes cold on 2 cores)"
mkdir -p "${work}/apiserver"
(
  cd "${work}/apiserver"
  "${GO}" mod init tollgate.dev/envtest-apiserver >/dev/null 2>&1
  k8s_gomod="$("${GO}" mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  staging_version="v0.${KUBERNETES_VERSION#v1.}"
  # Every "k8s.io/x => ./staging/src/k8s.io/x" replace becomes the released module.
  {
    echo "require k8s.io/kubernetes ${KUBERNETES_VERSION}"
    echo "replace ("
    sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/src/.*#\t\1 => \1 '"${staging_version}"'#p' "${k8s_gomod}"
    echo ")"
  } >>go.mod
  cat >main.go <<'GO'
package main

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"

func main() {}
GO
  "${GO}" mod tidy >&2
  rm main.go
  CGO_ENABLED=0 "${GO}" build -trimpath -ldflags='-s -w' -o "${work}/out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
)
log "kube-apiserver built in $(( $(date +%s) - start ))s"

# --- etcd -----------------------------------------------------------------
log "Building etcd ${ETCD_VERSION} from source (about 1 minute)"
mkdir -p "${work}/etcd"
(
  cd "${work}/etcd"
  "${GO}" mod init tollgate.dev/envtest-etcd >/dev/null 2>&1
  cat >main.go <<'GO'
package main

import _ "go.etcd.io/etcd/server/v3/etcdmain"

func main() {}
GO
  "${GO}" get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
  "${GO}" mod tidy >&2
  rm main.go
  CGO_ENABLED=0 "${GO}" build -trimpath -ldflags='-s -w' -o "${work}/out/etcd" go.etcd.io/etcd/server/v3 >&2
)

mv -T "${work}/out" "${assets}"
log "envtest binaries ready in ${assets} after $(( $(date +%s) - start ))s"
echo "${assets}"
