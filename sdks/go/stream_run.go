package regina

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The running stream: pops the source with the ordinary pop API, runs each partition's batch
// through the chain and commits one cycle per partition; window streams also run the idle flush
// that closes windows of partitions that went quiet. A partition's batch and its flushes never
// overlap within one run. A failed batch is acked failed on its first message: the lease ends, an
// attempt is charged, and the broker delivers the batch again (after retryLimit failures the head
// is dead-lettered, as with the consumer).

const (
	recentPartitionWindow = 5 * time.Minute // partitions touched within this long are flushed
	popErrorPause         = time.Second     // pause after a pop failed on every server
)

// RunOptions are the settings of Stream.Run.
type RunOptions struct {
	// QueryID is the durable name of the query: its state, its consumer group and its
	// registration. Required.
	QueryID string
	// BatchSize is the number of messages per pop (default 200).
	BatchSize int
	// MaxPartitions is the number of partitions per pop (default 4).
	MaxPartitions int
	// MaxWait is the long-poll wait of a pop (default 1 s).
	MaxWait time.Duration
	// Reset consents to dropping the query's state when its chain changed.
	Reset bool
	// ConsumerGroup of the source (default "streams.<QueryID>").
	ConsumerGroup string
	// SubscriptionMode and SubscriptionFrom say where a new group starts.
	SubscriptionMode string
	SubscriptionFrom time.Time
	// OnError is called for every failure that does not end the run (a batch, a flush, a pop).
	OnError func(err error, where StreamErrorContext)
}

// StreamErrorContext says where a reported failure happened: Phase is pop, state, process,
// foreach, cycle or flush.
type StreamErrorContext struct {
	Phase, Partition, PartitionID string
}

// StreamMetrics are the counters of a run.
type StreamMetrics struct {
	QueryID, Name string
	// PopsTotal counts pops answered (empty ones included).
	PopsTotal int64
	// CyclesTotal counts cycles that settled source messages; FlushCyclesTotal ack-less cycles
	// of the idle flush.
	CyclesTotal, FlushCyclesTotal int64
	// MessagesTotal counts source messages settled by cycles.
	MessagesTotal int64
	// ResultsTotal counts records that reached the sink (pushed or given to Foreach) in
	// committed cycles; PushItemsTotal the sink items pushed.
	ResultsTotal, PushItemsTotal int64
	StateOpsTotal                int64
	// LateEventsTotal counts event-time events older than the watermark (dropped or included).
	LateEventsTotal int64
	// GateAllowsTotal counts records a gate allowed in committed cycles; GateDenialsTotal the
	// times a gate denied a record (each parks the rest of a batch).
	GateAllowsTotal, GateDenialsTotal int64
	// ErrorsTotal counts failures reported to OnError; LastError is the latest.
	ErrorsTotal              int64
	LastError                string
	LastCycleAt, LastFlushAt time.Time
}

// StreamRun is a running stream.
type StreamRun struct {
	client       *Client
	chain        *compiledChain
	source       string
	opts         RunOptions
	group        string
	registration Registration
	work         context.Context // requests of the run; not cancelled by a stop
	stopping     chan struct{}
	stopOnce     sync.Once
	done         chan struct{}
	err          error

	mu         sync.Mutex
	metrics    StreamMetrics
	recent     map[string]recentPartition
	watermarks map[string]int64
	locks      map[string]*sync.Mutex
}

type recentPartition struct {
	name string
	at   time.Time
}

// Registration is the registration answer: the broker's query id, and whether it was created or
// reset.
func (r *StreamRun) Registration() Registration { return r.registration }

// Metrics returns a snapshot of the counters.
func (r *StreamRun) Metrics() StreamMetrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metrics
}

// Stop stops gracefully — the pop in flight ends (within MaxWait) and its batches are committed —
// and returns when the run has ended.
func (r *StreamRun) Stop() {
	r.stopOnce.Do(func() { close(r.stopping) })
	<-r.done
}

// Wait blocks until the run ends (Stop, the Run context, or a refused pop).
//
// # Errors
//
// Wait returns the *Error of a pop the broker refused with a 4xx, which ended the run.
func (r *StreamRun) Wait() error {
	<-r.done
	return r.err
}

