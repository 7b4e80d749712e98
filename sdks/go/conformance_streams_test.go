package regina_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"

	regina "regina.dev/sdk/go"
)

// The stream and streamHash steps of the conformance language (../conformance/README.md): chains
// described in JSON, with expressions standing for the user's functions, built and run through the
// SDK's public stream API.

// scope is what an expression can read.
type scope struct {
	value, acc any
	ctx        regina.StreamContext
}

// evaluate evaluates an expression of the conformance language.
func evaluate(expr any, sc scope) any {
	m, ok := expr.(map[string]any)
	if !ok {
		return expr
	}
	for op, arg := range m {
		return evalOp(op, arg, sc)
	}
	return nil
}

func evalOp(op string, arg any, sc scope) any {
	args, _ := arg.([]any)
	ev := func(i int) any { return evaluate(args[i], sc) }
	f := func(i int) float64 { n, _ := ev(i).(float64); return n }
	switch op {
	case "value":
		return path(sc.value, arg.(string))
	case "acc":
		return path(sc.acc, arg.(string))
	case "ctx":
		return ctxField(sc.ctx, arg.(string))
	case "literal":
		return arg
	case "add", "mul":
		total := map[string]float64{"add": 0, "mul": 1}[op]
		for i := range args {
			if op == "add" {
				total += f(i)
			} else {
				total *= f(i)
			}
		}
		return total
	case "sub":
		return f(0) - f(1)
	case "mod":
		return math.Mod(f(0), f(1))
	case "eq":
		return jsonEqual(ev(0), ev(1))
	case "lt":
		return f(0) < f(1)
	case "gt":
		return f(0) > f(1)
	case "not":
		b, _ := evaluate(arg, sc).(bool)
		return !b
	case "object":
		out := map[string]any{}
		for k, e := range arg.(map[string]any) {
			out[k] = evaluate(e, sc)
		}
		return out
	case "list":
		out := make([]any, len(args))
		for i := range args {
			out[i] = ev(i)
		}
		return out
	case "concat":
		var b strings.Builder
		for i := range args {
			b.WriteString(fmt.Sprint(ev(i)))
		}
		return b.String()
	}
	panic("unknown expression " + op)
}

func path(v any, dotted string) any {
	if dotted == "" {
		return v
	}
	for _, part := range strings.Split(dotted, ".") {
		m, _ := v.(map[string]any)
		v = m[part]
	}
	return v
}

func ctxField(c regina.StreamContext, name string) any {
	switch name {
	case "partition":
		return c.Partition
	case "partitionId":
		return c.PartitionID
	case "key":
		return c.Key
	case "windowStart":
		return float64(c.WindowStart.UnixMilli())
	case "windowEnd":
		return float64(c.WindowEnd.UnixMilli())
	}
	return nil
}

// recorder collects what a described foreach records.
type recorder struct {
	mu   sync.Mutex
	list []any
}

func (r *recorder) add(v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, v)
}

func mapFn(expr any) regina.MapFunc {
	return func(v any, c regina.StreamContext) (any, error) { return evaluate(expr, scope{value: v, ctx: c}), nil }
}

// buildStream builds the stream a step describes.
func buildStream(c *regina.Client, s map[string]any, rec *recorder) *regina.Stream {
	st := c.Stream(str(s, "source"))
	var windowed *regina.WindowedStream
	for _, raw := range list(s, "chain") {
		e := raw.(map[string]any)
		op := str(e, "op")
		switch op {
		case "map":
			st = st.Map(mapFn(e["fn"]))
		case "filter":
			fn := mapFn(e["fn"])
			st = st.Filter(func(v any, c regina.StreamContext) (bool, error) {
				out, _ := fn(v, c)
				b, _ := out.(bool)
				return b, nil
			})
		case "flatMap":
			fn := mapFn(e["fn"])
			st = st.FlatMap(func(v any, c regina.StreamContext) ([]any, error) {
				out, _ := fn(v, c)
				l, _ := out.([]any)
				return l, nil
			})
		case "keyBy":
			fn := mapFn(e["fn"])
			st = st.KeyBy(func(v any, c regina.StreamContext) (string, error) { out, _ := fn(v, c); return fmt.Sprint(out), nil })
		case "windowTumbling", "windowSliding", "windowSession", "windowCron":
			windowed = addWindow(st, op, e)
		case "reduce":
			expr := e["fn"]
			st = windowed.Reduce(func(acc, v any) (any, error) { return evaluate(expr, scope{value: v, acc: acc}), nil }, e["initial"])
		case "aggregate":
			fields := map[string]regina.Extractor{}
			for name, expr := range obj(e, "fields") {
				expr := expr
				fields[name] = func(v any) any { return evaluate(expr, scope{value: v}) }
			}
			st = windowed.Aggregate(fields)
		case "gate":
			st = st.Gate(gateOf(e))
		case "to":
			st = addSink(st, e)
		case "foreach":
			record := e["record"]
			st = st.Foreach(func(_ context.Context, v any, c regina.StreamContext) error {
				if record != nil {
					v = evaluate(record, scope{value: v, ctx: c})
				}
				rec.add(v)
				return nil
			})
		default:
			panic("unknown stream operator " + op)
		}
	}
	return st
}

func seconds(e map[string]any, key string) time.Duration {
	f, _ := e[key].(float64)
	return time.Duration(math.Round(f * float64(time.Second)))
}

