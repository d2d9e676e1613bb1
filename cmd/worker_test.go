package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lane/internal/pgtest"
)

// On a SQLite file, lane worker and lane bench --workers say why not and
// what to do, as usage errors.
func TestPoolNeedsPostgres(t *testing.T) {
	suite := filepath.Join(t.TempDir(), "suite.yaml")
	os.WriteFile(suite, []byte("name: s\nmodels: [sonnet]\ntasks:\n  - id: a\n    prompt: p\n    check: \"true\"\n"), 0o644)
	for _, args := range [][]string{{"worker"}, {"bench", "--workers", suite}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			f, _, _ := testFactory(t, "")
			root := NewRootCmd(f)
			root.SetArgs(args)
			err := root.ExecuteContext(context.Background())
			if code := ExitCode(err); code != ExitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, ExitUsage)
			}
			for _, want := range []string{"PostgreSQL", "LANE_DB=postgres://"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// lane doctor says whether a database URL answers, and never shows its
// password.
func TestDoctorShowsNoDatabasePassword(t *testing.T) {
	srv := pgtest.ForTest(t)
	for _, tt := range []struct {
		url, state string
	}{
		{pgtest.NewDB(t, srv), "reachable"},
		{"postgres://lane:" + "n0t-th1s-one@127.0.0.1:1/lane?sslmode=disable", "unreachable"},
	} {
		f, out, errOut := testFactory(t, "")
		f.Getenv = func(k string) string { return map[string]string{"LANE_DB": tt.url}[k] }
		root := NewRootCmd(f)
		root.SetArgs([]string{"doctor"})
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := out.String() + errOut.String()
		for _, secret := range []string{pgtest.Password, "n0t-th1s-one"} {
			if strings.Contains(got, secret) {
				t.Errorf("doctor shows the password %q:\n%s", secret, got)
			}
		}
		if !strings.Contains(got, tt.state) {
			t.Errorf("doctor does not say %s:\n%s", tt.state, got)
		}
	}
}

// With a database URL, the cache of runtime versions is this machine's
// state, not a folder named after the URL.
func TestVersionCacheBesideTheStateForAURL(t *testing.T) {
	state := t.TempDir()
	f := &Factory{Getenv: func(k string) string {
		return map[string]string{"LANE_DB": "postgres://lane:pw@db:5432/lane", "XDG_STATE_HOME": state}[k]
	}}
	if got, want := f.versionCache(), filepath.Join(state, "lane", "runtime-versions.json"); got != want {
		t.Errorf("versionCache() = %q, want %q", got, want)
	}
}
