package cmd

import (
	"errors"
	"testing"
	"time"

	"lane/store"
)

func TestCostsQuery(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip(err)
	}
	q, err := costsQuery(&CostsOptions{By: "week", Since: "20250301", Until: "2025-03-31", Runtime: "codex",
		TimeZone: "Asia/Tokyo", OutputFormat: "csv"})
	if err != nil {
		t.Fatal(err)
	}
	want := store.CostsQuery{By: store.ByWeek, Runtime: "codex", Location: tokyo,
		Since: time.Date(2025, 3, 1, 0, 0, 0, 0, tokyo), Until: time.Date(2025, 4, 1, 0, 0, 0, 0, tokyo)}
	if q.By != want.By || q.Runtime != want.Runtime || q.Location.String() != "Asia/Tokyo" ||
		!q.Since.Equal(want.Since) || !q.Until.Equal(want.Until) {
		t.Errorf("query %+v, want %+v (--until's day included)", q, want)
	}
	for _, bad := range []CostsOptions{
		{By: "year", OutputFormat: "text"},
		{By: "day", OutputFormat: "yaml"},
		{By: "day", OutputFormat: "text", Since: "March"},
		{By: "day", OutputFormat: "text", Until: "2025-02-30"},
		{By: "day", OutputFormat: "text", TimeZone: "Mars/Olympus"},
	} {
		var usage *UsageError
		if _, err := costsQuery(&bad); !errors.As(err, &usage) {
			t.Errorf("%+v: %v, want a usage error", bad, err)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
