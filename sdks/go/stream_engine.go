package regina

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// What a stream does with one partition's batch, without any I/O: the stateless operators, the
// windows with their reducers, the gate and the idle flush. The runner feeds it messages and state
// rows and sends what it returns (state operations, results and the ack) as one cycle.
//
// State keys are shared by every Regina SDK: windows <tag>\x1f<windowStart ISO>\x1f<key> with value
// {acc, windowStart, windowEnd}; sessions sess:<gap>\x1fopen\x1f<key> with value {acc,
// sessionStart, lastEventTime, windowStart, windowEnd}; the watermark __wm__ with value
// {eventTimeMs}; gate state under the record's key.

const (
	keySeparator = "\x1f"
	watermarkKey = "__wm__"
	// weekOriginMs is Monday 1970-01-05T00:00:00Z, the origin of weekly cron windows.
	weekOriginMs = 4 * 86_400_000
)

// stateOp is a state change sent with a cycle.
type stateOp struct {
	Type  string `json:"type"`
	Key   string `json:"key"`
	Value any    `json:"value,omitempty"`
}

// partitionBatch is one partition's share of a pop, in delivery order.
type partitionBatch struct {
	partition, partitionID string
	messages               []*Message
}

// record is a value flowing through the chain; index is its source message's position (-1: none).
type record struct {
	value any
	ctx   StreamContext
	index int
}

// batchPlan is what a batch (or a flush) turns into.
type batchPlan struct {
	stateOps []stateOp
	results  []record
	settled  int  // leading messages the cycle settles; 0 means no cycle at all
	release  bool // false when a gate parked the rest of the batch (the lease is kept)
	mark     *int64
	late     int
	allowed  int
	denied   int
}

type reducer struct {
	initial func() any
	add     func(acc, value any, c StreamContext) (any, error)
	result  func(acc any) any
}

type window struct {
	key        string
	start, end int64
	acc        any
	seeded     bool
	touched    bool
}

// processBatch runs one batch through the chain; rows is the shard's state, now the gate's clock.
func processBatch(c *compiledChain, b partitionBatch, rows map[string]any, now time.Time) (*batchPlan, error) {
	records := make([]record, len(b.messages))
	var latest int64 = math.MinInt64
	for i, m := range b.messages {
		var value any
		if len(m.Data) > 0 {
			if err := json.Unmarshal(m.Data, &value); err != nil {
				return nil, fmt.Errorf("regina: decoding message %s: %w", m.TransactionID, err)
			}
		}
		records[i] = record{value, StreamContext{Partition: b.partition, PartitionID: b.partitionID, Key: b.partitionID, Message: m}, i}
		latest = max(latest, m.CreatedAt.UnixMilli())
	}
	input, err := applyStateless(c.pre, records)
	if err != nil {
		return nil, err
	}
	plan := &batchPlan{results: input, settled: len(b.messages), release: true}
	switch {
	case c.gate != nil:
		err = gatePlan(c.gate.gateFn, rows, now, plan)
	case c.window != nil:
		err = windowPlan(c, rows, latest, b, plan)
	}
	if err == nil && c.stateful() {
		plan.results, err = applyStateless(c.post, plan.results)
	}
	return plan, err
}

// applyStateless applies Map / Filter / FlatMap / KeyBy in order.
func applyStateless(stages []stage, records []record) ([]record, error) {
	for _, s := range stages {
		next := make([]record, 0, len(records))
		for _, r := range records {
			switch s.kind {
			case "map":
				v, err := s.mapFn(r.value, r.ctx)
				if err != nil {
					return nil, err
				}
				next = append(next, record{v, r.ctx, r.index})
			case "filter":
				keep, err := s.filterFn(r.value, r.ctx)
				if err != nil {
					return nil, err
				}
				if keep {
					next = append(next, r)
				}
			case "flatMap":
				values, err := s.flatFn(r.value, r.ctx)
				if err != nil {
					return nil, err
				}
				for _, v := range values {
					next = append(next, record{v, r.ctx, r.index})
				}
			case "keyBy":
				key, err := s.keyFn(r.value, r.ctx)
				if err != nil {
					return nil, err
				}
				ctx := r.ctx
				ctx.Key = key
				next = append(next, record{r.value, ctx, r.index})
			}
		}
		records = next
	}
	return records, nil
}

