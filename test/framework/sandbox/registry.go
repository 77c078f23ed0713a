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

package sandbox

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// InstallerRepository is the repository of installer images in the
// sandbox's registry.
const InstallerRepository = "siderolabs/installer"

// KubeletRepository is the repository of kubelet images in the sandbox's
// registry.
const KubeletRepository = "siderolabs/kubelet"

// startRegistry serves the in-process OCI registry and pushes the installer
// image of each of versions.
func (s *Sandbox) startRegistry(ctx context.Context, versions []string) error {
	s.registry = httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	s.RegistryHost = strings.TrimPrefix(s.registry.URL, "http://")
	for _, v := range versions {
		if err := s.PushInstaller(ctx, v); err != nil {
			return err
		}
	}
	return nil
}

// InstallerRepository is the repository of the installer images in the
// registry, for a policy's installer.repository.
func (s *Sandbox) InstallerRepository() string {
	return s.RegistryHost + "/" + InstallerRepository
}

// PushInstaller pushes a small random image as the installer of the Talos
// version.
func (s *Sandbox) PushInstaller(ctx context.Context, version string) error {
	return s.push(ctx, s.InstallerRepository(), version)
}

// KubeletRepository is the repository of kubelet images in the registry, a
// mirror of ghcr.io/siderolabs/kubelet: the kubelet image of the nodes of a
// Cluster created with ClusterOptions.KubeletRepository, whose tags are the
// Kubernetes releases Tollgate plans the minors in between through.
func (s *Sandbox) KubeletRepository() string {
	return s.RegistryHost + "/" + KubeletRepository
}

// PushKubelet pushes a small random image as the kubelet of the Kubernetes
// version, in KubeletRepository.
func (s *Sandbox) PushKubelet(ctx context.Context, version string) error {
	return s.push(ctx, s.KubeletRepository(), version)
}

// push pushes a small random image as repository:tag.
func (s *Sandbox) push(ctx context.Context, repository, tag string) error {
	img, err := random.Image(512, 1)
	if err != nil {
		return fmt.Errorf("building an image for %s: %w", repository, err)
	}
	ref, err := name.ParseReference(repository + ":" + tag)
	if err != nil {
		return fmt.Errorf("parsing the reference of %s for %q: %w", repository, tag, err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing %q: %w", ref, err)
	}
	return nil
}
