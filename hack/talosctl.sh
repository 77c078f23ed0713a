#!/usr/bin/env bash
# Copyright 2026 The Tollgate Authors.
# SPDX-License-Identifier: Apache-2.0
#
# talosctl.sh provides a talosctl binary built from Go module source and prints
# its path on the last line of stdout. Progress goes to stderr.
#
# talosctl is the reference client of the Talos API: the simulator in
# test/talossim is checked against it (make test-talosctl). The binary is
# cached in ${XDG_CACHE_HOME:-$HOME/.cache}/tollgate/tools/talosctl-<version>.
#
# The build is a throwaway module that requires github.com/siderolabs/talos at
# TALOS_VERSION with the replace directives of that version's go.mod, except:
#   - the nested machinery module is required at the same version instead of
#     "./pkg/machinery";
#   - the github.com/smira/containerd/v2 fork is replaced by upstream
#     github.com/containerd/containerd/v2 ${CONTAINERD_VERSION};
#   - the wgctrl fork replace is dropped;
# because those forks are not served by the Go module proxy.
#
# Safe to run concurrently: builds hold a lock and land by atomic rename.
set -euo pipefail

TALOS_VERSION="${TALOS_VERSION:-v1.13.0}"
CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.2.3}"
GO="${GO:-go}"

log() { printf '[talosctl] %s\n' "$*" >&2; }

tools="${XDG_CACHE_HOME:-$HOME/.cache}/tollgate/tools"
bin="${tools}/talosctl-${TALOS_VERSION}"
if [[ -x "${bin}" ]]; then
  echo "${bin}"
  exit 0
fi

mkdir -p "${tools}"
exec 9>"${tools}/.talosctl.lock"
log "Waiting for the talosctl build lock (another build may be running)"
flock 9
if [[ -x "${bin}" ]]; then
  echo "${bin}"
  exit 0
fi

work="$(mktemp -d "${tools}/talosctl-build.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
start=$(date +%s)
log "Building talosctl ${TALOS_VERSION} from Go module source (about 6 minutes cold on 2 cores)"
(
  cd "${work}"
  "${GO}" mod init tollgate.dev/talosctl-build >/dev/null 2>&1
  talos_gomod="$("${GO}" mod download -json "github.com/siderolabs/talos@${TALOS_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  {
    echo "require ("
    echo "	github.com/siderolabs/talos ${TALOS_VERSION}"
    echo "	github.com/siderolabs/talos/pkg/machinery ${TALOS_VERSION}"
    echo ")"
    echo "replace ("
    # Single-line replaces of upstream, minus local paths and the forks above.
    sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\([^[:space:]/]*\.[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\([^.[:space:]][^[:space:]]*[[:space:]][^[:space:]]*\)[[:space:]]*$#\t\2 => \3#p' "${talos_gomod}" \
      | grep -v -e 'wireguard/wgctrl' -e 'containerd/containerd/v2'
    echo "	github.com/containerd/containerd/v2 => github.com/containerd/containerd/v2 ${CONTAINERD_VERSION}"
    echo ")"
  } >>go.mod
  log "go.mod of the build module:"
  sed 's/^/    /' go.mod >&2
  cat >tools.go <<'GO'
//go:build tools

package tools

import _ "github.com/siderolabs/talos/cmd/talosctl"
GO
  "${GO}" mod tidy >&2
  CGO_ENABLED=0 "${GO}" build -trimpath \
    -ldflags "-s -w -X github.com/siderolabs/talos/pkg/machinery/version.Tag=${TALOS_VERSION}" \
    -o "${work}/talosctl" github.com/siderolabs/talos/cmd/talosctl >&2
)
mv -f "${work}/talosctl" "${bin}"
log "talosctl ${TALOS_VERSION} ready in ${bin} after $(( $(date +%s) - start ))s"
echo "${bin}"