func gatePlan(gate GateFunc, rows map[string]any, now time.Time, plan *batchPlan) error {
	live := map[string]map[string]any{}
	var touched []string
	var allowed []record
	for _, r := range plan.results {
		key := r.ctx.Key
		state, ok := live[key]
		if !ok {
			state = map[string]any{}
			if saved, isMap := rows[key].(map[string]any); isMap {
				state = cloneJSON(saved).(map[string]any)
			}
			live[key] = state
		}
		allow, err := gate(r.value, &GateContext{StreamContext: r.ctx, State: state, StreamTime: now})
		if err != nil {
			return err
		}
		if !allow {
			plan.denied, plan.settled, plan.release = 1, r.index, false
			break
		}
		if !contains(touched, key) {
			touched = append(touched, key)
		}
		allowed = append(allowed, r)
	}
	plan.allowed = len(allowed)
	plan.results = allowed
	for _, key := range touched {
		plan.stateOps = append(plan.stateOps, stateOp{Type: "upsert", Key: key, Value: live[key]})
	}
	return nil
}

func windowPlan(c *compiledChain, rows map[string]any, processingClock int64, b partitionBatch, plan *batchPlan) error {
	w := c.window
	red := reducerOf(c)
	before, hasBefore := int64(0), false
	if w.eventTime != nil {
		before, hasBefore = watermarkOf(rows)
	}
	type timed struct {
		r    record
		time int64
	}
	var events []timed
	var latest int64 = math.MinInt64
	for _, r := range plan.results {
		t, err := eventTimeOf(w, r)
		if err != nil {
			return err
		}
		if hasBefore && t < before {
			plan.late++
			if w.onLate == LateDrop {
				continue
			}
		}
		latest = max(latest, t)
		events = append(events, timed{r, t})
	}
	clock := processingClock
	if w.eventTime != nil {
		clock = math.MinInt64
		if hasBefore {
			clock = before
		}
		if latest != math.MinInt64 {
			clock = max(clock, latest-w.latenessMs)
		}
		if clock != math.MinInt64 {
			mark := clock
			plan.mark = &mark
			if !hasBefore || mark != before {
				plan.stateOps = append(plan.stateOps, stateOp{Type: "upsert", Key: watermarkKey,
					Value: map[string]any{"eventTimeMs": mark}})
			}
		}
	}
	times := make([]int64, len(events))
	recs := make([]record, len(events))
	for i, e := range events {
		times[i], recs[i] = e.time, e.r
	}
	var closed []window
	var err error
	if w.kind == "session" {
		closed, err = sessionPlan(w, red, recs, times, rows, clock, plan)
	} else {
		closed, err = fixedPlan(w, red, recs, times, rows, clock, plan)
	}
	plan.results = sortedResults(closed, red, b.partition, b.partitionID)
	return err
}

func fixedPlan(w *windowSpec, red reducer, recs []record, times []int64, rows map[string]any, clock int64, plan *batchPlan) ([]window, error) {
	prefix := w.tag() + keySeparator
	windows := map[string]*window{}
	var order []string // state keys in a stable order: seeded (by key), then new ones
	for _, key := range sortedKeys(rows) {
		if seeded, ok := seededWindow(key, rows[key], prefix); ok {
			windows[key] = &seeded
			order = append(order, key)
		}
	}
	for i, r := range recs {
		for _, start := range windowStarts(w, times[i]) {
			stateKey := windowKey(w.tag(), start, r.ctx.Key)
			entry, ok := windows[stateKey]
			if !ok {
				entry = &window{key: r.ctx.Key, start: start, end: start + w.sizeMs, acc: red.initial()}
				windows[stateKey] = entry
				order = append(order, stateKey)
			}
			ctx := r.ctx
			ctx.WindowStart, ctx.WindowEnd = time.UnixMilli(entry.start).UTC(), time.UnixMilli(entry.end).UTC()
			acc, err := red.add(entry.acc, r.value, ctx)
			if err != nil {
				return nil, err
			}
			entry.acc, entry.touched = acc, true
		}
	}
	var closed []window
	for _, stateKey := range order {
		entry := windows[stateKey]
		switch {
		case entry.end+w.graceMs <= clock:
			closed = append(closed, *entry)
			if entry.seeded {
				plan.stateOps = append(plan.stateOps, stateOp{Type: "delete", Key: stateKey})
			}
		case entry.touched:
			value := map[string]any{"acc": entry.acc, "windowStart": entry.start, "windowEnd": entry.end}
			plan.stateOps = append(plan.stateOps, stateOp{Type: "upsert", Key: stateKey, Value: value})
		}
	}
	return closed, nil
}

