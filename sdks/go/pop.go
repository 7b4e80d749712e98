package regina

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"
)

// QueueMode is the consumer group of requests that name none.
const QueueMode = "__QUEUE_MODE__"

// Message is a delivered message.
type Message struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	TraceID       string `json:"traceId"`
	// Data is the payload as JSON; Decode unmarshals it.
	Data          json.RawMessage `json:"data"`
	ProducerSub   string          `json:"producerSub"`
	CreatedAt     time.Time       `json:"createdAt"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	Queue         string          `json:"queue"`
	LeaseID       string          `json:"leaseId"`
	ConsumerGroup string          `json:"consumerGroup"`
	// RetryCount is the number of failed attempts already recorded for the message.
	RetryCount int `json:"retryCount"`

	settled atomic.Bool // acked by the program (Ack or a committed transaction)
}

// Decode unmarshals the payload into v.
func (m *Message) Decode(v any) error { return json.Unmarshal(m.Data, v) }

// Ref names the message for lookups and requeues.
func (m *Message) Ref() MessageRef {
	return MessageRef{PartitionID: m.PartitionID, TransactionID: m.TransactionID}
}

// MessageRef names a stored message: its partition id and transaction id.
type MessageRef struct {
	PartitionID   string
	TransactionID string
}

// Group sets the consumer group of pops, consumers, seeks and acks made through the builder
// (default: queue mode). Every group receives every message; inside a group each message is
// delivered to one consumer.
func (q *Queue) Group(name string) *Queue {
	return q.with(func(n *Queue) { n.group = name })
}

// SubscriptionMode sets where a new group starts: "all" (the oldest retained message) or "new"
// (messages pushed from its first pop on). It applies on the group's first pop only.
func (q *Queue) SubscriptionMode(mode string) *Queue {
	return q.with(func(n *Queue) { n.subscriptionMode = mode })
}

// SubscriptionFrom makes a new group start at the messages created at or after t.
func (q *Queue) SubscriptionFrom(t time.Time) *Queue {
	return q.with(func(n *Queue) { n.subscriptionFrom = t.UTC().Format(time.RFC3339Nano) })
}

// SubscriptionFromNow is SubscriptionMode("new") by the broker's clock.
func (q *Queue) SubscriptionFromNow() *Queue {
	return q.with(func(n *Queue) { n.subscriptionFrom = "now" })
}

// Batch sets the most messages one pop returns, across all claimed partitions (default 1).
func (q *Queue) Batch(n int) *Queue {
	return q.with(func(c *Queue) { c.batch = &n })
}

// Partitions sets the most partitions one pop claims (default 1).
func (q *Queue) Partitions(n int) *Queue {
	return q.with(func(c *Queue) { c.partitions = n })
}

// Wait makes Pop long-poll: with nothing to deliver, the broker answers as soon as a message
// arrives or after timeout.
func (q *Queue) Wait(timeout time.Duration) *Queue {
	return q.with(func(c *Queue) { c.wait = &timeout })
}

// AutoAck settles messages as completed when they are delivered (at-most-once): no lease, no
// acks, no redelivery.
func (q *Queue) AutoAck(on bool) *Queue {
	return q.with(func(c *Queue) { c.autoAck = on })
}

// popPath returns the pop route of the builder.
func (q *Queue) popPath() string {
	path := "/api/v1/pop/queue/" + url.PathEscape(q.name)
	if q.partition != "" {
		path += "/partition/" + url.PathEscape(q.partition)
	}
	return path
}

// popQuery returns the query of a pop with batch n (nil: the builder's).
func (q *Queue) popQuery(batch *int, wait *time.Duration) url.Values {
	v := url.Values{}
	if batch != nil {
		v.Set("batch", strconv.Itoa(*batch))
	}
	if q.partitions > 0 {
		v.Set("partitions", strconv.Itoa(q.partitions))
	}
	if wait != nil {
		v.Set("wait", "true")
		v.Set("timeout", strconv.FormatInt(wait.Milliseconds(), 10))
	}
	if q.group != "" {
		v.Set("consumerGroup", q.group)
	}
	if q.autoAck {
		v.Set("autoAck", "true")
	}
	if q.subscriptionMode != "" {
		v.Set("subscriptionMode", q.subscriptionMode)
	}
	if q.subscriptionFrom != "" {
		v.Set("subscriptionFrom", q.subscriptionFrom)
	}
	return v
}

// popResponse is the body of a delivering pop.
type popResponse struct {
	Messages []*Message `json:"messages"`
}

// Pop claims and returns up to Batch messages. An empty result (nil, nil) means there was
// nothing to deliver (or the long-poll timed out). Unless AutoAck is on, the messages are leased
// to the caller, who acks them (Client.Ack) before the lease runs out.
//
// # Errors
//
// *Error invalid_parameter for bad settings; *NetworkError when no server answered.
func (q *Queue) Pop(ctx context.Context) ([]*Message, error) {
	return q.pop(ctx, q.batch, q.wait)
}

func (q *Queue) pop(ctx context.Context, batch *int, wait *time.Duration) ([]*Message, error) {
	req := call{method: http.MethodGet, path: q.popPath(), query: q.popQuery(batch, wait)}
	if wait != nil {
		req.timeout = *wait + q.client.longPollMargin
	}
	var out popResponse
	resp, err := q.client.do(ctx, req, &out)
	if err != nil || resp.status == http.StatusNoContent {
		return nil, err
	}
	return out.Messages, nil
}
