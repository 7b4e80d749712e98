package regina

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ackTimeout bounds the acks a stopping consumer still sends.
const ackTimeout = 30 * time.Second

// consumeSettings are the consumer-only settings of a Queue builder.
type consumeSettings struct {
	concurrency int
	limit       int
	idle        time.Duration
	renewEvery  time.Duration
	onError     func(error)
}

// Concurrency sets how many pop-and-handle loops a consumer runs in parallel (default 1).
func (q *Queue) Concurrency(n int) *Queue {
	return q.with(func(c *Queue) { c.consume.concurrency = n })
}

// Limit stops a consumer after its handler has been given n messages.
func (q *Queue) Limit(n int) *Queue {
	return q.with(func(c *Queue) { c.consume.limit = n })
}

// IdleTimeout stops a consumer when no message has arrived (and no handler has finished) for d.
func (q *Queue) IdleTimeout(d time.Duration) *Queue {
	return q.with(func(c *Queue) { c.consume.idle = d })
}

// RenewLease makes a consumer extend the lease of the batch being handled every `every`, so
// handlers may run longer than the queue's leaseTime.
func (q *Queue) RenewLease(on bool, every time.Duration) *Queue {
	return q.with(func(c *Queue) {
		c.consume.renewEvery = 0
		if on {
			c.consume.renewEvery = every
		}
	})
}

// OnError receives a consumer's non-fatal errors: handler errors (after the message was acked
// failed), failed acks and renewals, and pops that failed after the client's retries (the
// consumer keeps going).
func (q *Queue) OnError(fn func(error)) *Queue {
	return q.with(func(c *Queue) { c.consume.onError = fn })
}

// Handler processes one message. Returning nil acks it completed; an error (or a panic) acks
// it failed with the error's text.
type Handler func(ctx context.Context, m *Message) error

// BatchHandler processes one pop's messages. Returning nil acks them all completed; an error
// (or a panic) acks them failed: one failed attempt is charged per partition, and the batch is
// delivered again (or the head reaches the DLQ after retryLimit attempts).
type BatchHandler func(ctx context.Context, batch []*Message) error

// Consume runs a consumer loop: long-poll pops with the builder's settings, handler called once
// per message in delivery order, acks sent for the outcomes. Messages the handler acked itself
// (Client.Ack, or a committed Transaction) are not acked again. After a failure in a partition,
// the rest of that partition's batch is left to be delivered again, in order.
//
// Consume returns when ctx is cancelled, when Limit messages were handled, or after IdleTimeout
// without messages; the summary says which. Stopping is graceful: handlers already running finish (their
// ctx is not cancelled) and are acked; popped messages not yet handled are released at once;
// nothing new is popped.
//
// # Errors
//
// A pop the broker rejects as invalid (*Error with a 4xx status) ends the loop with that error.
// Transient failures go to OnError and the loop continues.
func (q *Queue) Consume(ctx context.Context, h Handler) (ConsumeSummary, error) {
	return q.run(ctx, func(r *consumerRun, msgs []*Message) int { return r.handleEach(h, msgs) })
}

// ConsumeBatch is Consume with one handler call per pop.
//
// # Errors
//
// As Consume.
func (q *Queue) ConsumeBatch(ctx context.Context, h BatchHandler) (ConsumeSummary, error) {
	return q.run(ctx, func(r *consumerRun, msgs []*Message) int { return r.handleBatch(h, msgs) })
}

// StopReason tells why a consumer returned.
type StopReason string

// Stop reasons.
const (
	StopCancelled StopReason = "cancelled" // the caller's context ended
	StopLimit     StopReason = "limit"     // Limit messages were handled
	StopIdle      StopReason = "idle"      // IdleTimeout passed without messages
	StopError     StopReason = "error"     // the broker refused a pop (the error is returned)
)

// ConsumeSummary is what a finished consumer did.
type ConsumeSummary struct {
	// Messages counts the messages given to the handler (repeats included).
	Messages int
	// Failures counts handler calls that returned an error or panicked.
	Failures  int
	StoppedBy StopReason
}

