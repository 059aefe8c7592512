package api

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildInfo(t *testing.T) {
	f := func(bi *debug.BuildInfo, want BuildInfo, text ...string) {
		t.Helper()
		got := buildInfoOf(bi)
		if got != want {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
		for _, s := range text {
			if !strings.Contains(got.String(), s) {
				t.Errorf("%q lacks %q", got.String(), s)
			}
		}
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	f(nil, BuildInfo{Version: "(unknown)", GoVersion: runtime.Version(), Platform: platform},
		"coppice (unknown)\n", "commit  unknown\n", "go      "+runtime.Version()+" "+platform+"\n")
	f(&debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "65e5773abc"}, {Key: "vcs.time", Value: "2026-11-25T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		{Key: "-tags", Value: "pebblegozstd"},
	}}, BuildInfo{Version: "v1.2.3", Revision: "65e5773abc", Modified: true, Time: "2026-11-25T10:00:00Z", GoVersion: "go1.26.1", Platform: platform},
		"coppice v1.2.3\n", "commit  65e5773abc (modified)\n", "date    2026-11-25T10:00:00Z\n", "go      go1.26.1 ")
	f(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
		BuildInfo{Version: "(devel)", Revision: "abc", GoVersion: runtime.Version(), Platform: platform}, "commit  abc\n")

	// The running binary: this test's, built by the go command.
	if bi := ReadBuildInfo(); bi.GoVersion != runtime.Version() || bi.Version == "" {
		t.Errorf("running binary: %+v", bi)
	}
}
