// Package version reports the build's version, set at link time by the
// Makefile with -ldflags "-X github.com/minikubelet/minikubelet/internal/version.Version=...".
package version
