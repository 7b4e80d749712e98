package regina

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The operator chain of a stream: its stages as data, the rules a chain must follow, and the
// config_hash that identifies its shape on the broker. The hash covers what decides the meaning
// of stored state — the operator kinds in order, window sizes, aggregate field names and the sink
// queue — and never the user's functions. The shape text is the same in every Regina SDK, so every
// SDK computes the same hash for the same chain.

// StreamContext is what operator functions receive besides the value.
type StreamContext struct {
	// Partition and PartitionID name the source partition (the state shard).
	Partition, PartitionID string
	// Key is the record's key: the source partition id unless KeyBy chose another.
	Key string
	// Message is the source message; nil for window results.
	Message *Message
	// WindowStart and WindowEnd (exclusive) bound the window of a window result; zero otherwise.
	WindowStart, WindowEnd time.Time
}

// GateContext is the context of a gate function.
type GateContext struct {
	StreamContext
	// State is the key's persistent state; changes are stored when the gate allows a record of
	// that key. Numbers read back from the broker are float64.
	State map[string]any
	// StreamTime is the instant the batch is judged at (one value for the whole batch).
	StreamTime time.Time
}

// Operator functions. They should be pure: a batch that fails is processed again. A returned
// error (or a panic) fails the batch.
type (
	// MapFunc replaces a value.
	MapFunc func(value any, c StreamContext) (any, error)
	// FilterFunc keeps the values for which it returns true.
	FilterFunc func(value any, c StreamContext) (bool, error)
	// FlatMapFunc replaces a value by none, one or several.
	FlatMapFunc func(value any, c StreamContext) ([]any, error)
	// KeyFunc keys a value for the window or gate that follows.
	KeyFunc func(value any, c StreamContext) (string, error)
	// ReduceFunc folds a value into a window's accumulator.
	ReduceFunc func(acc, value any) (any, error)
	// Extractor gives the number an aggregate field takes from a value (nil: none).
	Extractor func(value any) any
	// GateFunc allows (true) or denies (false) a value; it may change g.State.
	GateFunc func(value any, g *GateContext) (bool, error)
	// ForeachFunc is the side effect of a Foreach sink (at least once).
	ForeachFunc func(ctx context.Context, value any, c StreamContext) error
	// EventTimeFunc gives a value's event time.
	EventTimeFunc func(value any, c StreamContext) (time.Time, error)
	// PartitionFunc chooses the sink partition of a value.
	PartitionFunc func(value any, c StreamContext) string
)

// CronEvery is the period of a cron window, aligned to UTC (weeks start on Monday).
type CronEvery string

// Cron periods.
const (
	EverySecond CronEvery = "second"
	EveryMinute CronEvery = "minute"
	EveryHour   CronEvery = "hour"
	EveryDay    CronEvery = "day"
	EveryWeek   CronEvery = "week"
)

var cronPeriods = map[CronEvery]time.Duration{
	EverySecond: time.Second, EveryMinute: time.Minute, EveryHour: time.Hour,
	EveryDay: 24 * time.Hour, EveryWeek: 7 * 24 * time.Hour,
}

// LatePolicy says what an event-time window does with events older than the watermark.
type LatePolicy string

// Late policies.
const (
	LateDrop    LatePolicy = "drop"
	LateInclude LatePolicy = "include"
)

// Default idle-flush periods.
const (
	DefaultIdleFlush        = 5 * time.Second
	DefaultSessionIdleFlush = time.Second
)

// windowSpec is a window; durations in milliseconds. sizeMs is the length, size or session gap.
type windowSpec struct {
	kind        string // tumbling, sliding, session, cron
	sizeMs      int64
	slideMs     int64
	every       CronEvery
	graceMs     int64
	idleFlushMs int64
	eventTime   EventTimeFunc
	latenessMs  int64
	onLate      LatePolicy
}

// tag is the state-key tag: tumb:<s>, slide:<size>:<slide>, cron:<every> or sess:<gap>.
func (w *windowSpec) tag() string {
	switch w.kind {
	case "tumbling":
		return "tumb:" + secondsText(w.sizeMs)
	case "sliding":
		return "slide:" + secondsText(w.sizeMs) + ":" + secondsText(w.slideMs)
	case "session":
		return "sess:" + secondsText(w.sizeMs)
	}
	return "cron:" + string(w.every)
}

// stage is one operator.
type stage struct {
	kind      string // map, filter, flatMap, keyBy, window, reduce, aggregate, gate, to, foreach
	mapFn     MapFunc
	filterFn  FilterFunc
	flatFn    FlatMapFunc
	keyFn     KeyFunc
	window    *windowSpec
	reduceFn  ReduceFunc
	initial   any
	fields    map[string]Extractor
	gateFn    GateFunc
	queue     string
	partition string
	partFn    PartitionFunc
	foreachFn ForeachFunc
}

