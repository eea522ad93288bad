package config

import (
	"strings"
	"testing"
	"time"
)

func TestValidateImageGC(t *testing.T) {
	for _, tt := range []struct {
		name    string
		change  func(c *Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"off", func(c *Config) { c.ImageGCHighThresholdPercent = 100 }, ""},
		{"everything unused goes", func(c *Config) {
			c.ImageGCHighThresholdPercent, c.ImageGCLowThresholdPercent, c.ImageMinimumGCAge = 1, 0, 0
		}, ""},
		{"low not below high", func(c *Config) { c.ImageGCLowThresholdPercent = 85 }, "--image-gc-low-threshold: 85 must be below --image-gc-high-threshold (85)"},
		{"high over 100", func(c *Config) { c.ImageGCHighThresholdPercent = 101 }, "--image-gc-high-threshold: 101 is not a percentage from 0 to 100"},
		{"low negative", func(c *Config) { c.ImageGCLowThresholdPercent = -1 }, "--image-gc-low-threshold: -1 is not a percentage"},
		{"negative age", func(c *Config) { c.ImageMinimumGCAge = -time.Minute }, "--minimum-image-ttl-duration: must not be negative"},
		{"no period", func(c *Config) { c.ImageGCPeriod = 0 }, "--image-gc-period: must be positive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(&c)
			err := c.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
