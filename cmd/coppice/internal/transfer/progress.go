package transfer

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// ProgressMode chooses how a transfer shows its progress.
type ProgressMode int

// The progress modes.
const (
	// ProgressOff shows nothing until the summary.
	ProgressOff ProgressMode = iota
	// ProgressBar redraws a bar in place: for a terminal.
	ProgressBar
	// ProgressLines writes a plain line every Progress.Every records: for
	// logs and pipes.
	ProgressLines
)

// DefaultProgressEvery is the number of records between two progress
// lines when Progress.Every is 0.
const DefaultProgressEvery = 100_000

// Progress configures the progress display.
type Progress struct {
	Mode ProgressMode
	// Every is the number of records between two lines of ProgressLines;
	// 0 means DefaultProgressEvery.
	Every int64
}

// meter counts a transfer's records and bytes and shows them. It is used
// by one goroutine.
type meter struct {
	verb  string // "import" or "export"
	out   io.Writer
	mode  ProgressMode
	every int64
	start time.Time
	// total is the expected input bytes (bytesTotal) or records; 0 when
	// unknown.
	total      int64
	bytesTotal bool
	records    int64
	bytes      int64
	nextLine   int64
	bar        *progressbar.ProgressBar
}

// newMeter starts the display. An import measures its progress in input
// bytes (bytesTotal), an export in records.
func newMeter(verb string, out io.Writer, p Progress, total int64, bytesTotal bool) *meter {
	m := &meter{verb: verb, out: out, mode: p.Mode, every: p.Every, start: time.Now(), total: total, bytesTotal: bytesTotal}
	if m.every <= 0 {
		m.every = DefaultProgressEvery
	}
	m.nextLine = m.every
	if m.mode != ProgressBar {
		return m
	}
	max := total
	if max <= 0 {
		max = -1 // a spinner
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(out),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(out) }),
	}
	if bytesTotal {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true), progressbar.OptionUseIECUnits(true))
	} else {
		opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString("records"))
	}
	opts = append(opts, progressbar.OptionShowCount())
	m.bar = progressbar.NewOptions64(max, opts...)
	m.describe()
	return m
}

// add counts settled records and the bytes they took.
func (m *meter) add(records, bytes int64) {
	m.records += records
	m.bytes += bytes
	switch m.mode {
	case ProgressBar:
		if m.bar.IsFinished() {
			return
		}
		m.describe()
		if m.bytesTotal {
			m.bar.Set64(m.bytes)
		} else {
			m.bar.Set64(m.records)
		}
	case ProgressLines:
		if m.records >= m.nextLine {
			fmt.Fprintln(m.out, m.line())
			m.nextLine = (m.records/m.every + 1) * m.every
		}
	}
}

// describe sets the bar's text: the count the bar itself does not show.
func (m *meter) describe() {
	el := time.Since(m.start).Seconds()
	if m.bytesTotal {
		m.bar.Describe(fmt.Sprintf("%d records, %s", m.records, rate(float64(m.records), el, "records")))
	} else {
		m.bar.Describe(fmt.Sprintf("%s, %s", formatBytes(m.bytes), rate(float64(m.bytes)/(1<<20), el, "MiB")))
	}
}

// line is one plain progress line.
func (m *meter) line() string {
	el := time.Since(m.start)
	s := fmt.Sprintf("%s: %d records, %s, %s", m.verb, m.records, formatBytes(m.bytes), rate(float64(m.records), el.Seconds(), "records"))
	done := m.records
	if m.bytesTotal {
		done = m.bytes
	}
	if m.total > 0 && done > 0 && done <= m.total {
		frac := float64(done) / float64(m.total)
		eta := time.Duration(float64(el) * (1 - frac) / frac).Round(time.Second)
		s += fmt.Sprintf(", %.0f%%, eta %s", 100*frac, eta)
	}
	return s
}

// println writes a message line, above the bar when there is one.
func (m *meter) println(s string) {
	if m.bar != nil {
		progressbar.Bprintln(m.bar, s)
		return
	}
	fmt.Fprintln(m.out, s)
}

// finish completes the display; the caller writes the summary next. A
// bar that reached its total has finished by itself (a finished bar
// redraws itself on every change, so it is left alone).
func (m *meter) finish(complete bool) {
	if m.bar == nil || m.bar.IsFinished() {
		return
	}
	m.describe()
	if complete && m.total > 0 {
		m.bar.Finish()
		return
	}
	m.bar.Exit()
}

// rate formats n per second over secs.
func rate(n, secs float64, unit string) string {
	if secs <= 0 {
		return "- " + unit + "/s"
	}
	if r := n / secs; r < 100 {
		return fmt.Sprintf("%.1f %s/s", r, unit)
	}
	return fmt.Sprintf("%.0f %s/s", n/secs, unit)
}

// formatBytes formats a byte count in binary units.
func formatBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
