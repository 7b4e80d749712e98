package regina

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"
)

// The stream engine without I/O: windows, sessions, aggregates, lateness — the same cases as the
// other SDKs' engine tests.

func engineBatch(t *testing.T, data ...string) partitionBatch {
	t.Helper()
	b := partitionBatch{partition: "a", partitionID: "pid-a"}
	for i, d := range data {
		b.messages = append(b.messages, &Message{TransactionID: "tx", PartitionID: "pid-a", Partition: "a",
			Data: json.RawMessage(d), CreatedAt: time.Unix(int64(i), 0)})
	}
	return b
}

func engineChain(t *testing.T, s *Stream) *compiledChain {
	t.Helper()
	c, err := s.compile()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func byT(v any, _ StreamContext) (time.Time, error) {
	return time.UnixMilli(int64(v.(map[string]any)["t"].(float64))), nil
}

func sumV(acc, v any) (any, error) { return acc.(float64) + v.(map[string]any)["v"].(float64), nil }

func applyOps(rows map[string]any, ops []stateOp) map[string]any {
	out := map[string]any{}
	for k, v := range rows {
		out[k] = v
	}
	for _, op := range ops {
		if op.Type == "upsert" {
			out[op.Key] = cloneJSON(op.Value)
		} else {
			delete(out, op.Key)
		}
	}
	return out
}

func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestEngineSlidingWindowsCoverEachEventTwice(t *testing.T) {
	c, _ := New("http://127.0.0.1:9")
	s := c.Stream("s").WindowSliding(10*time.Second, 5*time.Second, EventTime(byT)).
		Aggregate(map[string]Extractor{"count": nil}).
		Map(func(v any, ctx StreamContext) (any, error) {
			return []any{ctx.WindowStart.UnixMilli(), v.(map[string]any)["count"]}, nil
		})
	plan, err := processBatch(engineChain(t, s), engineBatch(t, `{"t":101000}`, `{"t":106000}`, `{"t":112000}`, `{"t":140000}`), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for _, r := range plan.results {
		got = append(got, r.value)
	}
	want := []any{[]any{int64(95000), 1.0}, []any{int64(100000), 2.0}, []any{int64(105000), 2.0}, []any{int64(110000), 1.0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("results %v", got)
	}
	keys := []string{plan.stateOps[0].Key, plan.stateOps[1].Key, plan.stateOps[2].Key}
	if !reflect.DeepEqual(keys, []string{"__wm__", "slide:10:5\x1f1970-01-01T00:02:15.000Z\x1fpid-a", "slide:10:5\x1f1970-01-01T00:02:20.000Z\x1fpid-a"}) {
		t.Fatalf("state keys %q", keys)
	}
}

func TestEngineSessionsCloseOnGapAndWatermark(t *testing.T) {
	c, _ := New("http://127.0.0.1:9")
	s := c.Stream("s").KeyBy(func(v any, _ StreamContext) (string, error) { return v.(map[string]any)["u"].(string), nil }).
		WindowSession(2*time.Second, EventTime(byT)).Reduce(sumV, 0.0)
	chain := engineChain(t, s)
	first, err := processBatch(chain, engineBatch(t, `{"u":"a","t":1000,"v":1}`, `{"u":"b","t":1200,"v":10}`,
		`{"u":"a","t":1500,"v":2}`, `{"u":"a","t":5000,"v":4}`), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var got [][]any
	for _, r := range first.results {
		got = append(got, []any{r.ctx.Key, r.value, r.ctx.WindowStart.UnixMilli(), r.ctx.WindowEnd.UnixMilli()})
	}
	if !reflect.DeepEqual(got, [][]any{{"a", 3.0, int64(1000), int64(3500)}, {"b", 10.0, int64(1200), int64(3200)}}) {
		t.Fatalf("results %v", got)
	}
	rows := applyOps(nil, first.stateOps)
	if !reflect.DeepEqual(keysOf(rows), []string{"__wm__", "sess:2\x1fopen\x1fa"}) {
		t.Fatalf("rows %q", keysOf(rows))
	}
	second, err := processBatch(chain, engineBatch(t, `{"u":"c","t":9000,"v":100}`), rows, time.Now())
	if err != nil || len(second.results) != 1 || second.results[0].ctx.Key != "a" || second.results[0].value != 4.0 {
		t.Fatalf("second batch %v %v", second, err)
	}
	if keys := keysOf(applyOps(rows, second.stateOps)); !reflect.DeepEqual(keys, []string{"__wm__", "sess:2\x1fopen\x1fc"}) {
		t.Fatalf("rows %q", keys)
	}
}

func TestEngineCronWeekStartsOnMonday(t *testing.T) {
	w := &windowSpec{kind: "cron", every: EveryWeek, sizeMs: (7 * 24 * time.Hour).Milliseconds()}
	wednesday := time.Date(2026, 1, 7, 15, 0, 0, 0, time.UTC).UnixMilli()
	if got := windowStarts(w, wednesday); got[0] != time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).UnixMilli() {
		t.Fatalf("week start %v", time.UnixMilli(got[0]).UTC())
	}
}

func TestEngineAggregateAcrossBatches(t *testing.T) {
	c, _ := New("http://127.0.0.1:9")
	v := func(x any) any { return x.(map[string]any)["v"] }
	s := c.Stream("s").WindowTumbling(10*time.Second, EventTime(byT)).
		Aggregate(map[string]Extractor{"count": nil, "sum": v, "min": v, "max": v, "avg": v})
	chain := engineChain(t, s)
	first, _ := processBatch(chain, engineBatch(t, `{"t":1,"v":4}`, `{"t":2,"v":1}`), nil, time.Now())
	second, err := processBatch(chain, engineBatch(t, `{"t":3,"v":7}`, `{"t":20000,"v":0}`), applyOps(nil, first.stateOps), time.Now())
	want := map[string]any{"count": 3.0, "sum": 12.0, "min": 1.0, "max": 7.0, "avg": 4.0}
	if err != nil || len(first.results) != 0 || len(second.results) != 1 || !reflect.DeepEqual(second.results[0].value, want) {
		t.Fatalf("results %v / %v (%v)", first.results, second.results, err)
	}
}

func TestEngineLateEvents(t *testing.T) {
	c, _ := New("http://127.0.0.1:9")
	rows := map[string]any{"__wm__": map[string]any{"eventTimeMs": 50000.0}}
	for policy, want := range map[LatePolicy]int{LateDrop: 0, LateInclude: 1} {
		s := c.Stream("s").WindowTumbling(10*time.Second, EventTime(byT), OnLate(policy)).Reduce(sumV, 0.0)
		plan, err := processBatch(engineChain(t, s), engineBatch(t, `{"t":1000,"v":1}`, `{"t":60000,"v":2}`), rows, time.Now())
		if err != nil || plan.late != 1 || len(plan.results) != want {
			t.Fatalf("%s: late %d, results %v (%v)", policy, plan.late, plan.results, err)
		}
	}
}
