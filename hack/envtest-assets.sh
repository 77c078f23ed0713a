#!/usr/bin/env bash
# Copyright 2026 The Tollgate Authors.
# SPDX-License-Identifier: Apache-2.0
#
# envtest-assets.sh provides the binaries Tollgate's tests start: the
# kube-apiserver and etcd of controller-runtime's envtest, the
# kube-controller-manager that runs the real Job controller (with the garbage
# collector and the TTL-after-finished controller) against a workload
# control plane, and Cluster API's core manager (the Cluster, Machine,
# MachineSet, MachineDeployment and MachineHealthCheck controllers and CAPI's
# webhooks) at the version of sigs.k8s.io/cluster-api in go.mod, which runs
# against the management control plane. It prints the directory holding them
# (the value for KUBEBUILDER_ASSETS) on its last line of stdout. Progress goes
# to stderr.
#
# It tries, in order:
#   1. KUBEBUILDER_ASSETS, when it is set and holds all four binaries;
#   2. the cache ${XDG_CACHE_HOME:-$HOME/.cache}/tollgate/envtest/<versions>;
#   3. for kube-apiserver and etcd, setup-envtest (works where its download
#      site is reachable; it has no kube-controller-manager);
#   4. a build from Go module source into that cache: kube-apiserver and
#      kube-controller-manager from k8s.io/kubernetes with every staging
#      module replaced by its v0.x release, the same source for both, and
#      etcd from go.etcd.io/etcd/server/v3; CAPI core (capi-manager-<version>)
#      is always built, from sigs.k8s.io/cluster-api/core.
#
# Safe to run concurrently: builds hold a lock and land by atomic rename.
set -euo pipefail

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
SETUP_ENVTEST_VERSION="${SETUP_ENVTEST_VERSION:-v0.24.1}"
GO="${GO:-go}"
# The version of Cluster API whose core manager the tests run: the one
# Tollgate is built against, so the CRDs the tests install (from the same
# module) and the controllers agree.
CAPI_VERSION="${CAPI_VERSION:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && "${GO}" list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)}"
CAPI_MANAGER="capi-manager-${CAPI_VERSION}"

log() { printf '[envtest-assets] %s\n' "$*" >&2; }

# A kube-apiserver built without Kubernetes' version stamp reports
# v0.0.0-master, which clients that check the server's version (CAPI core
# refuses to start below v1.20.0) cannot use: such a cached binary counts as
# missing and is built again.
has_apiserver() { [[ -x "$1/kube-apiserver" ]] && [[ "$("$1/kube-apiserver" --version 2>/dev/null)" == "Kubernetes ${KUBERNETES_VERSION}" ]]; }
has_envtest() { has_apiserver "$1" && [[ -x "$1/etcd" ]]; }
has_kcm() { [[ -x "$1/kube-controller-manager" ]]; }
has_capi() { [[ -x "$1/${CAPI_MANAGER}" ]]; }
has_assets() { has_envtest "$1" && has_kcm "$1" && has_capi "$1"; }

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
# version_ldflags are the -X flags Kubernetes' own build (hack/lib/version.sh)
# stamps its binaries with, so that they report KUBERNETES_VERSION.
version_ldflags() {
  local minor=${KUBERNETES_VERSION#v1.}
  minor=${minor%%.*}
  local key val flags=""
  for kv in "gitVersion=${KUBERNETES_VERSION}" "gitMajor=1" "gitMinor=${minor}" "gitTreeState=clean" \
      "buildDate=$(date -u +'%Y-%m-%dT%H:%M:%SZ')"; do
    key=${kv%%=*} val=${kv#*=}
    flags+=" -X k8s.io/client-go/pkg/version.${key}=${val} -X k8s.io/component-base/version.${key}=${val}"
  done
  echo "${flags}"
}

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
if ! has_apiserver "${assets}" && ! has_apiserver "${work}/out"; then
  mkdir -p "${work}/out"
  log "Building kube-apiserver ${KUBERNETES_VERSION} from source (10 to 25 minutes cold on 2 cores)"
  kubernetes_module "${work}/apiserver" k8s.io/kubernetes/cmd/kube-apiserver/app
  (cd "${work}/apiserver" && CGO_ENABLED=0 "${GO}" build -trimpath -ldflags="-s -w $(version_ldflags)" -o "${work}/out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2)
  log "kube-apiserver built in $(( $(date +%s) - start ))s"
fi
if [[ ! -x "${assets}/etcd" && ! -x "${work}/out/etcd" ]]; then
  mkdir -p "${work}/out"
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
if [[ ! -d "${assets}" ]]; then
  # The directory lands whole, by one rename: a reader sees all of it or
  # none of it.
  mv -T "${work}/out" "${assets}"
elif [[ -d "${work}/out" ]]; then
  # A cache that lacked a binary (or held a stale one) gets it by an atomic
  # rename of the file.
  for f in "${work}"/out/*; do mv "${f}" "${assets}/"; done
fi

# --- kube-controller-manager ------------------------------------------------
# No release of it can be downloaded with setup-envtest: it is always built,
# from the same k8s.io/kubernetes module as kube-apiserver, and lands in the
# same directory by an atomic rename of the file.
if ! has_kcm "${assets}"; then
  log "Building kube-controller-manager ${KUBERNETES_VERSION} from source (5 to 15 minutes on 2 cores: it shares most packages with kube-apiserver, built just before)"
  kcm_start=$(date +%s)
  kubernetes_module "${work}/controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager/app
  (cd "${work}/controller-manager" && CGO_ENABLED=0 "${GO}" build -trimpath -ldflags="-s -w $(version_ldflags)" \
    -o "${work}/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager >&2)
  mv "${work}/kube-controller-manager" "${assets}/kube-controller-manager"
  log "kube-controller-manager built in $(( $(date +%s) - kcm_start ))s"
fi

# --- Cluster API core ---------------------------------------------------------
# CAPI publishes its manager as an image only; the tests run it as a process,
# built from the main package of its module (core/main.go, what the image
# runs), in a module of its own so that its dependency versions are CAPI's,
# not Tollgate's.
if ! has_capi "${assets}"; then
  log "Building the Cluster API core manager ${CAPI_VERSION} from source (3 to 10 minutes on 2 cores)"
  capi_start=$(date +%s)
  mkdir -p "${work}/capi"
  (
    cd "${work}/capi"
    "${GO}" mod init tollgate.dev/envtest-capi >/dev/null 2>&1
    "${GO}" get "sigs.k8s.io/cluster-api@${CAPI_VERSION}" "sigs.k8s.io/cluster-api/api@${CAPI_VERSION}" >&2
    "${GO}" get "sigs.k8s.io/cluster-api/core@${CAPI_VERSION}" >&2
    CGO_ENABLED=0 "${GO}" build -trimpath -ldflags='-s -w' -o "${work}/${CAPI_MANAGER}" sigs.k8s.io/cluster-api/core >&2
  )
  mv "${work}/${CAPI_MANAGER}" "${assets}/${CAPI_MANAGER}"
  log "Cluster API core manager built in $(( $(date +%s) - capi_start ))s"
fi

log "envtest binaries ready in ${assets} after $(( $(date +%s) - start ))s"
echo "${assets}"
