package imagegc

import (
	"errors"
	"fmt"
	"time"
)

// Policy is when images are removed. The zero value is not valid; the
// kubelet's defaults are DefaultPolicy.
type Policy struct {
	// HighThresholdPercent is the image filesystem usage, in percent, at
	// which a pass removes images; 100 turns garbage collection off.
	HighThresholdPercent int
	// LowThresholdPercent is the usage, in percent, a pass frees down to.
	LowThresholdPercent int
	// MinAge is how long after its first sighting an unused image may be
	// removed.
	MinAge time.Duration
}

// DefaultPolicy returns the kubelet's defaults: 85%, 80%, 2 minutes.
func DefaultPolicy() Policy {
	return Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
}

// Validate checks 0 <= low < high <= 100 and a MinAge that is not
// negative.
func (p Policy) Validate() error {
	var errs []error
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("high threshold %d%% is not in [0, 100]", p.HighThresholdPercent))
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("low threshold %d%% is not in [0, 100]", p.LowThresholdPercent))
	}
	if p.LowThresholdPercent >= p.HighThresholdPercent {
		errs = append(errs, fmt.Errorf("low threshold %d%% must be below the high threshold %d%%", p.LowThresholdPercent, p.HighThresholdPercent))
	}
	if p.MinAge < 0 {
		errs = append(errs, fmt.Errorf("minimum age %v is negative", p.MinAge))
	}
	return errors.Join(errs...)
}

// disabled reports whether p turns garbage collection off.
func (p Policy) disabled() bool { return p.HighThresholdPercent >= 100 }
