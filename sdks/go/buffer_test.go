package regina_test

import (
	"fmt"
	"testing"
	"time"

	regina "regina.dev/sdk/go"
)

// Client-side push buffers against the live broker.

func TestBufferSendsWhenFullAndWhenItsTimeIsUp(t *testing.T) {
	c := liveClient(t)
	ctx := testContext(t, 30*time.Second)
	q := uniqueName("go-buffer")
	full := c.Queue(q).Partition("full").Buffer(regina.BufferOptions{MessageCount: 2, FlushAfter: time.Hour})
	timed := c.Queue(q).Partition("timed").Buffer(regina.BufferOptions{MessageCount: 100, FlushAfter: 200 * time.Millisecond})

	for i := 1; i <= 3; i++ {
		if results, err := full.Push(ctx, regina.Item{Payload: i}); err != nil || results != nil {
			t.Fatalf("buffered push: %v %v", results, err)
		}
	}
	if _, err := timed.Push(ctx, regina.Item{Payload: "late"}); err != nil {
		t.Fatal(err)
	}

	// The count sent the first two at once; the third waits for a flush.
	got, err := c.Queue(q).Partition("full").Batch(10).AutoAck(true).Pop(ctx)
	if err != nil || payloads(t, got) != "[1 2]" {
		t.Fatalf("after two pushes the partition holds %s (err %v)", payloads(t, got), err)
	}
	// The timer sends the other partition's item without a flush: the long-poll, far from its
	// timeout on a broker that re-checks parked pops only on events, gets it.
	got, err = c.Queue(q).Partition("timed").Wait(25 * time.Second).AutoAck(true).Pop(ctx)
	if err != nil || payloads(t, got) != "[late]" {
		t.Fatalf("timed buffer delivered %s (err %v)", payloads(t, got), err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, err = c.Queue(q).Partition("full").Batch(10).AutoAck(true).Pop(ctx)
	if err != nil || payloads(t, got) != "[3]" {
		t.Fatalf("Close flushed %s (err %v)", payloads(t, got), err)
	}
}

func payloads(t *testing.T, msgs []*regina.Message) string {
	t.Helper()
	out := make([]any, len(msgs))
	for i, m := range msgs {
		if err := m.Decode(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprint(out)
}
