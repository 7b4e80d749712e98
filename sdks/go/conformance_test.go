package regina_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	regina "regina.dev/sdk/go"
)

// The conformance runner: executes every scenario of ../conformance/scenarios through the SDK's
// public API against the live broker. The step language is described in ../conformance/README.md.

const deadURL = "http://127.0.0.1:9"

type step map[string]any

type scenario struct {
	Name   string `json:"name"`
	Client struct {
		Servers []string `json:"servers"`
		Retries *int     `json:"retries"`
	} `json:"client"`
	Steps []step `json:"steps"`
}

// conformance is the state of one scenario run.
type conformance struct {
	t      *testing.T
	client *regina.Client
	vars   map[string]string
	marks  map[string]string
	pops   map[string][]*regina.Message
	dlqs   map[string][]regina.DLQEntry
}

func TestConformance(t *testing.T) {
	url := brokerURL(t)
	files, err := filepath.Glob(filepath.Join("..", "conformance", "scenarios", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance scenarios found (%v)", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			t.Parallel()
			runScenario(t, url, file)
		})
	}
}

func runScenario(t *testing.T, url, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	q := "conf-" + sc.Name + "-" + strings.TrimPrefix(uniqueName(""), "-")
	r := &conformance{t: t,
		vars:  map[string]string{"url": url, "dead": deadURL, "q": q, "q2": q + "-2", "q3": q + "-3"},
		marks: map[string]string{}, pops: map[string][]*regina.Message{}, dlqs: map[string][]regina.DLQEntry{},
	}
	servers := []string{"${url}"}
	if len(sc.Client.Servers) > 0 {
		servers = sc.Client.Servers
	}
	for i := range servers {
		servers[i] = r.subst(servers[i]).(string)
	}
	opts := []regina.Option{regina.WithFailover(servers[1:]...), regina.WithBackoff(20*time.Millisecond, time.Second)}
	if sc.Client.Retries != nil {
		opts = append(opts, regina.WithRetries(*sc.Client.Retries))
	}
	if r.client, err = regina.New(servers[0], opts...); err != nil {
		t.Fatal(err)
	}
	for i, raw := range sc.Steps {
		s := r.subst(map[string]any(raw)).(map[string]any)
		r.run(i, s)
	}
}

// subst replaces the placeholders of every string in v.
func (r *conformance) subst(v any) any {
	switch x := v.(type) {
	case string:
		return r.substString(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.subst(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = r.subst(e)
		}
		return out
	case step:
		return r.subst(map[string]any(x))
	default:
		return v
	}
}

func (r *conformance) substString(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		j := strings.Index(s[max(i, 0):], "}")
		if i < 0 || j < 0 {
			b.WriteString(s)
			return b.String()
		}
		name := s[i+2 : i+j]
		value, ok := r.vars[name]
		if mark, found := strings.CutPrefix(name, "mark:"); found {
			value, ok = r.marks[mark]
		}
		if !ok {
			r.t.Fatalf("unknown placeholder ${%s}", name)
		}
		b.WriteString(s[:i])
		b.WriteString(value)
		s = s[i+j+1:]
	}
}

