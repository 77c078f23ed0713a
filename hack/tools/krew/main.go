/*
Copyright 2026 The Tollgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command krew makes the release assets of the kubectl plugin
// (cmd/kubectl-tollgate) for krew: `make release-plugin` runs it. It
// cross-compiles the plugin for every platform (CGO_ENABLED=0, -trimpath,
// -s -w, main.version), packs each binary as
// kubectl-tollgate_<os>_<arch>.tar.gz, and writes tollgate.yaml, the krew
// plugin manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin) that
// names each archive's download URL and sha256: the file to submit to the
// krew index, or to install from directly:
//
//	go run ./hack/tools/krew --version v0.1.0 --out out/plugin
//	kubectl krew install --manifest=out/plugin/tollgate.yaml --archive=out/plugin/kubectl-tollgate_linux_amd64.tar.gz
//
// The archives are reproducible: the same source, Go toolchain, version and
// SOURCE_DATE_EPOCH (the time of the archived file; the Unix epoch when
// unset) give the same bytes, so the manifest's sha256 can be checked
// against a rebuild.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/tollgate-dev/tollgate/hack/tools/internal/release"
)

// releasePlatforms are the platforms of a release, the default of
// --platforms (and the Makefile's PLUGIN_PLATFORMS: the test checks it).
const releasePlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64"

func main() {
	o := options{}
	platforms := flag.String("platforms", releasePlatforms, "Comma-separated platforms of the plugin, each <os>/<arch> (linux or darwin; amd64 or arm64).")
	flag.StringVar(&o.version, "version", "dev", "Version of the plugin: its version output and the manifest's spec.version; krew needs a semantic version (vX.Y.Z), made v0.0.0-<version> otherwise.")
	flag.StringVar(&o.source, "source", "./cmd/kubectl-tollgate", "The plugin's main package.")
	flag.StringVar(&o.url, "url", "", "Where the archives are downloaded from: the manifest's URIs are <url>/<archive>; https://github.com/tollgate-dev/tollgate/releases/download/<version> when empty.")
	flag.StringVar(&o.out, "out", "", "Directory to write the archives and tollgate.yaml to; it must not exist or be empty.")
	flag.Usage = func() {
		_, _ = fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s --out DIR [--version V] [--platforms P,...] [--url URL]\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 || o.out == "" {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if o.platforms, err = parsePlatforms(*platforms); err == nil {
		o.created, err = release.SourceDateEpoch()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "krew: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	manifest, err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "krew: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(manifest)
}
