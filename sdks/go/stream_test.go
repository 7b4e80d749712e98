package regina_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	regina "regina.dev/sdk/go"
)

// The stream runner's requests, against a local stand-in of the broker (stream_fake_test.go):
// what each operator sends in its cycles, how state is seeded and written, retries, and the
// registration errors.

const sep = "\x1f"

func streamClient(t *testing.T, f *fakeStreams) *regina.Client {
	c, err := regina.New(f.url, regina.WithBackoff(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startStream(t *testing.T, s *regina.Stream, opts regina.RunOptions) *regina.StreamRun {
	t.Helper()
	if opts.QueryID == "" {
		opts.QueryID = "q"
	}
	run, err := s.Run(testContext(t, 30*time.Second), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Stop)
	return run
}

func cyclesAfter(t *testing.T, f *fakeStreams, run *regina.StreamRun, n int) []map[string]any {
	t.Helper()
	waitFor(t, func() bool { return len(f.requests("/streams/v1/cycle")) >= n })
	run.Stop()
	return f.requests("/streams/v1/cycle")
}

func cyclePayloads(cycle map[string]any) []any {
	var out []any
	for _, item := range cycle["push_items"].([]any) {
		out = append(out, item.(map[string]any)["payload"])
	}
	return out
}

func asFloat(v any) float64 { return v.(float64) }

func TestStreamStatelessCyclePerPartition(t *testing.T) {
	f := newFakeStreams(t)
	a1, a2, b1, a3 := fakeMessage("a", map[string]any{"n": 1}, ""), fakeMessage("a", map[string]any{"n": 2}, ""),
		fakeMessage("b", map[string]any{"n": 3}, ""), fakeMessage("a", map[string]any{"n": 4}, "")
	f.push(a1, a2, b1, a3)
	s := streamClient(t, f).Stream("source").
		Filter(func(v any, _ regina.StreamContext) (bool, error) { return asFloat(v.(map[string]any)["n"]) != 2, nil }).
		Map(func(v any, c regina.StreamContext) (any, error) {
			return map[string]any{"doubled": asFloat(v.(map[string]any)["n"]) * 2, "from": c.Partition}, nil
		}).
		To("sink")
	run := startStream(t, s, regina.RunOptions{})
	cycles := cyclesAfter(t, f, run, 2)

	reg := f.requests("/streams/v1/queries")[0]
	if reg["name"] != "q" || reg["sink_queue"] != "sink" || reg["reset"] != false || len(reg["config_hash"].(string)) != 64 {
		t.Fatalf("registration %v", reg)
	}
	if n := len(f.requests("/streams/v1/state/get")); n != 0 {
		t.Fatalf("%d state reads for a stateless chain", n)
	}
	first, second := cycles[0], cycles[1]
	if first["partition_id"] != "pid-a" || second["partition_id"] != "pid-b" || first["consumer_group"] != "streams.q" {
		t.Fatalf("cycles %v", cycles)
	}
	wantAck := map[string]any{"transactionId": a3["transactionId"], "leaseId": "lease-1", "status": "completed", "count": 3.0}
	if !reflect.DeepEqual(first["ack"], wantAck) || first["release_lease"] != nil {
		t.Fatalf("ack %v, release_lease %v", first["ack"], first["release_lease"])
	}
	want := []any{map[string]any{"doubled": 2.0, "from": "a"}, map[string]any{"doubled": 8.0, "from": "a"}}
	if got := cyclePayloads(first); !reflect.DeepEqual(got, want) {
		t.Fatalf("payloads %v", got)
	}
	for _, item := range first["push_items"].([]any) {
		if m := item.(map[string]any); m["queue"] != "sink" || m["partition"] != "a" || m["transactionId"] == "" {
			t.Fatalf("item %v", m)
		}
	}
	if second["ack"].(map[string]any)["transactionId"] != b1["transactionId"] {
		t.Fatalf("second ack %v", second["ack"])
	}
	m := run.Metrics()
	if m.CyclesTotal != 2 || m.MessagesTotal != 4 || m.PushItemsTotal != 3 || m.ErrorsTotal != 0 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestStreamFailedBatchIsAckedFailed(t *testing.T) {
	f := newFakeStreams(t)
	first := fakeMessage("a", 1, "")
	f.push(first, fakeMessage("a", 2, ""))
	var phases []string
	s := streamClient(t, f).Stream("source").
		Map(func(v any, _ regina.StreamContext) (any, error) {
			if v.(float64) == 2 {
				return nil, errors.New("bad value")
			}
			return v, nil
		}).To("sink")
	run := startStream(t, s, regina.RunOptions{OnError: func(err error, w regina.StreamErrorContext) {
		phases = append(phases, w.Phase+":"+err.Error())
	}})
	waitFor(t, func() bool { return len(f.requests("/api/v1/ack/batch")) == 1 })
	run.Stop()
	ack := f.requests("/api/v1/ack/batch")[0]["acknowledgments"].([]any)[0].(map[string]any)
	if ack["transactionId"] != first["transactionId"] || ack["status"] != "failed" || ack["error"] != "bad value" {
		t.Fatalf("release ack %v", ack)
	}
	if len(f.requests("/streams/v1/cycle")) != 0 || !reflect.DeepEqual(phases, []string{"process:bad value"}) {
		t.Fatalf("cycles %v, errors %v", f.requests("/streams/v1/cycle"), phases)
	}
}

func TestStreamCycleRetriedWithTheSameBody(t *testing.T) {
	f := newFakeStreams(t)
	f.push(fakeMessage("a", 1, ""))
	busy := map[string]any{"success": false, "error": "busy", "code": "overloaded"}
	f.fail("/streams/v1/cycle", fakeAnswer{503, busy}, fakeAnswer{429, busy}, fakeAnswer{408, busy})
	run := startStream(t, streamClient(t, f).Stream("source").To("sink"), regina.RunOptions{})
	cycles := cyclesAfter(t, f, run, 4)
	for _, c := range cycles[1:] {
		if !reflect.DeepEqual(c, cycles[0]) {
			t.Fatalf("retried cycle differs: %v vs %v", c, cycles[0])
		}
	}
	if m := run.Metrics(); m.CyclesTotal != 1 || m.ErrorsTotal != 0 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestStreamConfigHashMismatchNeedsReset(t *testing.T) {
	f := newFakeStreams(t)
	c := streamClient(t, f)
	same := func(v any, _ regina.StreamContext) (any, error) { return v, nil }
	startStream(t, c.Stream("source").Map(same).To("sink"), regina.RunOptions{}).Stop()
	changed := c.Stream("source").Filter(func(any, regina.StreamContext) (bool, error) { return true, nil }).To("sink")
	_, err := changed.Run(context.Background(), regina.RunOptions{QueryID: "q"})
	var e *regina.Error
	if !errors.Is(err, regina.ErrConfigHashMismatch) || !errors.As(err, &e) || e.Status != 409 ||
		!strings.Contains(e.Message, "config_hash mismatch") || !strings.Contains(e.Message, "Reset") {
		t.Fatalf("error %v", err)
	}
	run := startStream(t, changed, regina.RunOptions{Reset: true})
	if reg := run.Registration(); reg.Fresh || !reg.Reset {
		t.Fatalf("registration %+v", reg)
	}
}

func TestStreamWindowSeedsEmitsAndDeletes(t *testing.T) {
	f := newFakeStreams(t)
	const queryID = "00000000-0000-4000-8000-000000000001"
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	old := "tumb:10" + sep + "2026-01-01T00:00:00.000Z" + sep + "pid-a"
	f.shard(queryID, "pid-a", map[string]any{
		old: map[string]any{"acc": 5.0, "windowStart": float64(start), "windowEnd": float64(start + 10_000)}})
	f.push(fakeMessage("a", 1, "2026-01-01T00:00:04Z"), fakeMessage("a", 2, "2026-01-01T00:00:12Z"))
	s := streamClient(t, f).Stream("source").WindowTumbling(10*time.Second, regina.IdleFlush(0)).
		Reduce(func(acc, v any) (any, error) { return acc.(float64) + v.(float64), nil }, 0.0).To("sink")
	cycle := cyclesAfter(t, f, startStream(t, s, regina.RunOptions{}), 1)[0]
	read := f.requests("/streams/v1/state/get")[0]
	if read["query_id"] != queryID || read["partition_id"] != "pid-a" || len(read["keys"].([]any)) != 0 || read["key_prefix"] != nil {
		t.Fatalf("state read %v", read)
	}
	want := []any{
		map[string]any{"type": "delete", "key": old},
		map[string]any{"type": "upsert", "key": "tumb:10" + sep + "2026-01-01T00:00:10.000Z" + sep + "pid-a",
			"value": map[string]any{"acc": 2.0, "windowStart": float64(start + 10_000), "windowEnd": float64(start + 20_000)}},
	}
	if !reflect.DeepEqual(cycle["state_ops"], want) || !reflect.DeepEqual(cyclePayloads(cycle), []any{6.0}) {
		t.Fatalf("state ops %v, payloads %v", cycle["state_ops"], cyclePayloads(cycle))
	}
}

func TestStreamWatermarkDropsLateEvents(t *testing.T) {
	f := newFakeStreams(t)
	f.shard("00000000-0000-4000-8000-000000000001", "pid-a", map[string]any{"__wm__": map[string]any{"eventTimeMs": 5000.0}})
	f.push(fakeMessage("a", map[string]any{"t": 4000}, ""), fakeMessage("a", map[string]any{"t": 6000}, ""),
		fakeMessage("a", map[string]any{"t": 21000}, ""))
	at := func(v any, _ regina.StreamContext) (time.Time, error) {
		return time.UnixMilli(int64(asFloat(v.(map[string]any)["t"]))), nil
	}
	s := streamClient(t, f).Stream("source").
		WindowTumbling(10*time.Second, regina.EventTime(at), regina.AllowedLateness(time.Second), regina.IdleFlush(0)).
		Aggregate(map[string]regina.Extractor{"count": nil, "max": func(v any) any { return v.(map[string]any)["t"] }}).
		To("sink")
	run := startStream(t, s, regina.RunOptions{})
	cycle := cyclesAfter(t, f, run, 1)[0]
	wm := map[string]any{"type": "upsert", "key": "__wm__", "value": map[string]any{"eventTimeMs": 20000.0}}
	if !reflect.DeepEqual(cycle["state_ops"].([]any)[0], wm) {
		t.Fatalf("state ops %v", cycle["state_ops"])
	}
	if got := cyclePayloads(cycle); !reflect.DeepEqual(got, []any{map[string]any{"count": 1.0, "max": 6000.0}}) {
		t.Fatalf("payloads %v", got)
	}
	if run.Metrics().LateEventsTotal != 1 {
		t.Fatalf("metrics %+v", run.Metrics())
	}
}

func TestStreamIdleFlushCommitsWithoutAck(t *testing.T) {
	f := newFakeStreams(t)
	f.push(fakeMessage("a", 3, time.Now().UTC().Format(time.RFC3339Nano)))
	s := streamClient(t, f).Stream("source").WindowTumbling(time.Second, regina.IdleFlush(50*time.Millisecond)).
		Reduce(func(acc, v any) (any, error) { return acc.(float64) + v.(float64), nil }, 0.0).To("sink")
	run := startStream(t, s, regina.RunOptions{})
	flushed := func() map[string]any {
		for _, c := range f.requests("/streams/v1/cycle") {
			if c["ack"] == nil {
				return c
			}
		}
		return nil
	}
	waitFor(t, func() bool { return flushed() != nil })
	run.Stop()
	var read map[string]any
	for _, r := range f.requests("/streams/v1/state/get") {
		if r["key_prefix"] != nil {
			read = r
		}
	}
	if read["key_prefix"] != "tumb:1"+sep || read["ripe_at_or_before"] == nil {
		t.Fatalf("flush read %v", read)
	}
	ops := flushed()["state_ops"].([]any)
	if len(ops) != 1 || ops[0].(map[string]any)["type"] != "delete" || !reflect.DeepEqual(cyclePayloads(flushed()), []any{3.0}) {
		t.Fatalf("flush cycle %v", flushed())
	}
	if run.Metrics().FlushCyclesTotal != 1 {
		t.Fatalf("metrics %+v", run.Metrics())
	}
}

func TestStreamGateCommitsAllowedPrefix(t *testing.T) {
	f := newFakeStreams(t)
	batch := []map[string]any{fakeMessage("a", 1, ""), fakeMessage("a", 2, ""), fakeMessage("a", 3, ""), fakeMessage("a", 4, "")}
	f.push(batch...)
	s := streamClient(t, f).Stream("source").Gate(regina.TokenBucketGate(2, 0.001, nil)).To("sink")
	run := startStream(t, s, regina.RunOptions{})
	cycle := cyclesAfter(t, f, run, 1)[0]
	ack := cycle["ack"].(map[string]any)
	if cycle["release_lease"] != false || ack["transactionId"] != batch[1]["transactionId"] || ack["count"] != 2.0 {
		t.Fatalf("cycle %v", cycle)
	}
	ops := cycle["state_ops"].([]any)
	if !reflect.DeepEqual(cyclePayloads(cycle), []any{1.0, 2.0}) || len(ops) != 1 || ops[0].(map[string]any)["key"] != "pid-a" {
		t.Fatalf("cycle %v", cycle)
	}
	if m := run.Metrics(); m.GateAllowsTotal != 2 || m.GateDenialsTotal != 1 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestStreamGateAllowingNothingSendsNoCycle(t *testing.T) {
	f := newFakeStreams(t)
	f.push(fakeMessage("a", 1, ""))
	f.push(fakeMessage("a", 2, ""))
	deny := func(any, *regina.GateContext) (bool, error) { return false, nil }
	run := startStream(t, streamClient(t, f).Stream("source").Gate(deny).To("sink"), regina.RunOptions{})
	waitFor(t, func() bool { return run.Metrics().GateDenialsTotal == 2 })
	run.Stop()
	if n := len(f.requests("/streams/v1/cycle")); n != 0 {
		t.Fatalf("%d cycles", n)
	}
}

func TestStreamChainRulesAndHash(t *testing.T) {
	c, _ := regina.New("http://127.0.0.1:9")
	id := func(v any, _ regina.StreamContext) (any, error) { return v, nil }
	hash, err := c.Stream("src").Map(id).Filter(func(any, regina.StreamContext) (bool, error) { return true, nil }).
		To("sink-a").ConfigHash()
	if err != nil || hash != "3e7a7ad0d6a5c72651575a7fe73ab85d64f8cac23b02e03f4337f27df1b3268c" {
		t.Fatalf("hash %s, %v", hash, err)
	}
	invalid := map[string]*regina.Stream{
		"window without reduce": c.Stream("src").WindowTumbling(time.Second).Reduce(nil, 0),
		"sink not last":         c.Stream("src").To("x").Map(id),
		"two gates":             c.Stream("src").Gate(regina.TokenBucketGate(1, 1, nil)).Gate(regina.TokenBucketGate(1, 1, nil)),
		"sliding not multiple":  c.Stream("src").WindowSliding(10*time.Second, 3*time.Second).Reduce(nil, 0),
		"sub-millisecond":       c.Stream("src").WindowTumbling(time.Microsecond).Aggregate(map[string]regina.Extractor{"count": nil}),
	}
	for name, s := range invalid {
		if _, err := s.ConfigHash(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestStreamStopsOnContextAndEndsOnARefusedPop(t *testing.T) {
	f := newFakeStreams(t)
	c := streamClient(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	run, err := c.Stream("source").To("sink").Run(ctx, regina.RunOptions{QueryID: "q"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	ended := make(chan error, 1)
	go func() { ended <- run.Wait() }()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("Wait after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not stop when its context was cancelled")
	}

	f.fail("/api/v1/pop/queue/source", fakeAnswer{400, map[string]any{"error": "batch must be at least 1", "code": "invalid_parameter"}})
	refused := startStream(t, c.Stream("source").To("sink"), regina.RunOptions{})
	if err := refused.Wait(); !errors.Is(err, regina.ErrInvalidParameter) {
		t.Fatalf("Wait after a refused pop: %v", err)
	}
}
