#!/usr/bin/env bash
# Copyright 2026 The Tollgate Authors.
# SPDX-License-Identifier: Apache-2.0
#
# envtest-assets.sh provides the binaries Tollgate's tests start: the
# kube-apiserver and etcd of controller-runtime's envtest, and the
# kube-controller-manager that runs the real Job controller (with the garbage
# collector and the TTL-after-finished controller) against a workload
# control plane. It prints the directory holding the three (the value for
# KUBEBUILDER_ASSETS) on its last line of stdout. Progress goes to stderr.
#
# It tries, in order:
#   1. KUBEBUILDER_ASSETS, when it is set and holds all three binaries;
#   2. the cache ${XDG_CACHE_HOME:-$HOME/.cache}/tollgate/envtest/<versions>;
#   3. for kube-apiserver and etcd, setup-envtest (works where its download
#      site is reachable; it has no kube-controller-manager);
#   4. a build from Go module source into that cache: kube-apiserver and
#      kube-controller-manager from k8s.io/kubernetes with every staging
#      module replaced by its v0.x release, the same source for both, and
#      etcd from go.etcd.io/etcd/server/v3.
#
# Safe to run concurrently: builds hold a lock and land by atomic rename.
set -euo pipefail

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
SETUP_ENVTEST_VERSION="${SETUP_ENVTEST_VERSION:-v0.24.1}"
GO="${GO:-go}"

log() { printf '[envtest-assets] %s\n' "$*" >&2; }

has_envtest() { [[ -x "$1/kube-apiserver" && -x "$1/etcd" ]]; }
has_assets() { has_envtest "$1" && [[ -x "$1/kube-controller-manager" ]]; }

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

work="$(mktemp -d "${cache_root}/build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
start=$(date +%s)

# kubernetes_module DIR PACKAGE makes DIR a Go module that requires
# k8s.io/kubernetes at KUBERNETES_VERSION, with every
# "k8s.io/x => ./staging/src/k8s.io/x" replace of its go.mod turned into the
# released module k8s.io/x v0.<minor>.<patch>, and whose dependencies are
# those of PACKAGE.
kubernetes_module() {
  local dir=$1 pkg=$2
  mkdir -p "${dir}"
  (
    cd "${dir}"
    "${GO}" mod init "tollgate.dev/envtest-$(basename "${dir}")" >/dev/null 2>&1
    local k8s_gomod staging_version
    k8s_gomod="$("${GO}" mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
    staging_version="v0.${KUBERNETES_VERSION#v1.}"
    {
      echo "require k8s.io/kubernetes ${KUBERNETES_VERSION}"
      echo "replace ("
      sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/src/.*#\t\1 => \1 '"${staging_version}"'#p' "${k8s_gomod}"
      echo ")"
    } >>go.mod
    printf 'package main\n\nimport _ "%s"\n\nfunc main() {}\n' "${pkg}" >main.go
    "${GO}" mod tidy >&2
    rm main.go
  )
}

# --- kube-apiserver and etcd ------------------------------------------------
if ! has_envtest "${assets}"; then
  # setup-envtest downloads released binaries. It fails fast where its
  # download site cannot be reached; we then build from source.
  if [[ "${TOLLGATE_SKIP_SETUP_ENVTEST:-}" != "true" ]]; then
    log "Trying setup-envtest ${SETUP_ENVTEST_VERSION} for Kubernetes ${KUBERNETES_VERSION#v}"
    tmpbin="$(mktemp -d "${cache_root}/setup-envtest.XXXXXX")"
    if dir="$(timeout 180 "${GO}" run "sigs.k8s.io/controller-runtime/tools/setup-envtest@${SETUP_ENVTEST_VERSION}" \
        use "${KUBERNETES_VERSION#v}" --bin-dir "${tmpbin}" -p path 2>/dev/null)" && has_envtest "${dir}"; then
      mkdir -p "${work}/out"
      cp "${dir}/kube-apiserver" "${dir}/etcd" "${work}/out/"
    else
      log "setup-envtest could not download the binaries; building them from Go module source"
    fi
    rm -rf "${tmpbin}"
  fi
fi
if ! has_envtest "${assets}" && ! has_envtest "${work}/out"; then
  mkdir -p "${work}/out"
  log "Building kube-apiserver ${KUBERNETES_VERSION} from source (about 10 minutes cold on 2 cores)"
  kubernetes_module "${work}/apiserver" k8s.io/kubernetes/cmd/kube-apiserver/app
  (cd "${work}/apiserver" && CGO_ENABLED=0 "${GO}" build -trimpath -ldflags='-s -w' -o "${work}/out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2)
  log "kube-apiserver built in $(( $(date +%s) - start ))s"

  log "Building etcd ${ETCD_VERSION} from source (about 1 minute)"
  etcd_start=$(date +%s)
  mkdir -p "${work}/etcd"
  (
    cd "${work}/etcd"
    "${GO}" mod init tollgate.dev/envtest-etcd >/dev/null 2>&1
    printf 'package main\n\nimport _ "go.etcd.io/etcd/server/v3/etcdmain"\n\nfunc main() {}\n' >main.go
    "${GO}" get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
    "${GO}" mod tidy >&2
    rm main.go
    CGO_ENABLED=0 "${GO}" build -trimpath -ldflags='-s -w' -o "${work}/out/etcd" go.etcd.io/etcd/server/v3 >&2
  )
  log "etcd built in $(( $(date +%s) - etcd_start ))s"
fi
if ! has_envtest "${assets}"; then
  # The directory lands whole, by one rename: a reader sees all of it or
  # none of it.
  mv -T "${work}/out" "${assets}"
fi

# --- kube-controller-manager ------------------------------------------------
# No release of it can be downloaded with setup-envtest: it is always built,
# from the same k8s.io/kubernetes module as kube-apiserver, and lands in the
# same directory by an atomic rename of the file.
log "Building kube-controller-manager ${KUBERNETES_VERSION} from source (about 5 minutes after kube-apiserver, whose packages it mostly shares; 10 minutes alone on 2 cores)"
kcm_start=$(date +%s)
kubernetes_module "${work}/controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager/app
(cd "${work}/controller-manager" && CGO_ENABLED=0 "${GO}" build -trimpath -ldflags='-s -w' \
  -o "${work}/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager >&2)
mv "${work}/kube-controller-manager" "${assets}/kube-controller-manager"
log "kube-controller-manager built in $(( $(date +%s) - kcm_start ))s"

log "envtest binaries ready in ${assets} after $(( $(date +%s) - start ))s"
echo "${assets}"
