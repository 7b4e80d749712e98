package regina_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	regina "regina.dev/sdk/go"
)

// Consumer-loop behaviour against the live broker.

// seed creates a queue with opts and pushes the payloads 1..n to partition p.
func seed(t *testing.T, c *regina.Client, n int, p string, opts ...regina.QueueOption) string {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	name := uniqueName("go-consume")
	if _, err := c.Queue(name).Config(opts...).Create(ctx); err != nil {
		t.Fatal(err)
	}
	items := make([]regina.Item, n)
	for i := range items {
		items[i] = regina.Item{Payload: i + 1, TransactionID: fmt.Sprintf("t%d", i+1)}
	}
	if _, err := c.Queue(name).Partition(p).Push(ctx, items...); err != nil {
		t.Fatal(err)
	}
	return name
}

func payloadOf(t *testing.T, m *regina.Message) int {
	t.Helper()
	var n int
	if err := m.Decode(&n); err != nil {
		t.Errorf("decoding %s: %v", m.Data, err)
	}
	return n
}

// assertDrained checks that group has nothing left to receive on queue.
func assertDrained(t *testing.T, c *regina.Client, queue, group string) {
	t.Helper()
	msgs, err := c.Queue(queue).Group(group).Batch(100).Pop(testContext(t, 10*time.Second))
	if err != nil || len(msgs) != 0 {
		t.Fatalf("group %s still receives %d messages (err %v)", group, len(msgs), err)
	}
}

func failOnError(t *testing.T) func(error) {
	return func(err error) { t.Errorf("consumer reported: %v", err) }
}

