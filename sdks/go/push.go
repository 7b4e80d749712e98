package regina

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
)

// Item is one message to push.
type Item struct {
	// Payload is any value encoding/json can encode (a json.RawMessage is sent as is).
	Payload any
	// TransactionID is the deduplication key within the partition. When empty, the client
	// assigns a UUIDv7 before the first attempt, so a retried push is never stored twice.
	TransactionID string
	// TraceID is an optional correlation id carried with the message (up to 128 characters).
	TraceID string
}

// Push item statuses.
const (
	StatusQueued    = "queued"    // stored
	StatusDuplicate = "duplicate" // its transactionId was already stored in the partition
	StatusBuffered  = "buffered"  // kept in the broker's failover buffer; stored later
	StatusFailed    = "failed"    // rejected, see Code (queue_full)
)

// PushResult is the outcome of one pushed item, in the order of the items.
type PushResult struct {
	Index         int    `json:"index"`
	TransactionID string `json:"transaction_id"`
	Status        string `json:"status"`
	MessageID     string `json:"message_id"`
	PartitionID   string `json:"partition_id"`
	TraceID       string `json:"trace_id"`
	Queue         string `json:"queueName"`
	Error         string `json:"error"`
	Code          string `json:"code"`
}

// wireItem is a push item as the broker reads it.
type wireItem struct {
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Payload       any    `json:"payload"`
	TransactionID string `json:"transactionId"`
	TraceID       string `json:"traceId,omitempty"`
}

// wireItems addresses items to queue/partition and gives every item without a transactionId a
// fresh one.
func wireItems(queue, partition string, items []Item) []wireItem {
	if partition == "" {
		partition = DefaultPartition
	}
	out := make([]wireItem, len(items))
	for i, it := range items {
		id := it.TransactionID
		if id == "" {
			id = newUUIDv7()
		}
		out[i] = wireItem{Queue: queue, Partition: partition, Payload: it.Payload,
			TransactionID: id, TraceID: it.TraceID}
	}
	return out
}

// Push stores items in the queue's partition (DefaultPartition unless Partition was set), in
// order. When the queue has a client-side buffer (Buffer), the items are only buffered and Push
// returns no results; Flush sends them.
//
// # Errors
//
// A request-level failure (*Error validation_failed, too_many_items, …, or *NetworkError) stores
// nothing. When the queue is full (maxSize), Push returns the per-item results together with an
// *Error queue_full: the items with Status "queued" or "duplicate" were stored, the "failed" ones
// were not; pushing the same items again is safe.
func (q *Queue) Push(ctx context.Context, items ...Item) ([]PushResult, error) {
	if q.buffer != nil {
		return nil, q.client.buffers.add(ctx, q, items)
	}
	return q.client.push(ctx, wireItems(q.name, q.partition, items))
}

func (c *Client) push(ctx context.Context, items []wireItem) ([]PushResult, error) {
	var out []PushResult
	body := map[string]any{"items": items}
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/push", body: body}, &out)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusTooManyRequests {
		// The body of a capacity rejection is the full per-item array.
		if json.Unmarshal(e.body, &out) == nil {
			for _, r := range out {
				if r.Status == StatusFailed {
					e.Code, e.Message, e.Index = r.Code, r.Error, r.Index
					break
				}
			}
			return out, e
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
