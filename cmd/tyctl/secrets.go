package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/trainyard/trainyard/internal/resname"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// Secret values go from a flag or a file straight into the request: they
// are never printed, never part of an error, and the server never returns
// them.

func newSecretsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "secrets",
		Aliases: []string{"secret"},
		Short:   "Manage the tenant's secrets (values are write-only; tenant admins)",
	}
	cmd.AddCommand(newSecretsPutCmd(a), newSecretsListCmd(a), newSecretsDeleteCmd(a))
	return cmd
}

func newSecretsPutCmd(a *app) *cobra.Command {
	var literals, files []string
	cmd := &cobra.Command{
		Use:   "put NAME --from-literal KEY=VALUE | --from-file [KEY=]PATH ...",
		Short: "Create or replace a secret",
		Long: `Create or replace a secret; its keys are exactly those given. Jobs use it
through env[].secret or secretVolumes. Prefer --from-file: a literal stays in
your shell history.`,
		Example: `  tyctl secrets put wandb --from-file api-key=$HOME/.wandb-key
  tyctl secrets put s3 --from-literal access-key-id=AKIA... --from-file secret-access-key=./s3.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Secret, args[0])
			if err != nil {
				return err
			}
			data, err := a.secretData(literals, files)
			if err != nil {
				return err
			}
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			s, err := c.PutSecret(ctx, &pb.PutSecretRequest{Secret: &pb.Secret{Name: name, Data: data}})
			if err != nil {
				return err
			}
			return a.print(s, func(w io.Writer) {
				fmt.Fprintf(w, "secret %s saved (keys: %s)\n", lastSegment(s.GetName()), strings.Join(s.GetKeys(), ", "))
			})
		},
	}
	cmd.Flags().StringArrayVar(&literals, "from-literal", nil, "KEY=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&files, "from-file", nil, "KEY=PATH, or PATH to use the file name as key (repeatable)")
	return cmd
}

// secretData builds a secret's values from --from-literal and --from-file.
func (a *app) secretData(literals, files []string) (map[string]string, error) {
	if len(literals)+len(files) == 0 {
		return nil, fmt.Errorf("no values: give --from-literal KEY=VALUE or --from-file [KEY=]PATH")
	}
	data, err := parsePairs("from-literal", literals)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		key, path, ok := strings.Cut(f, "=")
		if !ok {
			key, path = filepath.Base(f), f
		}
		if key == "" || path == "" {
			return nil, fmt.Errorf("--from-file %q: want KEY=PATH or PATH", f)
		}
		if _, dup := data[key]; dup {
			return nil, fmt.Errorf("key %q is given twice", key)
		}
		b, err := a.readFile(path)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("--from-file %s: not UTF-8 text; secret values are strings (base64-encode binary data)", path)
		}
		data[key] = string(b)
	}
	return data, nil
}

func newSecretsListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the tenant's secrets and their keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parent, err := a.tenantParent()
			if err != nil {
				return err
			}
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := c.ListSecrets(ctx, &pb.ListSecretsRequest{Parent: parent})
			if err != nil {
				return err
			}
			for _, s := range resp.GetSecrets() {
				slices.Sort(s.Keys)
			}
			return a.print(resp, func(w io.Writer) { writeSecretsTable(w, resp.GetSecrets(), a.now()) })
		},
	}
}

func newSecretsDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := a.childName(resname.Secret, args[0])
			if err != nil {
				return err
			}
			c, err := a.tenantClient()
			if err != nil {
				return err
			}
			ctx, cancel := a.callCtx(cmd)
			defer cancel()
			resp, err := c.DeleteSecret(ctx, &pb.DeleteSecretRequest{Name: name})
			if err != nil {
				return err
			}
			return a.print(resp, func(w io.Writer) { fmt.Fprintf(w, "secret %s deleted\n", lastSegment(name)) })
		},
	}
}