func TestConsumeHandlesEachMessageInOrderAndAcksIt(t *testing.T) {
	c := liveClient(t)
	q := seed(t, c, 25, "p")
	var got []int
	sum, err := c.Queue(q).Group("g").Batch(10).Limit(25).IdleTimeout(5*time.Second).OnError(failOnError(t)).
		Consume(testContext(t, 30*time.Second), func(_ context.Context, m *regina.Message) error {
			got = append(got, payloadOf(t, m))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range got {
		if n != i+1 {
			t.Fatalf("handled %v, want 1..25 in order", got)
		}
	}
	if len(got) != 25 || sum != (regina.ConsumeSummary{Messages: 25, StoppedBy: regina.StopLimit}) {
		t.Fatalf("handled %d messages, summary %+v", len(got), sum)
	}
	assertDrained(t, c, q, "g")
}

func TestAFailingHandlerFailsTheMessageWithItsErrorText(t *testing.T) {
	c := liveClient(t)
	q := seed(t, c, 3, "p", regina.RetryLimit(0))
	var calls []int
	sum, err := c.Queue(q).Group("g").Batch(3).Limit(3).IdleTimeout(3*time.Second).
		Consume(testContext(t, 30*time.Second), func(_ context.Context, m *regina.Message) error {
			n := payloadOf(t, m)
			calls = append(calls, n)
			if n == 2 {
				return errors.New("cannot bill order 2")
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// 1 completed; 2 failed (retryLimit 0: straight to the DLQ); 3 skipped in the failed batch
	// and delivered again by the next pop.
	if fmt.Sprint(calls) != "[1 2 3]" || sum != (regina.ConsumeSummary{Messages: 3, Failures: 1, StoppedBy: regina.StopLimit}) {
		t.Fatalf("handler calls %v, want [1 2 3]; summary %+v", calls, sum)
	}
	page, err := c.DLQ(testContext(t, 10*time.Second), regina.DLQFilter{Queue: q, ConsumerGroup: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 1 || page.Messages[0].TransactionID != "t2" ||
		page.Messages[0].ErrorMessage != "cannot bill order 2" {
		t.Fatalf("DLQ %+v", page.Messages)
	}
	assertDrained(t, c, q, "g")
}

func TestAPanickingHandlerIsAFailureNotACrash(t *testing.T) {
	c := liveClient(t)
	q := seed(t, c, 1, "p", regina.RetryLimit(0))
	_, err := c.Queue(q).Group("g").Limit(1).IdleTimeout(3*time.Second).
		Consume(testContext(t, 30*time.Second), func(context.Context, *regina.Message) error { panic("boom") })
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.DLQ(testContext(t, 10*time.Second), regina.DLQFilter{Queue: q, ConsumerGroup: "g"})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].ErrorMessage != "handler panic: boom" {
		t.Fatalf("DLQ %+v (err %v)", page, err)
	}
}

func TestABatchHandlerFailureChargesOneAttemptAndRedeliversTheBatch(t *testing.T) {
	c := liveClient(t)
	q := seed(t, c, 3, "p", regina.RetryLimit(1))
	var batches [][]int
	var retryCounts []int
	sum, err := c.Queue(q).Group("g").Batch(3).Limit(9).IdleTimeout(2*time.Second).
		ConsumeBatch(testContext(t, 30*time.Second), func(_ context.Context, batch []*regina.Message) error {
			var ns []int
			for _, m := range batch {
				ns = append(ns, payloadOf(t, m))
			}
			batches = append(batches, ns)
			retryCounts = append(retryCounts, batch[0].RetryCount)
			if len(batches) <= 2 {
				return errors.New("downstream unavailable")
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// Two failures charge the head (message 1) twice: over retryLimit 1 it is dead-lettered, and
	// the rest of the batch comes again.
	if sum != (regina.ConsumeSummary{Messages: 8, Failures: 2, StoppedBy: regina.StopIdle}) {
		t.Fatalf("summary %+v", sum)
	}
	if fmt.Sprint(batches) != "[[1 2 3] [1 2 3] [2 3]]" || fmt.Sprint(retryCounts) != "[0 1 0]" {
		t.Fatalf("batches %v with head retry counts %v", batches, retryCounts)
	}
	page, err := c.DLQ(testContext(t, 10*time.Second), regina.DLQFilter{Queue: q, ConsumerGroup: "g"})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].TransactionID != "t1" {
		t.Fatalf("DLQ %+v (err %v)", page, err)
	}
	assertDrained(t, c, q, "g")
}

func TestLimitStopsAfterExactlyThatManyMessages(t *testing.T) {
	c := liveClient(t)
	q := seed(t, c, 10, "p")
	var handled atomic.Int32
	sum, err := c.Queue(q).Group("g").Batch(4).Concurrency(3).Limit(6).OnError(failOnError(t)).
		Consume(testContext(t, 30*time.Second), func(context.Context, *regina.Message) error {
			handled.Add(1)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if handled.Load() != 6 || sum.Messages != 6 || sum.StoppedBy != regina.StopLimit {
		t.Fatalf("handled %d, summary %+v: want 6 and a limit stop", handled.Load(), sum)
	}
	rest, err := c.Queue(q).Group("g").Batch(10).Pop(testContext(t, 10*time.Second))
	if err != nil || len(rest) != 4 || payloadOf(t, rest[0]) != 7 {
		t.Fatalf("after the limit the group gets %d messages (err %v), want 7..10", len(rest), err)
	}
}

// Without the idle time its long-polls would last DefaultPopWait (30 s) and the test's context
// would end the consumer first: only the idle time can stop it with StopIdle.
func TestIdleTimeoutStopsAnIdleConsumer(t *testing.T) {
	c := liveClient(t)
	start := time.Now()
	sum, err := c.Queue(uniqueName("go-idle")).Group("g").IdleTimeout(300*time.Millisecond).
		Consume(testContext(t, 30*time.Second), func(context.Context, *regina.Message) error {
			t.Error("no message was pushed")
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if sum.StoppedBy != regina.StopIdle || sum.Messages != 0 {
		t.Fatalf("summary %+v", sum)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("stopped after %s, before its idle time of 300ms", d)
	}
}

func TestCancellingStopsGracefully(t *testing.T) {
	c := liveClient(t)
	q := seed(t, c, 5, "p")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started, finish := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	var handlerCtxErr error
	type outcome struct {
		sum regina.ConsumeSummary
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		sum, err := c.Queue(q).Group("g").Batch(5).OnError(failOnError(t)).
			Consume(ctx, func(hctx context.Context, m *regina.Message) error {
				if calls.Add(1) == 1 {
					close(started)
					<-finish
					handlerCtxErr = hctx.Err()
				}
				return nil
			})
		done <- outcome{sum, err}
	}()
	<-started
	cancel()
	time.Sleep(100 * time.Millisecond) // the loop sees the cancellation while the handler runs
	close(finish)
	select {
	case out := <-done:
		if out.err != nil || out.sum != (regina.ConsumeSummary{Messages: 1, StoppedBy: regina.StopCancelled}) {
			t.Fatalf("Consume returned %+v, %v after a cancellation", out.sum, out.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Consume did not stop")
	}
	if calls.Load() != 1 || handlerCtxErr != nil {
		t.Fatalf("%d handler calls, handler context %v: want 1 call that ran to its end", calls.Load(), handlerCtxErr)
	}
	// The in-flight message was acked; the four popped but unhandled ones were released at once
	// (no waiting for the lease to expire) and come back without a failed attempt.
	rest, err := c.Queue(q).Group("g").Batch(10).Pop(testContext(t, 10*time.Second))
	if err != nil || len(rest) != 4 || payloadOf(t, rest[0]) != 2 || rest[0].RetryCount != 0 {
		t.Fatalf("after stopping the group gets %d messages (err %v), want 2..5", len(rest), err)
	}
}

func TestLeaseRenewalKeepsLongWorkLeased(t *testing.T) {
	c := liveClient(t)
	// A renewal every 0.3 s keeps a 3 s lease (each has seconds to arrive) while the handler
	// outlasts it.
	q := seed(t, c, 1, "p", regina.LeaseTime(3*time.Second))
	var calls atomic.Int32
	_, err := c.Queue(q).Group("g").Limit(1).RenewLease(true, 300*time.Millisecond).OnError(failOnError(t)).
		Consume(testContext(t, 30*time.Second), func(context.Context, *regina.Message) error {
			calls.Add(1)
			time.Sleep(4 * time.Second) // past the lease as it was before the renewals
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("%d handler calls", calls.Load())
	}
	assertDrained(t, c, q, "g")
}

func TestConcurrencyRunsThatManyHandlersAtOnce(t *testing.T) {
	c := liveClient(t)
	ctx := testContext(t, 30*time.Second)
	q := uniqueName("go-concurrency")
	for p := 0; p < 4; p++ {
		if _, err := c.Queue(q).Partition(fmt.Sprintf("p%d", p)).Push(ctx, regina.Item{Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	var running, peak atomic.Int32
	var mu sync.Mutex
	seen := map[string]bool{}
	_, err := c.Queue(q).Group("g").Concurrency(2).Limit(4).OnError(failOnError(t)).
		Consume(ctx, func(_ context.Context, m *regina.Message) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			mu.Lock()
			seen[m.Partition] = true
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 2 || len(seen) != 4 {
		t.Fatalf("peak %d concurrent handlers over %d partitions, want 2 over 4", peak.Load(), len(seen))
	}
}

func TestAutoAckConsumerNeedsNoAcks(t *testing.T) {
	c := liveClient(t)
	q := seed(t, c, 3, "p")
	var got []int
	_, err := c.Queue(q).Group("g").Batch(10).AutoAck(true).Limit(3).OnError(failOnError(t)).
		Consume(testContext(t, 30*time.Second), func(_ context.Context, m *regina.Message) error {
			if m.LeaseID != "" {
				t.Errorf("autoAck delivery with lease %q", m.LeaseID)
			}
			got = append(got, payloadOf(t, m))
			return nil
		})
	if err != nil || fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("got %v, err %v", got, err)
	}
	assertDrained(t, c, q, "g")
}

func TestAnInvalidConsumerSettingEndsConsumeWithTheBrokersError(t *testing.T) {
	c := liveClient(t)
	// A batch beyond the broker's POP_BATCH_MAX (10 000 by default) is refused with a 400. (Any
	// subscriptionMode value is accepted: an unknown one means "all".)
	sum, err := c.Queue(uniqueName("go-invalid")).Group("g").Batch(10_001).IdleTimeout(5*time.Second).
		Consume(testContext(t, 30*time.Second), func(context.Context, *regina.Message) error { return nil })
	var e *regina.Error
	if !errors.As(err, &e) || e.Status != 400 || sum.StoppedBy != regina.StopError {
		t.Fatalf("want a 400 *regina.Error, got %v (summary %+v)", err, sum)
	}
}

func TestMessagesTheHandlerAckedItselfAreNotAckedAgain(t *testing.T) {
	c := liveClient(t)
	q := seed(t, c, 2, "p")
	var reports []error
	_, err := c.Queue(q).Group("g").Batch(2).Limit(2).
		OnError(func(err error) { reports = append(reports, err) }).
		Consume(testContext(t, 30*time.Second), func(ctx context.Context, m *regina.Message) error {
			// Settled by the handler; a second ack from the consumer would be reported.
			res, err := c.Ack(ctx, m, regina.DLQ, regina.WithReason("not for us"))
			if err == nil {
				err = res.Err()
			}
			return err
		})
	if err != nil || len(reports) != 0 {
		t.Fatalf("err %v, reports %v", err, reports)
	}
	page, err := c.DLQ(testContext(t, 10*time.Second), regina.DLQFilter{Queue: q, ConsumerGroup: "g"})
	if err != nil || page.Total != 2 {
		t.Fatalf("DLQ %+v (err %v)", page, err)
	}
}
