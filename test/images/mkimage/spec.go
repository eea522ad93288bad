package main

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// imageSpec is everything the image is made of.
type imageSpec struct {
	refs       []string
	entries    []entry
	entrypoint []string
	cmd        []string
	env        []string
	workdir    string
	user       string
	arch, os   string
}

// entryKind says what an entry becomes in the layer.
type entryKind int

const (
	kindDir entryKind = iota
	kindFile
	kindSymlink
)

// entry is one path in the layer; name is absolute and clean.
type entry struct {
	name   string
	kind   entryKind
	mode   fs.FileMode // permission bits plus sticky/setuid/setgid
	source string      // kindFile: host path; mode 0 means "the source's mode"
	target string      // kindSymlink: link target
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set appends one occurrence.
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// parseEntries turns -file, -symlink and -dir values into entries.
func parseEntries(files, links, dirs []string) ([]entry, error) {
	var out []entry
	for _, f := range files {
		dst, rest, ok := strings.Cut(f, "=")
		if !ok || rest == "" {
			return nil, fmt.Errorf("-file %q: want DST=SRC[:MODE]", f)
		}
		src, mode, err := splitMode(rest, 0)
		if err != nil {
			return nil, fmt.Errorf("-file %q: %w", f, err)
		}
		out = append(out, entry{name: cleanAbs(dst), kind: kindFile, mode: mode, source: src})
	}
	for _, l := range links {
		dst, target, ok := strings.Cut(l, "=")
		if !ok || target == "" {
			return nil, fmt.Errorf("-symlink %q: want DST=TARGET", l)
		}
		out = append(out, entry{name: cleanAbs(dst), kind: kindSymlink, mode: 0o777, target: target})
	}
	for _, d := range dirs {
		p, mode, err := splitMode(d, 0o755)
		if err != nil {
			return nil, fmt.Errorf("-dir %q: %w", d, err)
		}
		out = append(out, entry{name: cleanAbs(p), kind: kindDir, mode: mode})
	}
	return out, nil
}

// splitMode splits "PATH:MODE" (MODE octal); without ":MODE" it returns def.
func splitMode(s string, def fs.FileMode) (string, fs.FileMode, error) {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return s, def, nil
	}
	m, err := strconv.ParseUint(s[i+1:], 8, 32)
	if err != nil {
		return "", 0, fmt.Errorf("mode %q is not octal: %w", s[i+1:], err)
	}
	return s[:i], tarModeToFileMode(int64(m)), nil
}

// cleanAbs makes p absolute and clean.
func cleanAbs(p string) string { return path.Clean("/" + p) }

// splitRef returns the tag of ref ("localhost/a/b:1.0" -> "1.0").
func splitRef(ref string) (string, error) {
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash || colon == len(ref)-1 || strings.Contains(ref, "@") {
		return "", fmt.Errorf("reference %q: want NAME:TAG (no digest)", ref)
	}
	return ref[colon+1:], nil
}

// tarModeToFileMode maps the octal tar/chmod mode to fs.FileMode bits.
func tarModeToFileMode(m int64) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	return mode
}

// fileModeToTarMode is the inverse of tarModeToFileMode.
func fileModeToTarMode(mode fs.FileMode) int64 {
	m := int64(mode.Perm())
	if mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	if mode&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if mode&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	return m
}
