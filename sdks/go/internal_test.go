package regina

import (
	"errors"
	"regexp"
	"testing"
	"time"
)

func TestBackoffGrowsExponentiallyWithJitterUpToTheMaximum(t *testing.T) {
	c := &Client{backoffBase: 100 * time.Millisecond, backoffMax: time.Second}
	cause := errors.New("connection refused")
	for round, ceiling := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		ceiling *= time.Millisecond
		seen := map[time.Duration]bool{}
		for i := 0; i < 200; i++ {
			d := c.backoff(round, cause)
			if d < ceiling/2 || d > ceiling {
				t.Fatalf("round %d: %s outside [%s, %s]", round, d, ceiling/2, ceiling)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Fatalf("round %d: only %d distinct pauses: no jitter", round, len(seen))
		}
	}
	if d := c.backoff(200, cause); d < c.backoffMax/2 || d > c.backoffMax {
		t.Fatalf("a very late round must stay within the maximum, got %s", d)
	}
}

func TestBackoffHonoursRetryAfterWithinTheMaximum(t *testing.T) {
	c := &Client{backoffBase: 10 * time.Millisecond, backoffMax: 5 * time.Second}
	busy := &Error{Code: CodeOverloaded, Status: 503, retryAfter: 2 * time.Second}
	if d := c.backoff(0, busy); d != 2*time.Second {
		t.Fatalf("pause %s, want the broker's Retry-After of 2s", d)
	}
	c.backoffMax = time.Second
	if d := c.backoff(0, busy); d != time.Second {
		t.Fatalf("pause %s, want it capped at 1s", d)
	}
}

func TestGeneratedTransactionIDsAreUniqueTimeOrderedUUIDv7(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	prev := ""
	for i := 0; i < 1000; i++ {
		id := newUUIDv7()
		if !form.MatchString(id) {
			t.Fatalf("%q is not a canonical UUIDv7", id)
		}
		if seen[id] {
			t.Fatalf("duplicate %q", id)
		}
		seen[id] = true
		if prev != "" && id[:13] < prev[:13] {
			t.Fatalf("%q sorts before the earlier %q", id, prev)
		}
		prev = id
	}
}
