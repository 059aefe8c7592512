package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteUnits are the units a byte size may carry, case-insensitively: the
// binary ones count in powers of 1024, the decimal ones in powers of 1000.
var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// parseByteSize reads a byte size: a number of bytes, or a number (with a
// fraction if need be) and a unit, such as 512MiB, 2GiB, 1.5GB or 64k
// (the one-letter units are binary). Fractions of a byte are dropped. It
// is the parser of every byte-size flag.
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := byteUnits[unit]
	if !ok || num == "" {
		return 0, fmt.Errorf("invalid byte size %q: want a number of bytes or a number with a unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s)
	}
	if !strings.Contains(num, ".") && mult == 1 {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid byte size %q: too large", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid byte size %q", s)
	}
	v := math.Floor(f * mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid byte size %q: too large", s)
	}
	return int64(v), nil
}

// formatByteSize writes n in the largest binary unit that divides it, as
// parseByteSize reads it back: 33554432 is 32MiB.
func formatByteSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// humanBytes writes n for people, to three significant digits in the
// largest binary unit it reaches: 14116 is 13.8 KiB.
func humanBytes(n int64) string {
	if n < 1<<10 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, unit := float64(n)/(1<<10), "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if v < 1<<10 {
			break
		}
		v, unit = v/(1<<10), u
	}
	return strconv.FormatFloat(v, 'f', max(0, 2-int(math.Log10(v))), 64) + " " + unit
}
