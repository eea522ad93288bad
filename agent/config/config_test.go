package config

import (
	"flag"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/cgroups"
)

func TestConfigShutdownFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		want    func(c Config) bool
	}{
		{
			name: "off by default",
			want: func(c Config) bool {
				return c.ShutdownGracePeriod == 0 && c.ShutdownGracePeriodCriticalPods == 0 && c.LogindConfDir == "/etc/systemd/logind.conf.d"
			},
		},
		{
			name: "both set",
			args: []string{"--shutdown-grace-period=20s", "--shutdown-grace-period-critical-pods=5s", "--logind-conf-dir=/tmp/x"},
			want: func(c Config) bool {
				return c.ShutdownGracePeriod == 20*time.Second && c.ShutdownGracePeriodCriticalPods == 5*time.Second && c.LogindConfDir == "/tmp/x"
			},
		},
		{
			name: "all of it for critical pods",
			args: []string{"--shutdown-grace-period=5s", "--shutdown-grace-period-critical-pods=5s"},
		},
		{
			name:    "critical exceeds the whole",
			args:    []string{"--shutdown-grace-period=5s", "--shutdown-grace-period-critical-pods=6s"},
			wantErr: "--shutdown-grace-period-critical-pods: 6s exceeds --shutdown-grace-period 5s",
		},
		{
			name:    "critical without the whole",
			args:    []string{"--shutdown-grace-period-critical-pods=6s"},
			wantErr: "--shutdown-grace-period-critical-pods: 6s exceeds --shutdown-grace-period 0s",
		},
		{
			name:    "negative",
			args:    []string{"--shutdown-grace-period=-1s"},
			wantErr: "must not be negative",
		},
		{
			name:    "no drop-in dir",
			args:    []string{"--shutdown-grace-period=20s", "--logind-conf-dir="},
			wantErr: "--logind-conf-dir: must not be empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			c.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate = %v, want an error with %q", err, tt.wantErr)
			}
			if tt.want != nil && !tt.want(c) {
				t.Errorf("config %+v", c)
			}
		})
	}
}

func TestValidateCgroupFlags(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		bad    bool
	}{
		{"defaults", func(*Config) {}, false},
		{"unknown driver", func(c *Config) { c.CgroupDriver = "docker" }, true},
		{"relative root", func(c *Config) { c.CgroupRoot = "kubelet" }, true},
		{"empty root", func(c *Config) { c.CgroupRoot = "" }, true},
		{"systemd slice root", func(c *Config) { c.CgroupDriver = cgroups.DriverSystemd; c.CgroupRoot = "minikubelet.slice" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(&c)
			if err := c.Validate(); (err != nil) != tt.bad {
				t.Errorf("Validate = %v, want error: %v", err, tt.bad)
			}
		})
	}
}

func TestSandboxStartWindow(t *testing.T) {
	for _, tc := range []struct {
		flag int
		want int
	}{
		{flag: -1, want: 0},
		{flag: 0, want: max(2, runtime.NumCPU())},
		{flag: 1, want: 1},
		{flag: 7, want: 7},
	} {
		c := Default()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		c.AddFlags(fs)
		if err := fs.Parse([]string{"--max-parallel-sandbox-starts=" + strconv.Itoa(tc.flag)}); err != nil {
			t.Fatal(err)
		}
		if got := c.SandboxStartWindow(); got != tc.want {
			t.Errorf("--max-parallel-sandbox-starts=%d: window %d, want %d", tc.flag, got, tc.want)
		}
	}
}
