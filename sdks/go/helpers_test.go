package regina_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	regina "regina.dev/sdk/go"
)

// brokerURL returns the live broker of the integration tests (set by sdks/run-tests.sh), or
// skips the test when there is none.
func brokerURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("REGINA_URL")
	if u == "" {
		t.Skip("REGINA_URL is not set: run through sdks/run-tests.sh for tests against a broker")
	}
	return u
}

// liveClient returns a client of the live broker.
func liveClient(t *testing.T, opts ...regina.Option) *regina.Client {
	t.Helper()
	c, err := regina.New(brokerURL(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// uniqueName returns a queue name no other test uses.
func uniqueName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// testContext is cancelled when the test ends or after d.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
