package regina

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Stream is a stream sourced from a queue: chain operators, a sink (To or Foreach), then Run.
// Every operator returns a new Stream, so a stream can be kept and extended without side
// effects:
//
//	run, err := client.Stream("payments").
//		WindowTumbling(time.Minute).
//		Aggregate(map[string]regina.Extractor{"count": nil, "sum": amountOf}).
//		To("payments-per-minute").
//		Run(ctx, regina.RunOptions{QueryID: "payments-per-minute"})
//
// A setting that is out of range (a non-positive window, say) is reported by Run and
// ConfigHash, not by the operator.
type Stream struct {
	client *Client
	source string
	stages []stage
	err    error
}

// WindowedStream is a windowed stream: Reduce or Aggregate says how each window's values combine.
type WindowedStream struct {
	s *Stream
}

// WindowOption refines a window.
type WindowOption func(*windowSpec, *error)

// Stream starts a stream on the source queue.
func (c *Client) Stream(queue string) *Stream {
	s := &Stream{client: c, source: queue}
	if queue == "" {
		s.err = chainError("Stream needs a source queue name")
	}
	return s
}

func (s *Stream) then(st stage, err error) *Stream {
	next := &Stream{client: s.client, source: s.source, err: s.err,
		stages: append(append([]stage(nil), s.stages...), st)}
	if next.err == nil {
		next.err = err
	}
	return next
}

func nilFn(ok bool, op string) error {
	if ok {
		return nil
	}
	return chainError("%s needs a function", op)
}

// Map replaces each value by fn(value).
func (s *Stream) Map(fn MapFunc) *Stream {
	return s.then(stage{kind: "map", mapFn: fn}, nilFn(fn != nil, "Map"))
}

// Filter keeps the values for which fn returns true.
func (s *Stream) Filter(fn FilterFunc) *Stream {
	return s.then(stage{kind: "filter", filterFn: fn}, nilFn(fn != nil, "Filter"))
}

// FlatMap replaces each value by the values fn returns (none, one or several).
func (s *Stream) FlatMap(fn FlatMapFunc) *Stream {
	return s.then(stage{kind: "flatMap", flatFn: fn}, nilFn(fn != nil, "FlatMap"))
}

// KeyBy keys the values for the window or gate that follows (default: the source partition id).
func (s *Stream) KeyBy(fn KeyFunc) *Stream {
	return s.then(stage{kind: "keyBy", keyFn: fn}, nilFn(fn != nil, "KeyBy"))
}

// WindowTumbling makes fixed windows of size, aligned to the epoch.
func (s *Stream) WindowTumbling(size time.Duration, opts ...WindowOption) *WindowedStream {
	ms, err := wholeMillis(size, "WindowTumbling size", false)
	return s.window(&windowSpec{kind: "tumbling", sizeMs: ms, slideMs: ms}, err, opts)
}

// WindowSliding makes windows of size starting every slide (size a multiple of slide).
func (s *Stream) WindowSliding(size, slide time.Duration, opts ...WindowOption) *WindowedStream {
	sizeMs, err := wholeMillis(size, "WindowSliding size", false)
	slideMs, err2 := wholeMillis(slide, "WindowSliding slide", false)
	if err == nil {
		err = err2
	}
	if err == nil && sizeMs%slideMs != 0 {
		err = chainError("WindowSliding size must be a multiple of slide")
	}
	return s.window(&windowSpec{kind: "sliding", sizeMs: sizeMs, slideMs: slideMs}, err, opts)
}

// WindowSession makes per-key sessions that close after gap without events.
func (s *Stream) WindowSession(gap time.Duration, opts ...WindowOption) *WindowedStream {
	ms, err := wholeMillis(gap, "WindowSession gap", false)
	return s.window(&windowSpec{kind: "session", sizeMs: ms, slideMs: ms}, err, opts)
}

