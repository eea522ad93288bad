package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
)

func main() {
	spec, out, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(2)
	}
	if err := writeImage(spec, out); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// parseFlags turns the command line into an image spec and output path.
func parseFlags(args []string) (imageSpec, string, error) {
	var (
		spec                  imageSpec
		refs, files, links    listFlag
		dirs                  listFlag
		entrypoint, cmd, envs listFlag
		out                   string
	)
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.Var(&refs, "ref", "image reference with a tag, e.g. localhost/minikubelet/busybox:1.35 (required; repeatable: one image, several names)")
	fs.StringVar(&out, "o", "", "output OCI layout tarball (required)")
	fs.Var(&files, "file", "DST=SRC[:MODE] copy host file SRC to DST with octal MODE (repeatable)")
	fs.Var(&links, "symlink", "DST=TARGET create symlink DST pointing to TARGET (repeatable)")
	fs.Var(&dirs, "dir", "PATH[:MODE] create directory PATH with octal MODE, default 0755 (repeatable)")
	fs.Var(&entrypoint, "entrypoint", "one entrypoint argument (repeatable, in order)")
	fs.Var(&cmd, "cmd", "one cmd argument (repeatable, in order)")
	fs.Var(&envs, "env", "KEY=VALUE environment entry (repeatable)")
	fs.StringVar(&spec.workdir, "workdir", "/", "working directory")
	fs.StringVar(&spec.user, "user", "", "user the process runs as (default: image default, root)")
	fs.StringVar(&spec.arch, "arch", runtime.GOARCH, "image architecture")
	fs.StringVar(&spec.os, "os", "linux", "image operating system")
	if err := fs.Parse(args); err != nil {
		return imageSpec{}, "", err
	}
	spec.refs = refs
	if len(spec.refs) == 0 || out == "" {
		return imageSpec{}, "", fmt.Errorf("flags -ref and -o are required")
	}
	entries, err := parseEntries(files, links, dirs)
	if err != nil {
		return imageSpec{}, "", err
	}
	spec.entries = entries
	spec.entrypoint, spec.cmd, spec.env = entrypoint, cmd, envs
	return spec, out, nil
}