// run executes one step and checks its expectations.
func (r *conformance) run(index int, s map[string]any) {
	t := r.t
	t.Helper()
	op := str(s, "op")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	result, err := r.exec(ctx, op, s)
	where := fmt.Sprintf("step %d (%s)", index, op)
	if want, ok := s["expectError"].(map[string]any); ok {
		var e *regina.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: want a *regina.Error with code %v, got %v", where, want["code"], err)
		}
		if e.Code != str(want, "code") {
			t.Fatalf("%s: error code %q, want %q (%v)", where, e.Code, want["code"], e)
		}
		if st, ok := want["status"].(float64); ok && e.Status != int(st) {
			t.Fatalf("%s: error status %d, want %d", where, e.Status, int(st))
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if want, ok := s["expect"].(map[string]any); ok {
		for key, value := range want {
			if msg := check(result, key, value); msg != "" {
				t.Fatalf("%s: expect %s: %s", where, key, msg)
			}
		}
	}
}

// exec performs a step and returns what its expectations check.
func (r *conformance) exec(ctx context.Context, op string, s map[string]any) (any, error) {
	c := r.client
	switch op {
	case "configure":
		q := c.Queue(str(s, "queue")).Namespace(str(s, "namespace")).Task(str(s, "task"))
		var opts []regina.QueueOption
		for k, v := range obj(s, "options") {
			opts = append(opts, regina.Setting(k, v))
		}
		res, err := q.Config(opts...).Create(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"created": res.Created}, nil
	case "deleteQueue":
		res, err := c.Queue(str(s, "queue")).Delete(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"existed": res.Existed}, nil
	case "push":
		results, err := c.Queue(str(s, "queue")).Partition(str(s, "partition")).Push(ctx, items(s["items"])...)
		if err != nil {
			return nil, err
		}
		statuses := make([]any, len(results))
		for i, res := range results {
			statuses[i] = res.Status
		}
		return map[string]any{"statuses": statuses}, nil
	case "bufferedPush":
		q := c.Queue(str(s, "queue")).Partition(str(s, "partition")).Buffer(regina.BufferOptions{
			MessageCount: num(s, "messageCount", 0),
			FlushAfter:   time.Duration(num(s, "timeMillis", 0)) * time.Millisecond,
		})
		for _, it := range items(s["items"]) {
			if _, err := q.Push(ctx, it); err != nil {
				return nil, err
			}
		}
		return nil, c.Flush(ctx)
	case "pop":
		return r.pop(ctx, s)
	case "ack":
		return r.ack(ctx, s)
	case "renew":
		res, err := c.Renew(ctx, r.ref(s))
		if err != nil {
			return nil, err
		}
		return map[string]any{"success": res.Success}, nil
	case "transaction":
		return r.transaction(ctx, s)
	case "consume":
		return r.consume(ctx, s)
	case "dlq":
		page, err := c.DLQ(ctx, regina.DLQFilter{Queue: str(s, "queue"), ConsumerGroup: str(s, "group")})
		if err != nil {
			return nil, err
		}
		ids := make([]any, len(page.Messages))
		for i, e := range page.Messages {
			ids[i] = e.TransactionID
		}
		if name := str(s, "save"); name != "" {
			r.dlqs[name] = page.Messages
		}
		return map[string]any{"count": len(page.Messages), "transactionIds": anyOrder(ids)}, nil
	case "requeue":
		entries := r.dlqs[str(s, "ref")]
		i := num(s, "index", 0)
		if i >= len(entries) {
			return nil, fmt.Errorf("no DLQ entry %s[%d]", str(s, "ref"), i)
		}
		_, err := c.Requeue(ctx, entries[i].Ref(), str(s, "group"))
		return nil, err
	case "seek":
		q := c.Queue(str(s, "queue")).Group(str(s, "group"))
		if b, _ := s["toEnd"].(bool); b {
			return nil, q.SeekToEnd(ctx)
		}
		ts, err := time.Parse(time.RFC3339Nano, str(s, "timestamp"))
		if err != nil {
			return nil, err
		}
		return nil, q.SeekTo(ctx, ts)
	case "groups":
		groups, err := c.ConsumerGroups(ctx)
		if err != nil {
			return nil, err
		}
		rows := make([]any, len(groups))
		for i, g := range groups {
			rows[i] = map[string]any{"name": g.Name, "queue": g.Queue}
		}
		return map[string]any{"contains": contains(rows)}, nil
	case "deleteGroup":
		return nil, c.DeleteConsumerGroup(ctx, str(s, "group"), regina.DeleteGroupOptions{Queue: str(s, "queue")})
	case "queues":
		return r.queues(ctx, s)
	case "message":
		d, err := c.Message(ctx, r.ref(s).Ref())
		if err != nil {
			return nil, err
		}
		return map[string]any{"payload": jsonValue(d.Payload), "status": d.Status}, nil
	case "mark":
		r.marks[str(s, "name")] = time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
		return nil, nil
	case "sleep":
		time.Sleep(time.Duration(num(s, "ms", 0)) * time.Millisecond)
		return nil, nil
	}
	r.t.Fatalf("unknown op %q", op)
	return nil, nil
}

func (r *conformance) pop(ctx context.Context, s map[string]any) (any, error) {
	q := r.client.Queue(str(s, "queue")).Partition(str(s, "partition")).Group(str(s, "group"))
	if _, ok := s["batch"]; ok {
		q = q.Batch(num(s, "batch", 1))
	}
	if _, ok := s["partitions"]; ok {
		q = q.Partitions(num(s, "partitions", 1))
	}
	if b, _ := s["wait"].(bool); b {
		q = q.Wait(time.Duration(num(s, "timeoutMs", 30000)) * time.Millisecond)
	}
	if b, _ := s["autoAck"].(bool); b {
		q = q.AutoAck(true)
	}
	if mode := str(s, "subscriptionMode"); mode != "" {
		q = q.SubscriptionMode(mode)
	}
	if from := str(s, "subscriptionFrom"); from == "now" {
		q = q.SubscriptionFromNow()
	} else if from != "" {
		ts, err := time.Parse(time.RFC3339Nano, from)
		if err != nil {
			return nil, err
		}
		q = q.SubscriptionFrom(ts)
	}
	msgs, err := q.Pop(ctx)
	if err != nil {
		return nil, err
	}
	if name := str(s, "save"); name != "" {
		r.pops[name] = msgs
	}
	return messageChecks(msgs), nil
}

func (r *conformance) ack(ctx context.Context, s map[string]any) (any, error) {
	var msgs []*regina.Message
	if all, _ := s["all"].(bool); all {
		msgs = r.pops[str(s, "ref")]
	} else {
		msgs = []*regina.Message{r.ref(s)}
	}
	status := regina.Status(str(s, "status"))
	if status == "" {
		status = regina.Completed
	}
	acks := make([]regina.Acknowledgment, len(msgs))
	for i, m := range msgs {
		acks[i] = regina.Acknowledgment{Message: m, Status: status, Error: str(s, "error"), ConsumerGroup: str(s, "group")}
	}
	results, err := r.client.AckBatch(ctx, acks)
	if err != nil {
		return nil, err
	}
	if len(results) != len(acks) {
		return nil, fmt.Errorf("%d ack results for %d acks", len(results), len(acks))
	}
	success, codes := make([]any, len(results)), make([]any, len(results))
	for i, res := range results {
		success[i], codes[i] = res.Success, res.Code
	}
	return map[string]any{"success": every(success), "code": every(codes)}, nil
}

func (r *conformance) transaction(ctx context.Context, s map[string]any) (any, error) {
	tx := r.client.Transaction()
	for _, raw := range list(s, "acks") {
		a := raw.(map[string]any)
		status := regina.Status(str(a, "status"))
		if status == "" {
			status = regina.Completed
		}
		tx = tx.Ack(r.ref(a), status)
	}
	for _, raw := range list(s, "pushes") {
		p := raw.(map[string]any)
		tx = tx.Queue(str(p, "queue")).Partition(str(p, "partition")).Push(items(p["items"])...)
	}
	res, err := tx.Commit(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": res.Success}, nil
}

func (r *conformance) consume(ctx context.Context, s map[string]any) (any, error) {
	fail := list(s, "failPayloads")
	q := r.client.Queue(str(s, "queue")).Group(str(s, "group")).
		Batch(num(s, "batch", 1)).Limit(num(s, "limit", 0)).
		IdleTimeout(time.Duration(num(s, "idleMillis", 2000)) * time.Millisecond)
	if b, _ := s["autoAck"].(bool); b {
		q = q.AutoAck(true)
	}
	if mode := str(s, "subscriptionMode"); mode != "" {
		q = q.SubscriptionMode(mode)
	}
	var got []*regina.Message
	err := q.Consume(ctx, func(_ context.Context, m *regina.Message) error {
		got = append(got, m)
		payload := jsonValue(m.Data)
		for _, f := range fail {
			if reflect.DeepEqual(payload, f) {
				return fmt.Errorf("handler rejects payload %v", f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if name := str(s, "save"); name != "" {
		r.pops[name] = got
	}
	return messageChecks(got), nil
}

func (r *conformance) queues(ctx context.Context, s map[string]any) (any, error) {
	want, ok := s["expect"].(map[string]any)
	if !ok {
		return nil, errors.New("queues step without expect")
	}
	out := map[string]any{}
	for _, key := range []string{"contains", "excludes"} {
		name, ok := want[key].(string)
		if !ok {
			continue
		}
		page, err := r.client.Queues(ctx, regina.QueueFilter{Search: name})
		if err != nil {
			return nil, err
		}
		names := make([]any, len(page.Queues))
		for i, q := range page.Queues {
			names[i] = q.Name
		}
		if key == "contains" {
			out[key] = contains(names)
		} else {
			out[key] = excludes(names)
		}
	}
	return out, nil
}

// ref returns the saved message named by the step's ref and index.
func (r *conformance) ref(s map[string]any) *regina.Message {
	msgs := r.pops[str(s, "ref")]
	i := num(s, "index", 0)
	if i >= len(msgs) {
		r.t.Fatalf("no saved message %s[%d]", str(s, "ref"), i)
	}
	return msgs[i]
}

// Results of steps, and how an expectation compares to them.
type (
	every    []any // the expected value must equal each element
	anyOrder []any // same elements, any order
	contains []any // the expected value must be an element
	excludes []any // the expected value must not be an element
)

func check(result any, key string, want any) string {
	m, _ := result.(map[string]any)
	got, ok := m[key]
	if !ok {
		return "the step has no such result"
	}
	switch g := got.(type) {
	case every:
		for i, e := range g {
			if !jsonEqual(e, want) {
				return fmt.Sprintf("item %d is %v, want %v", i, e, want)
			}
		}
		return ""
	case anyOrder:
		w, _ := want.([]any)
		if !jsonEqual(sorted(g), sorted(w)) {
			return fmt.Sprintf("got %v, want %v in any order", []any(g), want)
		}
		return ""
	case contains:
		for _, e := range g {
			if jsonEqual(e, want) {
				return ""
			}
		}
		return fmt.Sprintf("%v is not among %d entries", want, len(g))
	case excludes:
		for _, e := range g {
			if jsonEqual(e, want) {
				return fmt.Sprintf("%v is listed", want)
			}
		}
		return ""
	}
	if !jsonEqual(got, want) {
		return fmt.Sprintf("got %v, want %v", got, want)
	}
	return ""
}

func messageChecks(msgs []*regina.Message) map[string]any {
	payloads, ids, parts, retries := []any{}, []any{}, []any{}, []any{}
	for _, m := range msgs {
		payloads = append(payloads, jsonValue(m.Data))
		ids = append(ids, m.TransactionID)
		parts = append(parts, m.Partition)
		retries = append(retries, m.RetryCount)
	}
	return map[string]any{"count": len(msgs), "payloads": payloads, "transactionIds": ids,
		"partitions": parts, "retryCounts": retries, "empty": len(msgs) == 0}
}

// jsonEqual compares two values as JSON documents.
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	return reflect.DeepEqual(jsonValue(ja), jsonValue(jb))
}

func jsonValue(raw []byte) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Sprintf("<invalid JSON %q>", raw)
	}
	return v
}

func sorted(v []any) []string {
	out := make([]string, len(v))
	for i, e := range v {
		out[i] = fmt.Sprint(e)
	}
	sort.Strings(out)
	return out
}

func items(raw any) []regina.Item {
	var out []regina.Item
	for _, e := range raw.([]any) {
		m := e.(map[string]any)
		out = append(out, regina.Item{Payload: m["payload"], TransactionID: str(m, "transactionId"), TraceID: str(m, "traceId")})
	}
	return out
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func num(m map[string]any, key string, def int) int {
	if f, ok := m[key].(float64); ok {
		return int(f)
	}
	return def
}

func obj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

func list(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}
