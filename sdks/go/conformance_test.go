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
	// streamTotals are stream metrics summed over earlier stream steps, by query id.
	streamTotals map[string]map[string]float64
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
		streamTotals: map[string]map[string]float64{},
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
	fn, ok := steps[op]
	if !ok {
		r.t.Fatalf("unknown op %q", op)
	}
	return fn(r, ctx, s)
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
	case metricChecks:
		return g.check(want)
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
