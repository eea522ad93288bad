package cgroups

import "testing"

func TestMilliCPUToSharesTable(t *testing.T) {
	tests := []struct {
		milli, want int64
	}{
		{0, 2},           // no request: the kernel's floor
		{1, 2},           // 1*1024/1000 = 1, raised to the floor
		{2, 2},           // 2.048 truncated
		{3, 3},           // 3.072 truncated
		{100, 102},       // 102.4 truncated
		{250, 256},       //
		{1000, 1024},     // one CPU
		{1500, 1536},     //
		{256000, 262144}, // the ceiling exactly
		{300000, 262144}, // above it
	}
	for _, tt := range tests {
		if got := int64(MilliCPUToShares(tt.milli)); got != tt.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
		}
	}
}

func TestMilliCPUToQuotaTable(t *testing.T) {
	tests := []struct {
		milli, period, want int64
	}{
		{0, 100000, 0},           // no limit: no quota
		{1, 100000, 1000},        // 100us raised to the 1ms floor
		{9, 100000, 1000},        // 900us, still below it
		{10, 100000, 1000},       // exactly 1ms
		{11, 100000, 1100},       //
		{250, 100000, 25000},     //
		{500, 100000, 50000},     //
		{1000, 100000, 100000},   // one CPU
		{2500, 100000, 250000},   // more than one CPU
		{500, 50000, 25000},      // another period scales
		{33, 100000, 3300},       //
		{1333, 100000, 133300},   //
		{64000, 100000, 6400000}, // a big machine
	}
	for _, tt := range tests {
		if got := MilliCPUToQuota(tt.milli, tt.period); got != tt.want {
			t.Errorf("MilliCPUToQuota(%d, %d) = %d, want %d", tt.milli, tt.period, got, tt.want)
		}
	}
}
