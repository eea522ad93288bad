package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/minikubelet/minikubelet/test/cluster"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bedclean BASE...")
		os.Exit(2)
	}
	var errs []error
	for _, base := range os.Args[1:] {
		errs = append(errs, cleanBase(base))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "bedclean:", err)
		os.Exit(1)
	}
}

// cleanBase cleans every cluster dir, then every instance dir, directly
// under base.
func cleanBase(base string) error {
	var errs []error
	clusters, err := filepath.Glob(filepath.Join(base, "*", "cluster-state.json"))
	if err != nil {
		return fmt.Errorf("list clusters under %q: %w", base, err)
	}
	for _, st := range clusters {
		dir := filepath.Dir(st)
		if err := cluster.Cleanup(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Println("cleaned", dir)
	}
	dirs, err := filepath.Glob(filepath.Join(base, "*", "state.json"))
	if err != nil {
		return fmt.Errorf("list instances under %q: %w", base, err)
	}
	for _, st := range dirs {
		dir := filepath.Dir(st)
		if err := ctrdtest.Cleanup(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Println("cleaned", dir)
	}
	return errors.Join(errs...)
}
