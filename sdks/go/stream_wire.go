package regina

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// The three streams routes: register a query, read state, commit a cycle. They are retried on
// network errors, timeouts, 408, 429 and 5xx (not 501) with the client's retry count and
// backoff; other 4xx are final. A 2xx answer with success false is a failure too. A cycle is safe
// to retry: the broker recognises a cycle that already committed (by its ack's lease), and sink
// items keep the transaction ids given to them before the first attempt, so a repeated ack-less
// cycle pushes nothing twice.

// streamRetryStatuses are the statuses below 500 that the streams routes retry.
var streamRetryStatuses = []int{http.StatusRequestTimeout, http.StatusTooManyRequests}

// Registration is the answer of a query registration.
type Registration struct {
	// QueryID is the broker's id of the query (a UUID, unchanged by a reset).
	QueryID string `json:"query_id"`
	// Name is the query's name (RunOptions.QueryID).
	Name string `json:"name"`
	// Fresh is true when this registration created the query.
	Fresh bool `json:"fresh"`
	// Reset is true when this registration wiped the query's state for a new chain.
	Reset bool `json:"reset"`
}

// cycleItem is a sink item, written as /api/v1/push items are.
type cycleItem struct {
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Payload       any    `json:"payload"`
	TransactionID string `json:"transactionId"`
	TraceID       string `json:"traceId,omitempty"`
}

// cycleAck is the source ack of a cycle.
type cycleAck struct {
	TransactionID string `json:"transactionId"`
	LeaseID       string `json:"leaseId"`
	Status        Status `json:"status"`
	Count         int    `json:"count"`
}

type cycleBody struct {
	QueryID      string      `json:"query_id"`
	PartitionID  string      `json:"partition_id"`
	Group        string      `json:"consumer_group"`
	StateOps     []stateOp   `json:"state_ops"`
	PushItems    []cycleItem `json:"push_items"`
	Ack          *cycleAck   `json:"ack"`
	ReleaseLease *bool       `json:"release_lease,omitempty"`
}

// streamAnswer is the part of every streams answer the client reads.
type streamAnswer struct {
	Success *bool  `json:"success"`
	Error   string `json:"error"`
	Code    string `json:"code"`
}

func (c *Client) streamPost(ctx context.Context, path string, body, out any) error {
	raw := json.RawMessage{}
	resp, err := c.do(ctx, call{method: http.MethodPost, path: path, body: body, retryStatuses: streamRetryStatuses}, &raw)
	if err != nil {
		return err
	}
	var answer streamAnswer
	if json.Unmarshal(raw, &answer) != nil || (answer.Success != nil && !*answer.Success) {
		if answer.Code == "" {
			answer.Code = CodeInternal
		}
		if answer.Error == "" {
			answer.Error = path + " answered without success"
		}
		return &Error{Code: answer.Code, Status: resp.status, Message: answer.Error, Index: -1, body: raw}
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// registerQuery registers a stream's query. A 409 is ErrConfigHashMismatch with a hint.
func (c *Client) registerQuery(ctx context.Context, name, source, sink, hash string, reset bool) (Registration, error) {
	body := map[string]any{"name": name, "source_queue": source, "config_hash": hash, "reset": reset, "sink_queue": nil}
	if sink != "" {
		body["sink_queue"] = sink
	}
	var out Registration
	err := c.streamPost(ctx, "/streams/v1/queries", body, &out)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusConflict {
		hinted := *e
		if hinted.Code == CodeValidationFailed || hinted.Code == "" {
			hinted.Code = CodeConfigHashMismatch
		}
		hinted.Message += " The operator chain of query '" + name + "' differs from the registered one: " +
			"run with Reset to drop its state, or use a new QueryID."
		return out, &hinted
	}
	return out, err
}

// readState reads a shard's rows (all of them, or the ripe ones under a prefix), by key.
func (c *Client) readState(ctx context.Context, queryID, partitionID, prefix string, ripe *int64) (map[string]any, error) {
	body := map[string]any{"query_id": queryID, "partition_id": partitionID, "keys": []string{}}
	if prefix != "" {
		body["key_prefix"] = prefix
	}
	if ripe != nil {
		body["ripe_at_or_before"] = *ripe
	}
	var out struct {
		Rows []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"rows"`
	}
	if err := c.streamPost(ctx, "/streams/v1/state/get", body, &out); err != nil {
		return nil, err
	}
	rows := make(map[string]any, len(out.Rows))
	for _, row := range out.Rows {
		rows[row.Key] = row.Value
	}
	return rows, nil
}

// commitCycle commits a cycle: all of it or nothing.
func (c *Client) commitCycle(ctx context.Context, body cycleBody) error {
	if body.StateOps == nil {
		body.StateOps = []stateOp{}
	}
	if body.PushItems == nil {
		body.PushItems = []cycleItem{}
	}
	return c.streamPost(ctx, "/streams/v1/cycle", body, nil)
}
