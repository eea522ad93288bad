package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestWriteImageDeterministicAndNamed(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho hi\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{"-ref", "localhost/minikubelet/test:1.0", "-file", "/bin/tool=" + bin + ":0755",
		"-symlink", "/bin/sh=tool", "-dir", "/tmp:1777", "-env", "PATH=/bin", "-cmd", "sh", "-cmd", "-c"}
	var outs [][]byte
	for i := range 2 {
		spec, _, err := parseFlags(append(args, "-o", "unused"))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "img"+string(rune('a'+i))+".tar")
		if err := writeImage(spec, out); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, data)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatal("two builds from the same inputs differ")
	}
	files := untar(t, bytes.NewReader(outs[0]))
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"].data, &index); err != nil {
		t.Fatal(err)
	}
	ann := index.Manifests[0].Annotations
	if ann["io.containerd.image.name"] != "localhost/minikubelet/test:1.0" || ann[ocispec.AnnotationRefName] != "1.0" {
		t.Fatalf("index annotations %v", ann)
	}
	var manifest ocispec.Manifest
	mustJSON(t, files["blobs/sha256/"+index.Manifests[0].Digest.Encoded()].data, &manifest)
	var config ocispec.Image
	mustJSON(t, files["blobs/sha256/"+manifest.Config.Digest.Encoded()].data, &config)
	if got := config.Config.Cmd; len(got) != 2 || got[0] != "sh" || got[1] != "-c" {
		t.Fatalf("config cmd %v", got)
	}
	zr, err := gzip.NewReader(bytes.NewReader(files["blobs/sha256/"+manifest.Layers[0].Digest.Encoded()].data))
	if err != nil {
		t.Fatal(err)
	}
	layer := untar(t, zr)
	checks := []struct {
		name string
		typ  byte
		mode int64
	}{
		{"bin/", tar.TypeDir, 0o755},
		{"bin/tool", tar.TypeReg, 0o755},
		{"bin/sh", tar.TypeSymlink, 0o777},
		{"tmp/", tar.TypeDir, 0o1777},
	}
	for _, c := range checks {
		h := layer[c.name].hdr
		if h == nil || h.Typeflag != c.typ || h.Mode != c.mode || h.Uid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("layer entry %s: %+v, want type %c mode %o", c.name, h, c.typ, c.mode)
		}
	}
}

// Several -ref flags name one manifest several times, each entry with its
// full name and its tag, so that an import creates every name.
func TestWriteImageSeveralNames(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "img.tar")
	refs := []string{"registry.k8s.io/e2e-test-images/agnhost:2.63.0", "registry.k8s.io/e2e-test-images/agnhost:2.55"}
	spec, _, err := parseFlags([]string{"-ref", refs[0], "-ref", refs[1], "-o", out, "-dir", "/tmp:1777"})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeImage(spec, out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var index ocispec.Index
	mustJSON(t, untar(t, f)["index.json"].data, &index)
	if len(index.Manifests) != len(refs) {
		t.Fatalf("index has %d manifests, want %d", len(index.Manifests), len(refs))
	}
	for i, m := range index.Manifests {
		want, wantTag := refs[i], []string{"2.63.0", "2.55"}[i]
		if m.Digest != index.Manifests[0].Digest {
			t.Errorf("entry %d names manifest %s, want the one manifest %s", i, m.Digest, index.Manifests[0].Digest)
		}
		if m.Annotations["io.containerd.image.name"] != want || m.Annotations[ocispec.AnnotationRefName] != wantTag {
			t.Errorf("entry %d annotations %v, want name %s tag %s", i, m.Annotations, want, wantTag)
		}
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := [][]string{
		{"-o", "x"}, // no -ref
		{"-ref", "a:1"},
		{"-ref", "noTag", "-o", "x", "-file", "/a=/b"},
		{"-ref", "a:1", "-ref", "b@sha256:00", "-o", "x"},
		{"-ref", "a:1", "-o", "x", "-file", "/a"},
		{"-ref", "a:1", "-o", "x", "-dir", "/t:9z"},
	}
	for _, args := range tests {
		spec, out, err := parseFlags(args)
		if err == nil {
			err = writeImage(spec, filepath.Join(t.TempDir(), out))
		}
		if err == nil {
			t.Errorf("parseFlags/writeImage(%q) succeeded", args)
		}
	}
}

type tarFile struct {
	hdr  *tar.Header
	data []byte
}

func untar(t *testing.T, r io.Reader) map[string]tarFile {
	t.Helper()
	out := map[string]tarFile{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = tarFile{hdr: h, data: data}
	}
}

func mustJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}