func (r *StreamRun) start(ctx context.Context) {
	var loops sync.WaitGroup
	loops.Add(1)
	go func() {
		defer loops.Done()
		if err := r.popLoop(); err != nil {
			r.err = err
			r.stopOnce.Do(func() { close(r.stopping) })
		}
	}()
	if w := r.chain.window; w != nil && w.idleFlushMs > 0 {
		loops.Add(1)
		go func() {
			defer loops.Done()
			r.flushLoop(time.Duration(w.idleFlushMs) * time.Millisecond)
		}()
	}
	go func() {
		select {
		case <-ctx.Done():
			r.stopOnce.Do(func() { close(r.stopping) })
		case <-r.stopping:
		}
	}()
	go func() {
		loops.Wait()
		close(r.done)
	}()
}

func (r *StreamRun) stopped() bool {
	select {
	case <-r.stopping:
		return true
	default:
		return false
	}
}

// pause waits d or until the run stops; it reports whether the run is stopping.
func (r *StreamRun) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.stopping:
		return true
	case <-t.C:
		return false
	}
}

func (r *StreamRun) lock(partitionID string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.locks[partitionID]
	if !ok {
		l = &sync.Mutex{}
		r.locks[partitionID] = l
	}
	return l
}

func (r *StreamRun) popLoop() error {
	q := r.client.Queue(r.source).Group(r.group).Batch(r.opts.BatchSize).
		Partitions(r.opts.MaxPartitions).Wait(r.opts.MaxWait).SubscriptionMode(r.opts.SubscriptionMode)
	if !r.opts.SubscriptionFrom.IsZero() {
		q = q.SubscriptionFrom(r.opts.SubscriptionFrom)
	}
	for !r.stopped() {
		messages, err := q.Pop(r.work)
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Status < 500 && !hasStatus(err, streamRetryStatuses) {
				return err
			}
			r.report(err, StreamErrorContext{Phase: "pop"})
			r.pause(popErrorPause)
			continue
		}
		r.count(func(m *StreamMetrics) { m.PopsTotal++ })
		if len(messages) == 0 && r.opts.MaxWait < 100*time.Millisecond {
			r.pause(100 * time.Millisecond) // a pop that does not wait must not spin
		}
		for _, b := range byPartition(messages) {
			r.touch(b)
			l := r.lock(b.partitionID)
			l.Lock()
			r.process(b)
			l.Unlock()
		}
	}
	return nil
}

func (r *StreamRun) process(b partitionBatch) {
	phase := "state"
	err := func() (err error) {
		defer recoverInto(&err)
		rows := map[string]any{}
		if r.chain.stateful() {
			if rows, err = r.client.readState(r.work, r.registration.QueryID, b.partitionID, "", nil); err != nil {
				return err
			}
		}
		phase = "process"
		plan, err := processBatch(r.chain, b, rows, time.Now())
		if err != nil {
			return err
		}
		r.count(func(m *StreamMetrics) {
			m.GateDenialsTotal += int64(plan.denied)
			m.LateEventsTotal += int64(plan.late)
		})
		if plan.settled == 0 {
			return nil // a gate allowed nothing: the lease runs out and the batch comes again
		}
		phase = "foreach"
		items, err := r.deliver(plan.results)
		if err != nil {
			return err
		}
		phase = "cycle"
		last := b.messages[plan.settled-1]
		body := cycleBody{QueryID: r.registration.QueryID, PartitionID: b.partitionID, Group: r.group,
			StateOps: plan.stateOps, PushItems: items,
			Ack: &cycleAck{TransactionID: last.TransactionID, LeaseID: last.LeaseID, Status: Completed, Count: plan.settled}}
		if r.chain.gate != nil {
			body.ReleaseLease = &plan.release
		}
		if err := r.client.commitCycle(r.work, body); err != nil {
			return err
		}
		r.committed(plan, items, b.partitionID, false)
		return nil
	}()
	if err != nil {
		r.report(err, StreamErrorContext{Phase: phase, Partition: b.partition, PartitionID: b.partitionID})
		// The lease runs out instead if this fails; the batch comes again either way.
		_, _ = r.client.Ack(r.work, b.messages[0], Failed, WithReason(err.Error()))
	}
}

