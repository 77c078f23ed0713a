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

package talos

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"
)

// Image check errors, to be tested with errors.Is.
var (
	// ErrImageNotFound is returned when the registry has no such image.
	ErrImageNotFound = errors.New("installer image not found")
	// ErrImageUnauthorized is returned when the registry refuses the
	// credentials (or their absence).
	ErrImageUnauthorized = errors.New("not authorized to read installer image")
	// ErrPullSecretInvalid is returned for a pull Secret that is not a
	// usable kubernetes.io/dockerconfigjson Secret.
	ErrPullSecretInvalid = errors.New("invalid pull Secret")
)

// CheckImage checks with a HEAD request that ref exists in its registry,
// with credentials from keychain (nil means anonymous). Registries on
// loopback and private addresses are reached over plain HTTP, as
// go-containerregistry does. The error says "installer image <ref> not
// found" (ErrImageNotFound) or names the authorization problem
// (ErrImageUnauthorized) rather than dumping the transport error.
func CheckImage(ctx context.Context, ref string, keychain authn.Keychain) error {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("%w: %q is not a valid image reference: %w", ErrInvalidInstaller, ref, err)
	}

	if keychain == nil {
		keychain = authn.NewMultiKeychain()
	}

	_, err = remote.Head(parsed, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain))
	if err == nil {
		return nil
	}

	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%w: installer image %s not found", ErrImageNotFound, ref)
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%w: %s (HTTP %d): check the pull Secret", ErrImageUnauthorized, ref, terr.StatusCode)
		}
	}

	return fmt.Errorf("checking installer image %s: %w", ref, err)
}

// KeychainFromSecret returns a keychain with the registry credentials of a
// kubernetes.io/dockerconfigjson Secret. A nil Secret gives an anonymous
// keychain.
func KeychainFromSecret(secret *corev1.Secret) (authn.Keychain, error) {
	if secret == nil {
		return authn.NewMultiKeychain(), nil
	}

	raw, ok := secret.Data[corev1.DockerConfigJsonKey]
	if !ok {
		return nil, fmt.Errorf("%w: Secret %s/%s has no %q key; create it with kubectl create secret docker-registry",
			ErrPullSecretInvalid, secret.Namespace, secret.Name, corev1.DockerConfigJsonKey)
	}

	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}

	if err := json.Unmarshal(raw, &cfg); err != nil {
		// The decoder's message may quote credentials: leave it out.
		return nil, fmt.Errorf("%w: Secret %s/%s does not hold valid docker config JSON", ErrPullSecretInvalid, secret.Namespace, secret.Name)
	}

	kc := secretKeychain{}

	for registry, entry := range cfg.Auths {
		auth := authn.AuthConfig{Username: entry.Username, Password: entry.Password}

		if entry.Auth != "" && auth.Username == "" {
			decoded, err := base64.StdEncoding.DecodeString(entry.Auth)
			if err != nil {
				return nil, fmt.Errorf("%w: Secret %s/%s has an undecodable auth for %q", ErrPullSecretInvalid, secret.Namespace, secret.Name, registry)
			}

			auth.Username, auth.Password, _ = strings.Cut(string(decoded), ":")
		}

		kc[normalizeRegistry(registry)] = auth
	}

	return kc, nil
}

// secretKeychain maps a registry host to its credentials.
type secretKeychain map[string]authn.AuthConfig

func (kc secretKeychain) Resolve(res authn.Resource) (authn.Authenticator, error) {
	if auth, ok := kc[normalizeRegistry(res.RegistryStr())]; ok {
		return authn.FromConfig(auth), nil
	}

	return authn.Anonymous, nil
}

// normalizeRegistry reduces a docker config key ("https://index.docker.io/v1/",
// "registry.example.com") to the registry host as go-containerregistry
// names it.
func normalizeRegistry(registry string) string {
	registry = strings.TrimPrefix(strings.TrimPrefix(registry, "https://"), "http://")
	registry, _, _ = strings.Cut(registry, "/")

	switch registry {
	case "docker.io", "registry-1.docker.io":
		return name.DefaultRegistry
	}

	return registry
}