// consumerRun is the shared state of one Consume call.
type consumerRun struct {
	q       *Queue
	stopped context.Context // cancelled to stop popping
	stop    context.CancelFunc
	work    context.Context // handler and ack context: the caller's values, never cancelled

	mu       sync.Mutex
	reserved int // messages requested by pops in flight
	handled  int // messages given to the handler
	fatal    error
	reason   StopReason
	failures atomic.Int32

	lastActivity atomic.Int64 // unix nanoseconds
}

func (q *Queue) run(ctx context.Context, process func(*consumerRun, []*Message) int) (ConsumeSummary, error) {
	stopped, stop := context.WithCancel(ctx)
	defer stop()
	r := &consumerRun{q: q, stopped: stopped, stop: stop, work: context.WithoutCancel(ctx)}
	r.touch()
	workers := max(q.consume.concurrency, 1)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.loop(process)
		}()
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reason == "" {
		r.reason = StopCancelled
	}
	summary := ConsumeSummary{Messages: r.handled, Failures: int(r.failures.Load()), StoppedBy: r.reason}
	return summary, r.fatal
}

// loop is one worker: pop, handle, ack, until the run stops.
func (r *consumerRun) loop(process func(*consumerRun, []*Message) int) {
	failures := 0
	for r.stopped.Err() == nil {
		wait, ok := r.pollWait()
		if !ok {
			r.stopFor(StopIdle)
			return
		}
		n := r.reserve()
		if n == 0 {
			return // the limit is reserved by other workers, which finish it
		}
		msgs, err := r.q.pop(r.stopped, &n, &wait)
		if err != nil {
			r.release(n)
			if r.stopped.Err() != nil {
				return
			}
			var e *Error
			if errors.As(err, &e) && e.Status < 500 && e.Code != CodeQueueFull {
				r.fail(err)
				return
			}
			r.report(err)
			_ = sleep(r.stopped, r.q.client.backoff(failures, err))
			failures++
			continue
		}
		failures = 0
		if len(msgs) == 0 {
			r.release(n)
			continue
		}
		r.touch()
		handled := process(r, msgs)
		r.finish(n, handled)
		r.touch()
	}
}

// pollWait returns the long-poll timeout of the next pop, or false when the idle time is spent.
func (r *consumerRun) pollWait() (time.Duration, bool) {
	idle := r.q.consume.idle
	if idle <= 0 {
		return DefaultPopWait, true
	}
	left := idle - time.Since(time.Unix(0, r.lastActivity.Load()))
	if left < time.Millisecond {
		return 0, false
	}
	return min(left, DefaultPopWait), true
}

// reserve returns the batch size of the next pop, within what the limit leaves.
func (r *consumerRun) reserve() int {
	batch := 1
	if r.q.batch != nil && *r.q.batch > 0 {
		batch = *r.q.batch
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	limit := r.q.consume.limit
	if limit > 0 {
		batch = min(batch, limit-r.handled-r.reserved)
		if r.handled >= limit {
			r.stopLocked(StopLimit)
		}
		if batch <= 0 {
			return 0
		}
	}
	r.reserved += batch
	return batch
}

func (r *consumerRun) release(n int) {
	r.mu.Lock()
	r.reserved -= n
	r.mu.Unlock()
}

// finish accounts a handled pop and stops the run when the limit is reached.
func (r *consumerRun) finish(reserved, handled int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reserved -= reserved
	r.handled += handled
	if r.q.consume.limit > 0 && r.handled >= r.q.consume.limit {
		r.stopLocked(StopLimit)
	}
}

func (r *consumerRun) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fatal == nil {
		r.fatal = err
	}
	r.stopLocked(StopError)
}

func (r *consumerRun) stopFor(reason StopReason) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked(reason)
}

// stopLocked stops popping; the first reason given is the one reported.
func (r *consumerRun) stopLocked(reason StopReason) {
	if r.reason == "" && r.stopped.Err() == nil {
		r.reason = reason
	}
	r.stop()
}

func (r *consumerRun) report(err error) {
	if fn := r.q.consume.onError; fn != nil && err != nil {
		fn(err)
	}
}