type session struct {
	start, last int64
	acc         any
	dirty       bool
}

func sessionPlan(w *windowSpec, red reducer, recs []record, times []int64, rows map[string]any, clock int64, plan *batchPlan) ([]window, error) {
	prefix := sessionPrefix(w)
	sessions := map[string]*session{}
	var order []string
	for _, key := range sortedKeys(rows) {
		value, ok := rows[key].(map[string]any)
		start, okStart := number(value["sessionStart"])
		last, okLast := number(value["lastEventTime"])
		if !strings.HasPrefix(key, prefix) || !ok || !okStart || !okLast {
			continue
		}
		userKey := key[len(prefix):]
		sessions[userKey] = &session{start: int64(start), last: int64(last), acc: value["acc"]}
		order = append(order, userKey)
	}
	seeded := append([]string(nil), order...)
	gap := w.sizeMs
	var closed []window
	for i, r := range recs {
		key, t := r.ctx.Key, times[i]
		s := sessions[key]
		if s != nil && t > s.last+gap {
			closed = append(closed, window{key: key, start: s.start, end: s.last + gap, acc: s.acc})
			s = nil
		}
		if s == nil {
			s = &session{start: t, last: t, acc: red.initial()}
			if _, known := sessions[key]; !known {
				order = append(order, key)
			}
			sessions[key] = s
		}
		s.start, s.last = min(s.start, t), max(s.last, t)
		ctx := r.ctx
		ctx.WindowStart, ctx.WindowEnd = time.UnixMilli(s.start).UTC(), time.UnixMilli(s.last+gap).UTC()
		acc, err := red.add(s.acc, r.value, ctx)
		if err != nil {
			return nil, err
		}
		s.acc, s.dirty = acc, true
	}
	for _, key := range order {
		if s := sessions[key]; s != nil && s.last+gap+w.graceMs <= clock {
			closed = append(closed, window{key: key, start: s.start, end: s.last + gap, acc: s.acc})
			delete(sessions, key)
		}
	}
	for _, key := range order {
		s, open := sessions[key]
		switch {
		case !open && contains(seeded, key):
			plan.stateOps = append(plan.stateOps, stateOp{Type: "delete", Key: prefix + key})
		case open && s.dirty:
			value := map[string]any{"acc": s.acc, "sessionStart": s.start, "lastEventTime": s.last,
				"windowStart": s.start, "windowEnd": s.last + gap}
			plan.stateOps = append(plan.stateOps, stateOp{Type: "upsert", Key: prefix + key, Value: value})
		}
	}
	return closed, nil
}

// flushPlan is the idle flush of one partition: every ripe row state/get returned (already
// filtered by the window's key prefix and windowEnd) becomes a result, and its row is deleted.
func flushPlan(c *compiledChain, partition, partitionID string, rows map[string]any) (*batchPlan, error) {
	w := c.window
	prefix := flushPrefix(w)
	plan := &batchPlan{release: true}
	var closed []window
	for _, key := range sortedKeys(rows) {
		var entry window
		var ok bool
		if w.kind == "session" {
			entry, ok = seededSession(key, rows[key], prefix)
		} else {
			entry, ok = seededWindow(key, rows[key], prefix)
		}
		if ok {
			closed = append(closed, entry)
			plan.stateOps = append(plan.stateOps, stateOp{Type: "delete", Key: key})
		}
	}
	results, err := applyStateless(c.post, sortedResults(closed, reducerOf(c), partition, partitionID))
	plan.results = results
	return plan, err
}