// compiledChain is a checked chain, split into the parts the runner executes in order.
type compiledChain struct {
	pre     []stage // stateless operators before the stateful stage (all when there is none)
	window  *windowSpec
	reducer *stage
	gate    *stage
	post    []stage // stateless operators after the stateful stage
	sink    *stage
	shape   string
}

func (c *compiledChain) stateful() bool { return c.window != nil || c.gate != nil }

// errChain is the error of a chain that breaks a rule.
var errChain = errors.New("regina: invalid stream")

func chainError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errChain}, args...)...)
}

// compileChain checks a chain and splits it. Rules: at most one sink (To / Foreach), and it
// comes last; at most one stateful stage — a window directly followed by Reduce or Aggregate, or
// a Gate; KeyBy only before the stateful stage; no FlatMap before a Gate (a gate judges whole
// messages).
func compileChain(stages []stage) (*compiledChain, error) {
	c := &compiledChain{shape: shapeOf(stages)}
	for i := range stages {
		s := stages[i]
		if c.sink != nil {
			return nil, chainError("%s must be the last operator of a stream", c.sink.kind)
		}
		switch s.kind {
		case "window":
			if c.stateful() {
				return nil, chainError("a stream has at most one window or gate")
			}
			c.window = s.window
		case "reduce", "aggregate":
			if c.window == nil || c.reducer != nil || stages[i-1].kind != "window" {
				return nil, chainError("%s must directly follow a window", s.kind)
			}
			c.reducer = &stages[i]
		case "gate":
			if c.stateful() {
				return nil, chainError("a stream has at most one window or gate")
			}
			for _, earlier := range c.pre {
				if earlier.kind == "flatMap" {
					return nil, chainError("FlatMap cannot come before Gate: a gate judges whole messages")
				}
			}
			c.gate = &stages[i]
		default:
			if c.window != nil && c.reducer == nil {
				return nil, chainError("a window must be followed by Reduce or Aggregate")
			}
			switch {
			case s.kind == "to" || s.kind == "foreach":
				c.sink = &stages[i]
			case s.kind == "keyBy" && c.stateful():
				return nil, chainError("KeyBy must come before the window or gate")
			case c.stateful():
				c.post = append(c.post, s)
			default:
				c.pre = append(c.pre, s)
			}
		}
	}
	if c.window != nil && c.reducer == nil {
		return nil, chainError("a window must be followed by Reduce or Aggregate")
	}
	return c, nil
}

// shapeOf is the chain's shape: one line per operator, its kind and then its structural
// settings. Texts are written <UTF-8 byte length>:<text> so that no name can be mistaken for
// syntax.
func shapeOf(stages []stage) string {
	lines := []string{"regina.streams.v1"}
	for _, s := range stages {
		switch s.kind {
		case "window":
			lines = append(lines, windowShape(s.window))
		case "aggregate":
			names := make([]string, 0, len(s.fields))
			for name := range s.fields {
				names = append(names, name)
			}
			sort.Slice(names, func(i, j int) bool { return bytes.Compare([]byte(names[i]), []byte(names[j])) < 0 })
			for i, name := range names {
				names[i] = lengthPrefixed(name)
			}
			lines = append(lines, "aggregate fields="+strings.Join(names, ","))
		case "to":
			lines = append(lines, "to queue="+lengthPrefixed(s.queue))
		default:
			lines = append(lines, s.kind)
		}
	}
	return strings.Join(lines, "\n")
}

func windowShape(w *windowSpec) string {
	switch w.kind {
	case "tumbling":
		return "windowTumbling seconds=" + secondsText(w.sizeMs)
	case "sliding":
		return "windowSliding size=" + secondsText(w.sizeMs) + " slide=" + secondsText(w.slideMs)
	case "session":
		return "windowSession gap=" + secondsText(w.sizeMs)
	}
	return "windowCron every=" + string(w.every)
}

func lengthPrefixed(text string) string { return strconv.Itoa(len(text)) + ":" + text }

// secondsText writes whole milliseconds as seconds, the same in every SDK: 5000 → "5",
// 1500 → "1.5".
func secondsText(ms int64) string {
	whole, rest := ms/1000, ms%1000
	if rest == 0 {
		return strconv.FormatInt(whole, 10)
	}
	return strconv.FormatInt(whole, 10) + "." + strings.TrimRight(fmt.Sprintf("%03d", rest), "0")
}

// configHash is the SHA-256 of the shape, lower-case hex.
func configHash(shape string) string {
	sum := sha256.Sum256([]byte(shape))
	return hex.EncodeToString(sum[:])
}
