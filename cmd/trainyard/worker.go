package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run queued jobs on Kubernetes",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("the worker is not built yet")
		},
	}
}

func newDevCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "API server and worker in one process, for local use",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dev mode is not built yet")
		},
	}
}