// deliver runs Foreach on the results, or turns them into sink items (ids fixed before any
// attempt).
func (r *StreamRun) deliver(results []record) ([]cycleItem, error) {
	sink := r.chain.sink
	if sink == nil {
		return nil, nil
	}
	if sink.kind == "foreach" {
		for _, res := range results {
			if err := sink.foreachFn(r.work, res.value, res.ctx); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	items := make([]cycleItem, len(results))
	for i, res := range results {
		partition := sink.partition
		if sink.partFn != nil {
			partition = sink.partFn(res.value, res.ctx)
		}
		if partition == "" {
			partition = res.ctx.Partition
		}
		items[i] = cycleItem{Queue: sink.queue, Partition: partition, Payload: res.value, TransactionID: newUUIDv7()}
		if res.ctx.Message != nil {
			items[i].TraceID = res.ctx.Message.TraceID
		}
	}
	return items, nil
}

func (r *StreamRun) flushLoop(every time.Duration) {
	for !r.pause(every) {
		for _, target := range r.flushTargets() {
			if r.stopped() {
				return
			}
			l := r.lock(target.id)
			l.Lock()
			r.flush(target.id, target.name)
			l.Unlock()
		}
	}
}

type flushTarget struct{ id, name string }

func (r *StreamRun) flushTargets() []flushTarget {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []flushTarget
	for id, p := range r.recent {
		if time.Since(p.at) > recentPartitionWindow {
			delete(r.recent, id)
			continue
		}
		out = append(out, flushTarget{id, p.name})
	}
	return out
}

func (r *StreamRun) flush(partitionID, partition string) {
	w := r.chain.window
	r.mu.Lock()
	clock, known := r.watermarks[partitionID]
	r.mu.Unlock()
	if w.eventTime == nil {
		clock, known = time.Now().UnixMilli(), true
	}
	if !known {
		return
	}
	err := func() (err error) {
		defer recoverInto(&err)
		ripe := clock - w.graceMs
		rows, err := r.client.readState(r.work, r.registration.QueryID, partitionID, flushPrefix(w), &ripe)
		if err != nil {
			return err
		}
		plan, err := flushPlan(r.chain, partition, partitionID, rows)
		if err != nil || len(plan.stateOps) == 0 {
			return err
		}
		items, err := r.deliver(plan.results)
		if err != nil {
			return err
		}
		body := cycleBody{QueryID: r.registration.QueryID, PartitionID: partitionID, Group: r.group,
			StateOps: plan.stateOps, PushItems: items}
		if err := r.client.commitCycle(r.work, body); err != nil {
			return err
		}
		r.committed(plan, items, partitionID, true)
		return nil
	}()
	if err != nil {
		r.report(err, StreamErrorContext{Phase: "flush", Partition: partition, PartitionID: partitionID})
	}
}

func (r *StreamRun) touch(b partitionBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recent[b.partitionID] = recentPartition{b.partition, time.Now()}
}

func (r *StreamRun) count(change func(*StreamMetrics)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.metrics)
}

func (r *StreamRun) committed(plan *batchPlan, items []cycleItem, partitionID string, flush bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &r.metrics
	if flush {
		m.FlushCyclesTotal++
		m.LastFlushAt = time.Now()
	} else {
		m.CyclesTotal++
		m.MessagesTotal += int64(plan.settled)
		m.LastCycleAt = time.Now()
	}
	m.ResultsTotal += int64(len(plan.results))
	m.PushItemsTotal += int64(len(items))
	m.StateOpsTotal += int64(len(plan.stateOps))
	m.GateAllowsTotal += int64(plan.allowed)
	if plan.mark != nil {
		r.watermarks[partitionID] = *plan.mark
	}
}

func (r *StreamRun) report(err error, where StreamErrorContext) {
	r.count(func(m *StreamMetrics) { m.ErrorsTotal++; m.LastError = err.Error() })
	if r.opts.OnError != nil {
		func() {
			defer func() { _ = recover() }() // a failing error handler must not stop the stream
			r.opts.OnError(err, where)
		}()
	}
}

// byPartition splits a pop into per-partition batches, each in delivery order.
func byPartition(messages []*Message) []partitionBatch {
	var order []string
	groups := map[string]*partitionBatch{}
	for _, m := range messages {
		b, ok := groups[m.PartitionID]
		if !ok {
			b = &partitionBatch{partition: m.Partition, partitionID: m.PartitionID}
			groups[m.PartitionID] = b
			order = append(order, m.PartitionID)
		}
		b.messages = append(b.messages, m)
	}
	out := make([]partitionBatch, len(order))
	for i, id := range order {
		out[i] = *groups[id]
	}
	return out
}

// recoverInto turns a panic of a user function into the batch's error.
func recoverInto(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("regina: stream operator panicked: %v", p)
	}
}
