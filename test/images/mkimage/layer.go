package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// epoch is the one mtime every tar entry and the image config carry.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// layer is a built layer: the gzip blob and the digest of its tar.
type layer struct {
	gz     []byte
	diffID string // "sha256:..." of the uncompressed tar
}

// buildLayer writes entries (plus missing parent directories) as a sorted
// tar, gzips it and returns both digests' inputs.
func buildLayer(entries []entry) (layer, error) {
	tree, err := withParents(entries)
	if err != nil {
		return layer{}, err
	}
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range tree {
		if err := writeEntry(tw, e); err != nil {
			return layer{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return layer{}, fmt.Errorf("close layer tar: %w", err)
	}
	sum := sha256.Sum256(raw.Bytes())
	gz, err := gzipBytes(raw.Bytes())
	if err != nil {
		return layer{}, err
	}
	return layer{gz: gz, diffID: fmt.Sprintf("sha256:%x", sum)}, nil
}

// withParents returns entries sorted by name with every missing parent
// directory added (mode 0755); a path given twice is an error.
func withParents(entries []entry) ([]entry, error) {
	byName := map[string]entry{}
	for _, e := range entries {
		if e.name == "/" {
			return nil, fmt.Errorf("entry %q: the root directory is implicit", e.name)
		}
		if _, dup := byName[e.name]; dup {
			return nil, fmt.Errorf("entry %q given twice", e.name)
		}
		byName[e.name] = e
	}
	for _, e := range entries {
		for dir := path.Dir(e.name); dir != "/"; dir = path.Dir(dir) {
			if p, ok := byName[dir]; ok && p.kind != kindDir {
				return nil, fmt.Errorf("entry %q: parent %q is not a directory", e.name, dir)
			} else if !ok {
				byName[dir] = entry{name: dir, kind: kindDir, mode: 0o755}
			}
		}
	}
	out := make([]entry, 0, len(byName))
	for _, e := range byName {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// writeEntry writes one tar header (and body for files).
func writeEntry(tw *tar.Writer, e entry) error {
	hdr := &tar.Header{
		Name:    strings.TrimPrefix(e.name, "/"),
		Mode:    fileModeToTarMode(e.mode),
		ModTime: epoch,
		Format:  tar.FormatPAX,
	}
	var body []byte
	switch e.kind {
	case kindDir:
		hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
	case kindSymlink:
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.target
	case kindFile:
		data, mode, err := readSource(e)
		if err != nil {
			return err
		}
		body = data
		hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, int64(len(data)), fileModeToTarMode(mode)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write tar header %q: %w", e.name, err)
	}
	if _, err := tw.Write(body); err != nil {
		return fmt.Errorf("write tar body %q: %w", e.name, err)
	}
	return nil
}

// readSource reads a -file source and decides its mode.
func readSource(e entry) ([]byte, os.FileMode, error) {
	fi, err := os.Stat(e.source)
	if err != nil {
		return nil, 0, fmt.Errorf("file %q for %q: %w", e.source, e.name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("file %q for %q: not a regular file", e.source, e.name)
	}
	data, err := os.ReadFile(e.source)
	if err != nil {
		return nil, 0, fmt.Errorf("read %q for %q: %w", e.source, e.name, err)
	}
	mode := e.mode
	if mode == 0 {
		mode = fi.Mode() & (os.ModePerm | os.ModeSticky | os.ModeSetuid | os.ModeSetgid)
	}
	return data, mode, nil
}

// gzipBytes compresses b with a header that carries no name and no time.
func gzipBytes(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("gzip layer: %w", err)
	}
	if _, err := io.Copy(zw, bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("gzip layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip layer: %w", err)
	}
	return out.Bytes(), nil
}
