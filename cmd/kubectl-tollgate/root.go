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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// errSilent is returned by a command that already said what went wrong: the
// plugin exits 1 without printing it again.
var errSilent = errors.New("failed")

// options are what every command shares: kubectl's connection flags and
// the plugin's streams.
type options struct {
	// config holds --kubeconfig, --context, --namespace and the other
	// connection flags of kubectl.
	config *genericclioptions.ConfigFlags
	// allNamespaces is -A, for the commands that read many objects.
	allNamespaces bool
	// streams are the plugin's input and outputs: the process's, or a
	// test's buffers.
	streams genericiooptions.IOStreams
}

// run runs the plugin with args and returns its exit code: 0 on success, 1
// when a command failed, 2 for a usage error.
func run(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	root := newRootCommand(streams)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errSilent):
		return 1
	case errors.As(err, &usage) || strings.HasPrefix(err.Error(), "unknown command"):
		fprintf(streams.ErrOut, "error: %v\nSee '%s --help'.\n", err, cmd.CommandPath())
		return 2
	}
	fprintf(streams.ErrOut, "error: %v\n", err)
	return 1
}

// usageError marks an error in the command line.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exactArgs is cobra.ExactArgs with the names of the arguments, whose error
// is a usage error.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) == len(names):
			return nil
		case len(names) == 0:
			return usagef("takes no arguments, got %q", args)
		}
		return usagef("expected %s, got %d argument(s)", strings.Join(names, " "), len(args))
	}
}

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:   "kubectl-tollgate",
		Short: "See and steer Tollgate's Talos rollouts",
		Long: "kubectl tollgate shows Tollgate's rollouts of Talos upgrades across Cluster API Clusters " +
			"(a tree of the fleet, the live view of one Cluster) and sets the controls a user may change " +
			"on a rollout or a policy: pause, resume, cancel and audited bypasses; it draws release channels and approves their versions; " +
			"and, while Tollgate is not running, releases its deletion hook from a Cluster's Machines (release-hooks, audited).",
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl tollgate"},
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	o.config.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newDescribeCommand(o),
		newWatchCommand(o),
		newPauseCommand(o, true),
		newPauseCommand(o, false),
		newCancelCommand(o),
		newBypassCommand(o),
		newReleaseHooksCommand(o),
		newChannelCommand(o),
		newApproveCommand(o),
		newVersionCommand(o),
	)
	return root
}

func newVersionCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  exactArgs(),
		Run: func(_ *cobra.Command, _ []string) {
			fprintf(o.streams.Out, "kubectl-tollgate %s\n", version)
		},
	}
}

// scheme is what the plugin reads and writes: Tollgate's kinds and CAPI's;
// and for release-hooks, Leases (is Tollgate running?), Events and
// SelfSubjectReviews (who asks).
func scheme() (*kruntime.Scheme, error) {
	s := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{
		upgradev1.AddToScheme, clusterv1.AddToScheme,
		coordinationv1.AddToScheme, eventsv1.AddToScheme, authenticationv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// client returns a client of the cluster the connection flags name, which
// prints the API server's warnings (those of the admission webhooks
// included) as kubectl does.
func (o *options) client() (client.WithWatch, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NewWarningWriter(o.streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	s, err := scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connecting to the management cluster: %w", err)
	}
	return c, nil
}

// namespace returns the namespace to work in: -n, else the kubeconfig
// context's, else "default"; "" (every namespace) with -A.
func (o *options) namespace() (string, error) {
	if o.allNamespaces {
		return "", nil
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// terminal returns whether w is a terminal, and its width (0 when it is
// not one or its width is unknown).
func terminal(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return false, 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return true, 0
	}
	return true, width
}

// colored reports whether output to a terminal is coloured: yes unless
// NO_COLOR is set (https://no-color.org).
func colored() bool {
	_, set := os.LookupEnv("NO_COLOR")
	return !set
}

// fprintf writes to the plugin's output. A write error (a closed pipe) is
// not the plugin's to handle.
func fprintf(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}