// WindowCron makes calendar windows in UTC: every second, minute, hour, day or week (from
// Monday).
func (s *Stream) WindowCron(every CronEvery, opts ...WindowOption) *WindowedStream {
	period, ok := cronPeriods[every]
	var err error
	if !ok {
		err = chainError("WindowCron every must be second, minute, hour, day or week, not %q", every)
	}
	ms := period.Milliseconds()
	return s.window(&windowSpec{kind: "cron", sizeMs: ms, slideMs: ms, every: every}, err, opts)
}

func (s *Stream) window(w *windowSpec, err error, opts []WindowOption) *WindowedStream {
	w.onLate = LateDrop
	w.idleFlushMs = DefaultIdleFlush.Milliseconds()
	if w.kind == "session" {
		w.idleFlushMs = DefaultSessionIdleFlush.Milliseconds()
	}
	for _, opt := range opts {
		opt(w, &err)
	}
	return &WindowedStream{s.then(stage{kind: "window", window: w}, err)}
}

// GracePeriod keeps a window open for d after its end.
func GracePeriod(d time.Duration) WindowOption {
	return func(w *windowSpec, err *error) { w.graceMs = setMillis(d, "GracePeriod", err) }
}

// IdleFlush sets the period of the flush that closes windows of quiet partitions (0: off).
func IdleFlush(d time.Duration) WindowOption {
	return func(w *windowSpec, err *error) { w.idleFlushMs = setMillis(d, "IdleFlush", err) }
}

// EventTime takes each value's time from fn instead of the message's CreatedAt.
func EventTime(fn EventTimeFunc) WindowOption {
	return func(w *windowSpec, _ *error) { w.eventTime = fn }
}

// AllowedLateness is the out-of-orderness the event-time watermark tolerates.
func AllowedLateness(d time.Duration) WindowOption {
	return func(w *windowSpec, err *error) { w.latenessMs = setMillis(d, "AllowedLateness", err) }
}

// OnLate says what happens to event-time events older than the watermark (default LateDrop).
func OnLate(p LatePolicy) WindowOption {
	return func(w *windowSpec, err *error) {
		if p != LateDrop && p != LateInclude && *err == nil {
			*err = chainError("OnLate must be LateDrop or LateInclude, not %q", p)
		}
		w.onLate = p
	}
}

func setMillis(d time.Duration, what string, err *error) int64 {
	ms, e := wholeMillis(d, what, true)
	if e != nil && *err == nil {
		*err = e
	}
	return ms
}

func wholeMillis(d time.Duration, what string, zeroOK bool) (int64, error) {
	if d < 0 || (d == 0 && !zeroOK) || d%time.Millisecond != 0 {
		return 0, chainError("%s must be a positive whole number of milliseconds, not %s", what, d)
	}
	return d.Milliseconds(), nil
}

// Reduce folds each window's values with fn, starting from a copy of initial (a JSON value).
func (w *WindowedStream) Reduce(fn ReduceFunc, initial any) *Stream {
	return w.s.then(stage{kind: "reduce", reduceFn: fn, initial: initial}, nilFn(fn != nil, "Reduce"))
}

// Aggregate computes named statistics per window: count, sum, min, max and avg of the numbers
// the extractors return; any other name is a sum. count counts 1 per value unless its extractor
// returns a number; a nil extractor returns nothing.
func (w *WindowedStream) Aggregate(fields map[string]Extractor) *Stream {
	var err error
	copied := make(map[string]Extractor, len(fields))
	for name, fn := range fields {
		if len(name) >= 2 && name[:2] == "__" {
			err = chainError("aggregate field names cannot start with __: %q", name)
		}
		if fn == nil {
			fn = func(any) any { return nil }
		}
		copied[name] = fn
	}
	if len(fields) == 0 {
		err = chainError("Aggregate needs at least one field")
	}
	return w.s.then(stage{kind: "aggregate", fields: copied}, err)
}

