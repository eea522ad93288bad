package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The checks below are shared by Validate, whose errors name flags, and the
// config file's mapping, whose errors name the file's fields. Each returns
// an error that says what is wrong and what would be right, without the
// name of the setting.

func checkPositive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("must be a positive duration such as 20s or 1m, got %v", d)
	}
	return nil
}

func checkNotNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("must be 0 or a positive duration such as 30s, got %v", d)
	}
	return nil
}

func checkPort(p int) error {
	if p < 0 || p > 65535 {
		return fmt.Errorf("%d is not a port: want 1-65535, or 0 to disable", p)
	}
	return nil
}

func checkIP(s string) error {
	if net.ParseIP(s) == nil {
		return fmt.Errorf("%q is not an IP address such as 127.0.0.1 or 0.0.0.0", s)
	}
	return nil
}

func checkEndpoint(s string) error {
	if !strings.HasPrefix(s, "unix://") && !strings.HasPrefix(s, "/") || strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%q must be unix:///path/to/socket", s)
	}
	return nil
}

func checkAuthorizationMode(s string) error {
	if s != AuthorizationAlwaysAllow && s != AuthorizationWebhook {
		return fmt.Errorf("%q is not one of AlwaysAllow, Webhook", s)
	}
	return nil
}

func checkManifestURL(s string) error {
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an http:// or https:// URL", s)
	}
	return nil
}

func checkAbsolutePath(s string) error {
	switch {
	case !strings.HasPrefix(s, "/"):
		return fmt.Errorf("%q must be an absolute path", s)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%q must not contain a NUL character", s)
	}
	return nil
}

func checkPositiveInt(n int) error {
	if n <= 0 {
		return fmt.Errorf("must be positive, got %d", n)
	}
	return nil
}

func checkMaxPods(n int) error {
	if n < 0 {
		return fmt.Errorf("must not be negative, got %d", n)
	}
	return nil
}

func checkCgroupDriver(s string) error {
	if s != "cgroupfs" && s != "systemd" {
		return fmt.Errorf("%q is not one of cgroupfs, systemd", s)
	}
	return nil
}

func checkCgroupRoot(s string) error {
	if !strings.HasPrefix(s, "/") || strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%q must be an absolute cgroup path such as / or /minikubelet", s)
	}
	return nil
}

// maxQuantityLen bounds the text of a quantity: parsing and printing one
// takes time quadratic in its digits.
const maxQuantityLen = 64

func checkLogMaxSize(s string) error {
	if len(s) > maxQuantityLen {
		return fmt.Errorf("%.20q... is %d characters long, not a size such as 10Mi or 100Ki", s, len(s))
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return fmt.Errorf("%q is not a positive size such as 10Mi or 100Ki", s)
	}
	return nil
}

func checkLogMaxFiles(n int) error {
	if n < 2 {
		return fmt.Errorf("must be at least 2 (the file written and one rotated), got %d", n)
	}
	return nil
}

func checkPercent(n int) error {
	if n < 0 || n > 100 {
		return fmt.Errorf("must be a percentage from 0 to 100, got %d", n)
	}
	return nil
}

func checkMaxRestartPeriod(d time.Duration) error {
	if d < time.Second || d > 300*time.Second {
		return fmt.Errorf("must be from 1s to 5m, got %v", d)
	}
	return nil
}

// validateNodeSettings checks the settings the agent reads but does not act
// on yet, naming their flags.
func (c *Config) validateNodeSettings() []error {
	var errs []error
	add := func(flag string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
		}
	}
	add("container-log-max-size", checkLogMaxSize(c.ContainerLogMaxSize))
	add("container-log-max-files", checkLogMaxFiles(c.ContainerLogMaxFiles))
	add("image-gc-high-threshold", checkPercent(c.ImageGCHighThresholdPercent))
	add("image-gc-low-threshold", checkPercent(c.ImageGCLowThresholdPercent))
	add("image-gc-low-threshold", checkGCThresholds(c.ImageGCLowThresholdPercent, c.ImageGCHighThresholdPercent, "--image-gc-high-threshold"))
	add("minimum-image-ttl-duration", checkNotNegative(c.ImageMinimumGCAge))
	return errs
}

// checkCriticalGrace checks that the critical pods' share of the shutdown
// grace period fits in it; total names the total's setting.
func checkCriticalGrace(critical, period time.Duration, total string) error {
	if critical > period {
		return fmt.Errorf("%v exceeds %s (%v), of which it is a part", critical, total, period)
	}
	return nil
}

// checkGCThresholds checks that image garbage collection stops below where
// it starts, as the kubelet requires; high names the other setting.
func checkGCThresholds(low, high int, highName string) error {
	if high <= 100 && low >= high {
		return fmt.Errorf("%d must be below %s (%d)", low, highName, high)
	}
	return nil
}
