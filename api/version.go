package api

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// BuildInfo describes the running binary, as the Go toolchain stamped it:
// `coppice version`, the startup log line, coppice_build_info and the
// OpenAPI document's info.version show it.
type BuildInfo struct {
	// Version is the main module's version: a release tag when the binary
	// was installed with `go install …@version`, "(devel)" for a build
	// from a checkout.
	Version string
	// Revision is the VCS commit of a build from a checkout, "" when
	// unknown; Modified says whether the tree had uncommitted changes.
	Revision string
	Modified bool
	// Time is the commit time (RFC 3339), "" when unknown.
	Time string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// ReadBuildInfo returns the running binary's build information.
func ReadBuildInfo() BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildInfoOf(bi)
}

// buildInfoOf extracts BuildInfo from the toolchain's record; bi may be nil
// (a binary built without module support).
func buildInfoOf(bi *debug.BuildInfo) BuildInfo {
	out := BuildInfo{Version: "(unknown)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return out
	}
	if bi.Main.Version != "" {
		out.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		out.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			out.Revision = s.Value
		case "vcs.time":
			out.Time = s.Value
		case "vcs.modified":
			out.Modified = s.Value == "true"
		}
	}
	return out
}

// String is the text of `coppice version`.
func (b BuildInfo) String() string {
	commit := b.Revision
	switch {
	case commit == "":
		commit = "unknown"
	case b.Modified:
		commit += " (modified)"
	}
	s := fmt.Sprintf("coppice %s\ncommit  %s\n", b.Version, commit)
	if b.Time != "" {
		s += fmt.Sprintf("date    %s\n", b.Time)
	}
	return s + fmt.Sprintf("go      %s %s\n", b.GoVersion, b.Platform)
}
