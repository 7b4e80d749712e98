package regina_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStreams stands in for the broker's pop, ack and streams routes in wire-shape tests of the
// stream runner: pops answer from a script, registrations, state and cycles live in memory, and
// every request is recorded. Failures can be scripted per route.
type fakeStreams struct {
	mu       sync.Mutex
	seen     []seenRequest
	pops     [][]map[string]any
	queries  map[string][2]string // name → {id, hash}
	state    map[string]map[string]any
	failures map[string][]fakeAnswer
	url      string
}

type seenRequest struct {
	path string
	body map[string]any
}

type fakeAnswer struct {
	status int
	body   any
}

var fakeSequence int
var fakeSequenceMu sync.Mutex

// fakeMessage is a delivered message of partition (id pid-<partition>) under lease lease-1.
func fakeMessage(partition string, data any, createdAt string) map[string]any {
	fakeSequenceMu.Lock()
	fakeSequence++
	n := fakeSequence
	fakeSequenceMu.Unlock()
	if createdAt == "" {
		createdAt = "2026-01-01T00:00:00.000Z"
	}
	return map[string]any{"id": fmt.Sprintf("m-%d", n), "transactionId": fmt.Sprintf("tx-%d", n), "data": data,
		"createdAt": createdAt, "partitionId": "pid-" + partition, "partition": partition, "queue": "source",
		"leaseId": "lease-1", "consumerGroup": "streams.q", "retryCount": 0}
}

func newFakeStreams(t *testing.T) *fakeStreams {
	f := &fakeStreams{queries: map[string][2]string{}, state: map[string]map[string]any{}, failures: map[string][]fakeAnswer{}}
	server := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(server.Close)
	f.url = server.URL
	return f
}

func (f *fakeStreams) serve(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	body := map[string]any{}
	_ = json.Unmarshal(data, &body)
	status, answer := f.answer(r.URL.Path, body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if answer != nil {
		_ = json.NewEncoder(w).Encode(answer)
	}
}

func (f *fakeStreams) answer(path string, body map[string]any) (int, any) {
	f.mu.Lock()
	f.seen = append(f.seen, seenRequest{path, body})
	if pending := f.failures[path]; len(pending) > 0 {
		f.failures[path] = pending[1:]
		f.mu.Unlock()
		return pending[0].status, pending[0].body
	}
	if strings.HasPrefix(path, "/api/v1/pop/") {
		if len(f.pops) > 0 {
			batch := f.pops[0]
			f.pops = f.pops[1:]
			f.mu.Unlock()
			return 200, map[string]any{"messages": batch}
		}
		f.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		return 204, nil
	}
	defer f.mu.Unlock()
	switch path {
	case "/api/v1/ack/batch":
		return 200, []map[string]any{{"index": 0, "success": true}}
	case "/streams/v1/queries":
		return f.register(body)
	case "/streams/v1/state/get":
		return 200, map[string]any{"success": true, "rows": f.rows(body)}
	case "/streams/v1/cycle":
		rows := f.shardLocked(body["query_id"].(string), body["partition_id"].(string))
		ops, _ := body["state_ops"].([]any)
		for _, raw := range ops {
			op := raw.(map[string]any)
			if op["type"] == "upsert" {
				rows[op["key"].(string)] = op["value"]
			} else {
				delete(rows, op["key"].(string))
			}
		}
		return 200, map[string]any{"success": true}
	}
	return 404, map[string]any{"error": "no route", "code": "route_not_found"}
}

func (f *fakeStreams) register(body map[string]any) (int, any) {
	name, hash := body["name"].(string), body["config_hash"].(string)
	stored, ok := f.queries[name]
	answer := map[string]any{"success": true, "name": name, "fresh": false, "reset": false}
	switch {
	case !ok:
		stored = [2]string{fmt.Sprintf("00000000-0000-4000-8000-%012d", len(f.queries)+1), hash}
		f.queries[name] = stored
		answer["fresh"] = true
	case stored[1] == hash:
	case body["reset"] != true:
		return 409, map[string]any{"success": false, "code": "config_hash_mismatch",
			"error": "config_hash mismatch: operator chain changed for queryId '" + name + "'."}
	default:
		for key := range f.state {
			if strings.HasPrefix(key, stored[0]+"/") {
				delete(f.state, key)
			}
		}
		stored[1] = hash
		f.queries[name] = stored
		answer["reset"] = true
	}
	answer["query_id"] = stored[0]
	return 200, answer
}

func (f *fakeStreams) rows(body map[string]any) []map[string]any {
	rows := f.shardLocked(body["query_id"].(string), body["partition_id"].(string))
	prefix, _ := body["key_prefix"].(string)
	ripe, hasRipe := body["ripe_at_or_before"].(float64)
	keys := make([]string, 0, len(rows))
	for key := range rows {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare([]byte(keys[i]), []byte(keys[j])) < 0 })
	out := []map[string]any{}
	for _, key := range keys {
		value, _ := rows[key].(map[string]any)
		end, isNumber := value["windowEnd"].(float64)
		if !strings.HasPrefix(key, prefix) || (hasRipe && (!isNumber || end > ripe)) {
			continue
		}
		out = append(out, map[string]any{"key": key, "value": rows[key]})
	}
	return out
}

func (f *fakeStreams) shardLocked(queryID, partitionID string) map[string]any {
	key := queryID + "/" + partitionID
	if f.state[key] == nil {
		f.state[key] = map[string]any{}
	}
	return f.state[key]
}

// shard sets up rows of a shard (numbers as float64, as JSON decodes them).
func (f *fakeStreams) shard(queryID, partitionID string, set map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rows := f.shardLocked(queryID, partitionID)
	for k, v := range set {
		rows[k] = v
	}
}

func (f *fakeStreams) push(batch ...map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pops = append(f.pops, batch)
}

func (f *fakeStreams) fail(path string, answers ...fakeAnswer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[path] = answers
}

// requests returns the bodies of the requests to path.
func (f *fakeStreams) requests(path string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, s := range f.seen {
		if s.path == path {
			out = append(out, s.body)
		}
	}
	return out
}

// waitFor polls cond every 10 ms for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
