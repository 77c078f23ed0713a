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

// Command image builds the release image of the manager without a container
// engine, with go-containerregistry: `make image` and `make image-push` run
// it. It cross-compiles main.go for every platform the way the Dockerfile
// does (CGO_ENABLED=0, -trimpath, -s -w, main.version), puts each binary on a
// root filesystem laid out like gcr.io/distroless/static:nonroot (user
// nonroot, 65532; no shell; /tmp; the CA roots are the ones the manager embeds
// with golang.org/x/crypto/x509roots/fallback), and assembles an OCI image
// index with one manifest per platform. The index is written as an OCI image
// layout, pushed to a registry, or both.
//
//	go run ./hack/tools/image --version v0.1.0 --out out/image
//	go run ./hack/tools/image --version v0.1.0 --push ghcr.io/tollgate-dev/tollgate-controller:v0.1.0
//
// The image is reproducible: the same source, Go toolchain, version and
// SOURCE_DATE_EPOCH (the time of every file and of the image config; the Unix
// epoch when unset) give the same digest.
//
// The Dockerfile builds the same image with an engine; the labels of both
// are the same (the test checks it).
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
// --platforms (and the Makefile's IMAGE_PLATFORMS: the test checks it).
const releasePlatforms = "linux/amd64,linux/arm64"

func main() {
	o := options{}
	platforms := flag.String("platforms", releasePlatforms, "Comma-separated platforms of the image, each linux/<arch>.")
	flag.StringVar(&o.version, "version", "dev", "Version of the manager: its --version output and the org.opencontainers.image.version label.")
	flag.StringVar(&o.source, "source", ".", "Directory of the manager's main package (main.go).")
	flag.StringVar(&o.out, "out", "", "Directory to write the image to as an OCI image layout; it must not exist or be empty.")
	flag.StringVar(&o.push, "push", "", "Image reference (name:tag) to push the image to, with the credentials of the Docker config.")
	flag.Usage = func() {
		_, _ = fmt.Fprintf(flag.CommandLine.Output(), "Usage: %s [--version V] [--platforms P,...] [--out DIR] [--push REF]\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 || (o.out == "" && o.push == "") {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if o.platforms, err = parsePlatforms(*platforms); err == nil {
		o.created, err = release.SourceDateEpoch()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	digest, err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	// The index's digest, which a release signs and pins: the only line on
	// standard output.
	fmt.Println(digest)
}
