package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the module's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// need returns the path of tool, skipping the test where it is missing
// unless the suite is required to run in full.
func need(t *testing.T, tool, why string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("MINIKUBELET_E2E") == "required" {
			t.Fatalf("%s is not installed (%s)", tool, why)
		}
		t.Skipf("%s is not installed (%s)", tool, why)
	}
	return p
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// make install and make uninstall, each run twice, into a DESTDIR: the
// binary, the unit and the config land where the unit expects them, and
// the config's static pod directory exists; a config the user changed
// survives both, and so does a manifest directory with a manifest in it;
// an unchanged config and an empty manifest directory go with uninstall;
// PREFIX moves the binary and the unit's ExecStart with it.
func TestInstallAndUninstallTwice(t *testing.T) {
	mk := need(t, "make", "test/setup.sh installs it")
	repo := repoRoot(t)
	dest := t.TempDir()
	runMake := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(mk, append([]string{"-C", repo, "DESTDIR=" + dest}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	bin := filepath.Join(dest, "usr/local/bin/minikubelet")
	unit := filepath.Join(dest, "etc/systemd/system/minikubelet.service")
	config := filepath.Join(dest, "etc/minikubelet/config.yaml")
	example := readFile(t, filepath.Join(repo, "examples/config.yaml"))

	runMake("install")
	runMake("install")
	if fi, err := os.Stat(bin); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("binary %s: %v, %v; want mode 0755", bin, fi, err)
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "minikubelet ") {
		t.Errorf("%s version: %q, %v", bin, out, err)
	}
	if got, want := readFile(t, unit), readFile(t, filepath.Join(repo, "examples/minikubelet.service")); got != want {
		t.Errorf("installed unit differs from examples/minikubelet.service:\n%s", got)
	}
	if readFile(t, config) != example {
		t.Errorf("installed config differs from examples/config.yaml")
	}
	manifests := filepath.Join(dest, "etc/kubernetes/manifests")
	if !strings.Contains(example, "\nstaticPodPath: /etc/kubernetes/manifests\n") {
		t.Errorf("examples/config.yaml's staticPodPath is not /etc/kubernetes/manifests, the directory make install creates")
	}
	if fi, err := os.Stat(manifests); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("manifest directory %s: %v, %v; want a directory, mode 0755", manifests, fi, err)
	}
	// A manifest in it keeps it through uninstall.
	pod := filepath.Join(manifests, "web.yaml")
	writeFile(t, pod, "apiVersion: v1\nkind: Pod\n")

	// A config the user changed is never overwritten, nor removed.
	mine := example + "syncFrequency: 30s\n"
	writeFile(t, config, mine)
	if out := runMake("install"); !strings.Contains(out, "keeping "+config) {
		t.Errorf("make install did not say it keeps %s:\n%s", config, out)
	}
	runMake("uninstall")
	runMake("uninstall")
	if exists(bin) || exists(unit) {
		t.Errorf("after make uninstall: binary there %v, unit there %v", exists(bin), exists(unit))
	}
	if !exists(config) || readFile(t, config) != mine {
		t.Errorf("make uninstall removed or changed the edited %s", config)
	}
	if !exists(pod) {
		t.Errorf("make uninstall removed %s", pod)
	}
	os.Remove(pod)

	// An unchanged config goes, with its directory.
	os.Remove(config)
	runMake("install")
	runMake("uninstall")
	runMake("uninstall")
	if exists(filepath.Dir(config)) || exists(bin) || exists(unit) || exists(filepath.Dir(manifests)) {
		t.Errorf("after install and uninstall, left behind: config dir %v, binary %v, unit %v, etc/kubernetes %v",
			exists(filepath.Dir(config)), exists(bin), exists(unit), exists(filepath.Dir(manifests)))
	}

	// PREFIX and CONFDIR move the files and the unit follows them.
	runMake("install", "PREFIX=/usr", "CONFDIR=/etc/mk")
	if u := readFile(t, unit); !strings.Contains(u, "ExecStart=/usr/bin/minikubelet --config /etc/mk/config.yaml\n") {
		t.Errorf("unit installed with PREFIX=/usr CONFDIR=/etc/mk:\n%s", u)
	}
	if !exists(filepath.Join(dest, "usr/bin/minikubelet")) || !exists(filepath.Join(dest, "etc/mk/config.yaml")) {
		t.Errorf("PREFIX=/usr CONFDIR=/etc/mk: files not where asked")
	}
	runMake("uninstall", "PREFIX=/usr", "CONFDIR=/etc/mk")
	if exists(filepath.Join(dest, "usr/bin/minikubelet")) || exists(filepath.Join(dest, "etc/mk")) {
		t.Errorf("PREFIX=/usr CONFDIR=/etc/mk: uninstall left files")
	}
}

// The unit make install writes passes systemd-analyze verify, run on a
// copy of this machine's systemd units with the installed files under
// --root (systemd need not be PID 1), and has the settings the agent
// relies on.
func TestInstallUnitVerifies(t *testing.T) {
	sa := need(t, "systemd-analyze", "prepare.sh installs the systemd package")
	mk := need(t, "make", "test/setup.sh installs it")
	repo := repoRoot(t)
	root := t.TempDir()
	if out, err := exec.Command(mk, "-C", repo, "install", "DESTDIR="+root).CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	// verify resolves the unit's dependencies (sysinit.target, ...) under
	// --root, so the root needs the units systemd ships.
	if err := os.MkdirAll(filepath.Join(root, "usr/lib/systemd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copy systemd's units: %v\n%s", err, out)
	}
	verify := func(unit string) (string, error) {
		out, err := exec.Command(sa, "verify", "--man=no", "--root="+root, unit).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	// systemd-analyze exits 0 on an unknown key or a bad value (it only
	// warns): any output is a failure.
	if out, err := verify("/etc/systemd/system/minikubelet.service"); err != nil || out != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	unit := readFile(t, filepath.Join(root, "etc/systemd/system/minikubelet.service"))
	for _, line := range []string{
		"Type=notify",
		"ExecStart=/usr/local/bin/minikubelet --config /etc/minikubelet/config.yaml",
		"Restart=always",
		"KillMode=process",
		"Delegate=yes",
		"After=network-online.target containerd.service",
		"Wants=network-online.target containerd.service",
		"WatchdogSec=2min",
		"WantedBy=multi-user.target",
	} {
		if !strings.Contains("\n"+unit+"\n", "\n"+line+"\n") {
			t.Errorf("unit lacks %q", line)
		}
	}

	// The check catches a mistake: a misspelled key, a missing binary.
	broken := strings.Replace(unit, "KillMode=process", "KillMod=process", 1)
	broken = strings.Replace(broken, "/usr/local/bin/minikubelet", "/usr/local/bin/minikubelet-missing", 1)
	writeFile(t, filepath.Join(root, "etc/systemd/system/broken.service"), broken)
	out, _ := verify("/etc/systemd/system/broken.service")
	for _, want := range []string{"KillMod", "minikubelet-missing"} {
		if !strings.Contains(out, want) {
			t.Errorf("systemd-analyze verify of a broken unit did not name %q:\n%s", want, out)
		}
	}
}