func (r *consumerRun) touch() { r.lastActivity.Store(time.Now().UnixNano()) }

// handleEach calls h per message and acks the outcomes; it returns how many messages h was given.
func (r *consumerRun) handleEach(h Handler, msgs []*Message) int {
	defer r.renewing(msgs)()
	var acks []Acknowledgment
	failed := map[string]bool{} // partitions whose lease a failure ended
	released := map[string]bool{}
	handled := 0
	for _, m := range msgs {
		if failed[m.PartitionID] || released[m.PartitionID] {
			continue
		}
		if r.stopped.Err() != nil {
			// Stopping: hand the partition back at once, without charging an attempt.
			released[m.PartitionID] = true
			if !r.q.autoAck {
				acks = append(acks, Acknowledgment{Message: m, Status: Retry})
			}
			continue
		}
		err := safeCall(func() error { return h(r.work, m) })
		handled++
		if err != nil {
			r.failures.Add(1)
			r.report(&HandlerError{Message: m, Err: err})
		}
		switch {
		case r.q.autoAck:
		case m.settled.Load():
		case err == nil:
			acks = append(acks, Acknowledgment{Message: m, Status: Completed})
		default:
			failed[m.PartitionID] = true
			acks = append(acks, Acknowledgment{Message: m, Status: Failed, Error: err.Error()})
		}
	}
	r.ack(acks)
	return handled
}

// handleBatch calls h once for msgs and acks the outcome.
func (r *consumerRun) handleBatch(h BatchHandler, msgs []*Message) int {
	defer r.renewing(msgs)()
	err := safeCall(func() error { return h(r.work, msgs) })
	if err != nil {
		r.failures.Add(1)
		r.report(&HandlerError{Message: msgs[0], Err: err})
	}
	if r.q.autoAck {
		return len(msgs)
	}
	var acks []Acknowledgment
	charged := map[string]bool{}
	for _, m := range msgs {
		switch {
		case m.settled.Load():
		case err == nil:
			acks = append(acks, Acknowledgment{Message: m, Status: Completed})
		case !charged[m.PartitionID]:
			// One failed ack per partition ends its lease and charges its head; the rest of
			// the partition's messages are delivered again.
			charged[m.PartitionID] = true
			acks = append(acks, Acknowledgment{Message: m, Status: Failed, Error: err.Error()})
		}
	}
	r.ack(acks)
	return len(msgs)
}

// ack sends the acks of one pop and reports those that did not succeed.
func (r *consumerRun) ack(acks []Acknowledgment) {
	if len(acks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.work, ackTimeout)
	defer cancel()
	results, err := r.q.client.AckBatch(ctx, acks)
	if err != nil {
		r.report(fmt.Errorf("regina: acking %d messages: %w", len(acks), err))
		return
	}
	for _, res := range results {
		if !res.Success {
			r.report(res.Err())
		}
	}
}

// renewing extends the lease of msgs every renewEvery until the returned func is called.
func (r *consumerRun) renewing(msgs []*Message) func() {
	every := r.q.consume.renewEvery
	if every <= 0 || r.q.autoAck || len(msgs) == 0 || msgs[0].LeaseID == "" {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				ctx, cancel := context.WithTimeout(r.work, every)
				res, err := r.q.client.RenewLease(ctx, msgs[0].LeaseID, 0)
				cancel()
				if err == nil {
					err = renewErr(res)
				}
				r.report(err)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func renewErr(res RenewResult) error {
	if res.Success {
		return nil
	}
	return &Error{Code: res.Code, Message: res.Error, Index: -1}
}

// safeCall runs fn and turns a panic into an error, so one bad message cannot kill the consumer.
func safeCall(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return fn()
}

// HandlerError is a handler's error as OnError receives it. Message is the message the handler
// failed (the first of the batch for a BatchHandler).
type HandlerError struct {
	Message *Message
	Err     error
}

func (e *HandlerError) Error() string {
	return fmt.Sprintf("regina: handler failed on %s/%s (transactionId %s): %v",
		e.Message.Queue, e.Message.Partition, e.Message.TransactionID, e.Err)
}

func (e *HandlerError) Unwrap() error { return e.Err }