func addWindow(st *regina.Stream, op string, e map[string]any) *regina.WindowedStream {
	var opts []regina.WindowOption
	if expr, ok := e["eventTime"]; ok {
		opts = append(opts, regina.EventTime(func(v any, c regina.StreamContext) (time.Time, error) {
			ms, _ := evaluate(expr, scope{value: v, ctx: c}).(float64)
			return time.UnixMilli(int64(ms)), nil
		}))
	}
	if _, ok := e["gracePeriod"]; ok {
		opts = append(opts, regina.GracePeriod(seconds(e, "gracePeriod")))
	}
	if _, ok := e["allowedLateness"]; ok {
		opts = append(opts, regina.AllowedLateness(seconds(e, "allowedLateness")))
	}
	if late, ok := e["onLate"].(string); ok {
		opts = append(opts, regina.OnLate(regina.LatePolicy(late)))
	}
	if ms, ok := e["idleFlushMs"].(float64); ok {
		opts = append(opts, regina.IdleFlush(time.Duration(ms)*time.Millisecond))
	}
	switch op {
	case "windowTumbling":
		return st.WindowTumbling(seconds(e, "seconds"), opts...)
	case "windowSliding":
		return st.WindowSliding(seconds(e, "size"), seconds(e, "slide"), opts...)
	case "windowSession":
		return st.WindowSession(seconds(e, "gap"), opts...)
	}
	return st.WindowCron(regina.CronEvery(str(e, "every")), opts...)
}

func gateOf(e map[string]any) regina.GateFunc {
	if b := obj(e, "tokenBucket"); b != nil {
		return regina.TokenBucketGate(b["capacity"].(float64), b["refillPerSec"].(float64), nil)
	}
	w := obj(e, "slidingWindow")
	return regina.SlidingWindowGate(w["limit"].(float64), w["windowSeconds"].(float64), nil)
}

func addSink(st *regina.Stream, e map[string]any) *regina.Stream {
	switch p := e["partition"].(type) {
	case string:
		return st.To(str(e, "queue"), regina.SinkPartition(p))
	case map[string]any:
		return st.To(str(e, "queue"), regina.SinkPartitionBy(func(v any, c regina.StreamContext) string {
			return fmt.Sprint(evaluate(p, scope{value: v, ctx: c}))
		}))
	}
	return st.To(str(e, "queue"))
}

// runStream runs the step's stream until its until conditions hold, then stops it.
func (r *conformance) runStream(_ context.Context, s map[string]any) (any, error) {
	rec := &recorder{}
	o := obj(s, "run")
	opts := regina.RunOptions{QueryID: str(o, "queryId"), BatchSize: num(o, "batchSize", 0),
		MaxPartitions: num(o, "maxPartitions", 0), MaxWait: time.Duration(num(o, "maxWaitMillis", 0)) * time.Millisecond,
		ConsumerGroup: str(o, "consumerGroup"), SubscriptionMode: str(o, "subscriptionMode")}
	opts.Reset, _ = o["reset"].(bool)
	timeout := time.Duration(num(s, "timeoutMs", 60_000)) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	run, err := buildStream(r.client, s, rec).Run(ctx, opts)
	if err != nil {
		return nil, err
	}
	queryID := opts.QueryID
	before := r.streamTotals[queryID]
	across := func() map[string]float64 {
		sums := map[string]float64{}
		for name, v := range before {
			sums[name] = v
		}
		for name, v := range metricValues(run.Metrics()) {
			sums[name] += v
		}
		return sums
	}
	holds := func(wanted map[string]any, values map[string]float64) bool {
		for name, least := range wanted {
			if values[name] < least.(float64) {
				return false
			}
		}
		return true
	}
	reached := func() bool {
		return holds(obj(s, "until"), metricValues(run.Metrics())) && holds(obj(s, "untilAcrossRuns"), across())
	}
	deadline := time.Now().Add(timeout)
	for !reached() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	run.Stop()
	done, sums := reached(), across()
	r.streamTotals[queryID] = sums
	if !done {
		return nil, fmt.Errorf("the stream did not reach its conditions: %+v", run.Metrics())
	}
	reg := run.Registration()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return map[string]any{"registration": map[string]any{"fresh": reg.Fresh, "reset": reg.Reset},
		"metrics": metricChecks(metricValues(run.Metrics())), "acrossRuns": metricChecks(sums),
		"results": append([]any{}, rec.list...), "resultsAnyOrder": anyOrder(append([]any{}, rec.list...))}, nil
}

// metricValues maps the counters by their camelCase names (MessagesTotal → messagesTotal).
func metricValues(m regina.StreamMetrics) map[string]float64 {
	out := map[string]float64{}
	v := reflect.ValueOf(m)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Kind() == reflect.Int64 {
			name := []rune(v.Type().Field(i).Name)
			name[0] = unicode.ToLower(name[0])
			out[string(name)] = float64(v.Field(i).Int())
		}
	}
	return out
}

// metricChecks compares exactly, or as a least value with {"atLeast": n}.
type metricChecks map[string]float64

func (m metricChecks) check(want any) string {
	for name, w := range want.(map[string]any) {
		got, ok := m[name]
		if !ok {
			return "no metric " + name
		}
		if least, isMap := w.(map[string]any); isMap {
			if got < least["atLeast"].(float64) {
				return fmt.Sprintf("%s is %v, want at least %v", name, got, least["atLeast"])
			}
		} else if got != w.(float64) {
			return fmt.Sprintf("%s is %v, want %v", name, got, w)
		}
	}
	return ""
}

// streamHash returns the config_hash of the step's chain.
func (r *conformance) streamHash(_ context.Context, s map[string]any) (any, error) {
	hash, err := buildStream(r.client, s, &recorder{}).ConfigHash()
	return map[string]any{"hash": hash}, err
}
