package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// registryBinary is Debian's docker-registry (distribution v2), installed
// by test/scripts/prepare.sh together with skopeo and htpasswd.
const registryBinary = "/usr/bin/docker-registry"

// registry is a docker-registry process serving plain HTTP on 127.0.0.1,
// with its storage and access log in a test's temp dir. Both runtimes'
// subtests of one test share it; each pushes under its own tag.
type registry struct {
	t       *testing.T
	addr    string // 127.0.0.1:<port>
	dir     string
	logPath string
	// user and password are set when the registry wants htpasswd auth.
	user, password string
	cmd            *exec.Cmd
	exited         chan struct{}
	// pushMu serializes pushes: the registry can reject a manifest whose
	// blobs another push of the same repository is uploading at the same
	// time ("manifest blob unknown").
	pushMu sync.Mutex
}

// registryOptions vary startRegistry.
type registryOptions struct {
	// auth turns on htpasswd auth with one user.
	auth bool
}

// startRegistry starts a registry for the calling test; it is stopped (by
// its PID) when the test and all its subtests are done.
func startRegistry(t *testing.T, opts registryOptions) *registry {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	for _, bin := range []string{registryBinary, "skopeo", "htpasswd"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found (%v): run test/scripts/prepare.sh, which installs docker-registry, skopeo and apache2-utils", bin, err)
		}
	}
	dir := t.TempDir()
	r := &registry{
		t:       t,
		addr:    fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		dir:     dir,
		logPath: filepath.Join(dir, "registry.log"),
	}
	authConf := ""
	if opts.auth {
		r.user, r.password = "puller", "s3cret-pull"
		htpasswd := filepath.Join(dir, "htpasswd")
		// The registry accepts bcrypt entries only.
		out, err := exec.Command("htpasswd", "-Bbn", r.user, r.password).Output()
		if err != nil {
			t.Fatalf("htpasswd: %v", err)
		}
		if err := os.WriteFile(htpasswd, out, 0o600); err != nil {
			t.Fatal(err)
		}
		authConf = fmt.Sprintf("auth:\n  htpasswd:\n    realm: minikubelet-e2e\n    path: %s\n", htpasswd)
	}
	config := fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
%s`, filepath.Join(dir, "data"), r.addr, authConf)
	configPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(registryBinary, "serve", configPath)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	// Should the test binary die, the registry dies with it.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", registryBinary, err)
	}
	r.exited = make(chan struct{})
	go func() {
		_ = r.cmd.Wait()
		logFile.Close()
		close(r.exited)
	}()
	t.Cleanup(r.stop)

	client := &http.Client{Timeout: 2 * time.Second}
	polltest.Until(t, 15*time.Second, "registry at "+r.addr, func() (bool, string) {
		select {
		case <-r.exited:
			t.Fatalf("registry exited: %s", r.logTail())
		default:
		}
		resp, err := client.Get("http://" + r.addr + "/v2/")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		// 401 is a registry that is up and wants credentials.
		return resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized, resp.Status
	})
	return r
}

// stop ends the registry by its PID: SIGTERM, then SIGKILL after 10s.
func (r *registry) stop() {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	if r.t.Failed() {
		r.t.Logf("registry log (%s):\n%s", r.addr, r.logTail())
	}
}

func (r *registry) logTail() string {
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		return err.Error()
	}
	return tail(string(b), 60)
}

// ref is the image reference of repo:tag in this registry.
func (r *registry) ref(repo, tag string) string { return r.addr + "/" + repo + ":" + tag }

// push copies src (a skopeo source such as oci-archive:<tar>) to repo:tag
// with skopeo, over plain HTTP, with the registry's credentials if any.
func (r *registry) push(t *testing.T, src, repo, tag string) {
	t.Helper()
	args := []string{"--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false"}
	if r.user != "" {
		args = append(args, "--dest-creds", r.user+":"+r.password)
	}
	args = append(args, src, "docker://"+r.ref(repo, tag))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	out, err := exec.CommandContext(ctx, "skopeo", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("skopeo %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// manifestRequests counts the requests for repo's manifest ref (tag or
// digest) in the registry's access log: a pull resolves the tag with a
// HEAD or GET of it.
func (r *registry) manifestRequests(repo, ref string) int {
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		return 0
	}
	re := regexp.MustCompile(`"(GET|HEAD) /v2/` + regexp.QuoteMeta(repo) + `/manifests/` + regexp.QuoteMeta(ref) + ` HTTP`)
	return len(re.FindAll(b, -1))
}

// busyboxArchive is the skopeo source of the bed's busybox OCI tarball.
func busyboxArchive(t *testing.T) string {
	t.Helper()
	bed, err := ctrdtest.LoadBed(os.Getenv("MINIKUBELET_BED"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := bed.Image(ctrdtest.RoleBusybox)
	if err != nil {
		t.Fatal(err)
	}
	return "oci-archive:" + img.Tar
}

// busyboxVariant writes an OCI layout of the bed's busybox image whose
// config edit has changed (entrypoint, cmd, env, working dir), and returns
// it as a skopeo source. The layers stay the same; the config, and so the
// image ID, differ.
func busyboxVariant(t *testing.T, edit func(*ocispec.ImageConfig)) string {
	t.Helper()
	tarPath := strings.TrimPrefix(busyboxArchive(t), "oci-archive:")
	dir := t.TempDir()
	if err := untar(tarPath, dir); err != nil {
		t.Fatalf("unpack %s: %v", tarPath, err)
	}
	if err := editLayoutConfig(dir, edit); err != nil {
		t.Fatalf("edit image in %s: %v", dir, err)
	}
	return "oci:" + dir
}

// editLayoutConfig rewrites the image config of the single manifest in the
// OCI layout at dir, then the manifest and index.json that point to it.
func editLayoutConfig(dir string, edit func(*ocispec.ImageConfig)) error {
	var index ocispec.Index
	if err := readJSON(filepath.Join(dir, "index.json"), &index); err != nil {
		return err
	}
	if len(index.Manifests) != 1 {
		return fmt.Errorf("index.json lists %d manifests, want 1", len(index.Manifests))
	}
	var manifest ocispec.Manifest
	if err := readJSON(blobPath(dir, index.Manifests[0].Digest), &manifest); err != nil {
		return err
	}
	var img ocispec.Image
	if err := readJSON(blobPath(dir, manifest.Config.Digest), &img); err != nil {
		return err
	}
	edit(&img.Config)
	configDesc, err := writeBlob(dir, img)
	if err != nil {
		return err
	}
	manifest.Config.Digest, manifest.Config.Size = configDesc.Digest, configDesc.Size
	manifestDesc, err := writeBlob(dir, manifest)
	if err != nil {
		return err
	}
	index.Manifests[0].Digest, index.Manifests[0].Size = manifestDesc.Digest, manifestDesc.Size
	data, err := json.Marshal(index)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.json"), data, 0o644)
}

func blobPath(dir string, d digest.Digest) string {
	return filepath.Join(dir, "blobs", d.Algorithm().String(), d.Encoded())
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// writeBlob stores v as JSON in the layout's blobs and describes it.
func writeBlob(dir string, v any) (ocispec.Descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	d := digest.FromBytes(data)
	if err := os.WriteFile(blobPath(dir, d), data, 0o644); err != nil {
		return ocispec.Descriptor{}, err
	}
	return ocispec.Descriptor{Digest: d, Size: int64(len(data))}, nil
}

// untar unpacks the regular files and directories of an archive into dir.
func untar(path, dir string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(target, b, 0o644); err != nil {
				return err
			}
		}
	}
}