// Gate lets values through while fn returns true; the first false parks the rest of the
// partition's batch until the lease ends. g.State is the key's persistent state (see
// TokenBucketGate).
func (s *Stream) Gate(fn GateFunc) *Stream {
	return s.then(stage{kind: "gate", gateFn: fn}, nilFn(fn != nil, "Gate"))
}

// SinkOption refines To.
type SinkOption func(*stage)

// SinkPartition pushes every value to the named partition.
func SinkPartition(name string) SinkOption { return func(s *stage) { s.partition = name } }

// SinkPartitionBy chooses each value's partition.
func SinkPartitionBy(fn PartitionFunc) SinkOption { return func(s *stage) { s.partFn = fn } }

// To pushes every value to queue in the cycle that acks the source (exactly once); the partition
// is the source's unless a SinkOption chooses one.
func (s *Stream) To(queue string, opts ...SinkOption) *Stream {
	st := stage{kind: "to", queue: queue}
	for _, opt := range opts {
		opt(&st)
	}
	return s.then(st, nilFn(queue != "", "To (a queue name)"))
}

// Foreach calls fn for every value before the cycle commits (at least once).
func (s *Stream) Foreach(fn ForeachFunc) *Stream {
	return s.then(stage{kind: "foreach", foreachFn: fn}, nilFn(fn != nil, "Foreach"))
}

// ConfigHash returns the config_hash the chain registers with (SHA-256 hex of its shape).
//
// # Errors
//
// An error wrapping the reason the chain is invalid.
func (s *Stream) ConfigHash() (string, error) {
	c, err := s.compile()
	if err != nil {
		return "", err
	}
	return configHash(c.shape), nil
}

func (s *Stream) compile() (*compiledChain, error) {
	if s.err != nil {
		return nil, s.err
	}
	return compileChain(s.stages)
}

// Run registers the query and starts processing in the background; it returns once the query is
// registered. The run stops when ctx is cancelled or Stop is called; requests already in flight
// then complete (they do not use ctx).
//
// # Errors
//
// An invalid chain or options; ErrConfigHashMismatch (409) when the query exists with another
// chain and Reset is false; any other refusal of the registration (*Error, *NetworkError).
func (s *Stream) Run(ctx context.Context, opts RunOptions) (*StreamRun, error) {
	c, err := s.compile()
	if err != nil {
		return nil, err
	}
	if opts.QueryID == "" {
		return nil, fmt.Errorf("%w: Run needs a QueryID", errChain)
	}
	opts = withRunDefaults(opts)
	if opts.BatchSize < 1 || opts.MaxPartitions < 1 || opts.MaxWait < 0 {
		return nil, fmt.Errorf("%w: BatchSize and MaxPartitions must be at least 1", errChain)
	}
	sink := ""
	if c.sink != nil && c.sink.kind == "to" {
		sink = c.sink.queue
	}
	reg, err := s.client.registerQuery(ctx, opts.QueryID, s.source, sink, configHash(c.shape), opts.Reset)
	if err != nil {
		return nil, err
	}
	group := opts.ConsumerGroup
	if group == "" {
		group = "streams." + opts.QueryID
	}
	r := &StreamRun{client: s.client, chain: c, source: s.source, opts: opts, group: group, registration: reg,
		work: context.WithoutCancel(ctx), stopping: make(chan struct{}), done: make(chan struct{}),
		metrics: StreamMetrics{QueryID: reg.QueryID, Name: reg.Name}, recent: map[string]recentPartition{},
		watermarks: map[string]int64{}, locks: map[string]*sync.Mutex{}}
	r.start(ctx)
	return r, nil
}

func withRunDefaults(opts RunOptions) RunOptions {
	if opts.BatchSize == 0 {
		opts.BatchSize = 200
	}
	if opts.MaxPartitions == 0 {
		opts.MaxPartitions = 4
	}
	if opts.MaxWait == 0 {
		opts.MaxWait = time.Second
	}
	return opts
}