// flushPrefix is the key_prefix of the window's rows for the idle flush.
func flushPrefix(w *windowSpec) string {
	if w.kind == "session" {
		return sessionPrefix(w)
	}
	return w.tag() + keySeparator
}

func sessionPrefix(w *windowSpec) string { return w.tag() + keySeparator + "open" + keySeparator }

func seededWindow(key string, raw any, prefix string) (window, bool) {
	value, ok := raw.(map[string]any)
	start, okStart := number(value["windowStart"])
	end, okEnd := number(value["windowEnd"])
	if !strings.HasPrefix(key, prefix) || !ok || !okStart || !okEnd {
		return window{}, false
	}
	separator := strings.Index(key[len(prefix):], keySeparator)
	if separator < 0 {
		return window{}, false
	}
	userKey := key[len(prefix)+separator+1:]
	return window{key: userKey, start: int64(start), end: int64(end), acc: value["acc"], seeded: true}, true
}

func seededSession(key string, raw any, prefix string) (window, bool) {
	value, ok := raw.(map[string]any)
	start, okStart := number(value["sessionStart"])
	end, okEnd := number(value["windowEnd"])
	if !strings.HasPrefix(key, prefix) || !ok || !okStart || !okEnd {
		return window{}, false
	}
	return window{key: key[len(prefix):], start: int64(start), end: int64(end), acc: value["acc"], seeded: true}, true
}

// sortedResults turns closed windows into results ordered by start, end, then key (as every SDK
// emits them).
func sortedResults(closed []window, red reducer, partition, partitionID string) []record {
	sort.SliceStable(closed, func(i, j int) bool {
		a, b := closed[i], closed[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return bytes.Compare([]byte(a.key), []byte(b.key)) < 0
	})
	out := make([]record, len(closed))
	for i, w := range closed {
		ctx := StreamContext{Partition: partition, PartitionID: partitionID, Key: w.key,
			WindowStart: time.UnixMilli(w.start).UTC(), WindowEnd: time.UnixMilli(w.end).UTC()}
		out[i] = record{red.result(w.acc), ctx, -1}
	}
	return out
}

// windowStarts returns the starts of the windows an event at t belongs to, oldest first.
func windowStarts(w *windowSpec, t int64) []int64 {
	switch {
	case w.kind == "sliding":
		latest := floorDiv(t, w.slideMs) * w.slideMs
		var starts []int64
		for start := latest; start > t-w.sizeMs; start -= w.slideMs {
			starts = append([]int64{start}, starts...)
		}
		return starts
	case w.kind == "cron" && w.every == EveryWeek:
		return []int64{floorDiv(t-weekOriginMs, w.sizeMs)*w.sizeMs + weekOriginMs}
	}
	return []int64{floorDiv(t, w.sizeMs) * w.sizeMs}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// windowKey is the state key of one window of one key.
func windowKey(tag string, start int64, key string) string {
	iso := time.UnixMilli(start).UTC().Format("2006-01-02T15:04:05.000Z")
	return tag + keySeparator + iso + keySeparator + key
}

func eventTimeOf(w *windowSpec, r record) (int64, error) {
	if w.eventTime == nil {
		return r.ctx.Message.CreatedAt.UnixMilli(), nil
	}
	t, err := w.eventTime(r.value, r.ctx)
	if err != nil {
		return 0, err
	}
	if t.IsZero() {
		return 0, fmt.Errorf("regina: the event time of a value is the zero time")
	}
	return t.UnixMilli(), nil
}

func watermarkOf(rows map[string]any) (int64, bool) {
	value, _ := rows[watermarkKey].(map[string]any)
	mark, ok := number(value["eventTimeMs"])
	return int64(mark), ok
}

func reducerOf(c *compiledChain) reducer {
	s := c.reducer
	if s.kind == "reduce" {
		return reducer{
			initial: func() any { return cloneJSON(s.initial) },
			add:     func(acc, value any, _ StreamContext) (any, error) { return s.reduceFn(acc, value) },
			result:  func(acc any) any { return acc },
		}
	}
	return aggregateReducer(s.fields)
}
