package regina

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// DLQFilter selects DLQ entries; zero fields do not filter.
type DLQFilter struct {
	Queue         string
	ConsumerGroup string
	Partition     string
	// From and To bound the failure time.
	From, To time.Time
	// Limit is the page size (broker default 100, at most 1000); Offset skips entries.
	Limit, Offset int
}

// DLQEntry is a dead-lettered message of one group, with a copy of its payload.
type DLQEntry struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  string          `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	Data          json.RawMessage `json:"data"`
	TraceID       string          `json:"traceId"`
	ProducerSub   string          `json:"producerSub"`
	CreatedAt     time.Time       `json:"createdAt"`
	FailedAt      time.Time       `json:"failedAt"`
}

// Decode unmarshals the payload copy into v.
func (e *DLQEntry) Decode(v any) error { return json.Unmarshal(e.Data, v) }

// Ref names the entry's message, for Requeue and Message.
func (e *DLQEntry) Ref() MessageRef {
	return MessageRef{PartitionID: e.PartitionID, TransactionID: e.TransactionID}
}

// DLQPage is one page of DLQ entries, newest failure first.
type DLQPage struct {
	Messages []DLQEntry `json:"messages"`
	// Total counts every entry that matches the filter.
	Total int `json:"total"`
}

// DLQ lists dead-lettered messages.
//
// # Errors
//
// *Error invalid_parameter for a bad filter; *NetworkError.
func (c *Client) DLQ(ctx context.Context, f DLQFilter) (*DLQPage, error) {
	q := url.Values{}
	setString(q, "queue", f.Queue)
	setString(q, "consumerGroup", f.ConsumerGroup)
	setString(q, "partition", f.Partition)
	setTime(q, "from", f.From)
	setTime(q, "to", f.To)
	setInt(q, "limit", f.Limit)
	setInt(q, "offset", f.Offset)
	var out DLQPage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/dlq", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RequeueResult names the groups a requeue delivered the message to again.
type RequeueResult struct {
	Success        bool     `json:"success"`
	ConsumerGroups []string `json:"consumerGroups"`
}

// Requeue takes a dead-lettered message out of the DLQ of group ("" : of every group whose DLQ
// holds it) and delivers it to that group again, after the partition's current messages.
//
// # Errors
//
// *Error not_in_dlq or message_not_found (404).
func (c *Client) Requeue(ctx context.Context, ref MessageRef, group string) (*RequeueResult, error) {
	body := map[string]any{}
	if group != "" {
		body["consumerGroup"] = group
	}
	var out RequeueResult
	_, err := c.do(ctx, call{method: http.MethodPost, path: messagePath(ref) + "/retry", body: body}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// GroupState is a consumer group's state on one message.
type GroupState struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	Consumed   bool   `json:"consumed"`
	RetryCount int    `json:"retryCount"`
}

// MessageDetail is a stored message as Message returns it.
type MessageDetail struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	Namespace     string          `json:"namespace"`
	Task          string          `json:"task"`
	Status        string          `json:"status"`
	Payload       json.RawMessage `json:"payload"`
	TraceID       string          `json:"traceId"`
	ProducerSub   string          `json:"producerSub"`
	CreatedAt     time.Time       `json:"createdAt"`
	ErrorMessage  string          `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	// ConsumerGroups is the message's state in each group that knows it.
	ConsumerGroups []GroupState `json:"consumerGroups"`
}

// Decode unmarshals the payload into v.
func (d *MessageDetail) Decode(v any) error { return json.Unmarshal(d.Payload, v) }

// Message looks a stored message up.
//
// # Errors
//
// *Error message_not_found (404).
func (c *Client) Message(ctx context.Context, ref MessageRef) (*MessageDetail, error) {
	var out MessageDetail
	if _, err := c.do(ctx, call{method: http.MethodGet, path: messagePath(ref)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func messagePath(ref MessageRef) string {
	return "/api/v1/messages/" + url.PathEscape(ref.PartitionID) + "/" + url.PathEscape(ref.TransactionID)
}

// ConsumerGroup is one (group, queue) pair the broker knows.
type ConsumerGroup struct {
	Name  string `json:"name"`
	Queue string `json:"queueName"`
	// Members counts the group's cursors on the queue.
	Members           int     `json:"members"`
	PartitionsWithLag int     `json:"partitionsWithLag"`
	TotalLag          int64   `json:"totalLag"`
	MaxTimeLag        float64 `json:"maxTimeLag"`
	// State is "Stable", "Lagging" or "Dead".
	State            string `json:"state"`
	SubscriptionMode string `json:"subscriptionMode"`
}

// ConsumerGroups lists every (group, queue) pair with a cursor or a subscription, queue mode
// included.
//
// # Errors
//
// *NetworkError, or an *Error from the broker.
func (c *Client) ConsumerGroups(ctx context.Context) ([]ConsumerGroup, error) {
	var out []ConsumerGroup
	q := url.Values{"limit": {"10000"}}
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/consumer-groups", query: q}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteGroupOptions narrow DeleteConsumerGroup.
type DeleteGroupOptions struct {
	// Queue limits the deletion to one queue ("" : every queue).
	Queue string
	// KeepSubscription keeps the group's subscription start, so reusing the name starts there.
	KeepSubscription bool
}

// DeleteConsumerGroup removes a group's cursors (ending its leases) and, unless
// KeepSubscription, its subscriptions; DLQ entries stay. A group deleted this way starts afresh
// on its next pop. Needs the admin role when the broker checks tokens.
//
// # Errors
//
// *NetworkError, or an *Error from the broker.
func (c *Client) DeleteConsumerGroup(ctx context.Context, group string, opts DeleteGroupOptions) error {
	path := "/api/v1/consumer-groups/" + url.PathEscape(group)
	if opts.Queue != "" {
		path += "/queues/" + url.PathEscape(opts.Queue)
	}
	q := url.Values{"deleteMetadata": {strconv.FormatBool(!opts.KeepSubscription)}}
	_, err := c.do(ctx, call{method: http.MethodDelete, path: path, query: q}, nil)
	return err
}

// SeekToEnd moves the builder's group (on every partition of the queue, or on the builder's
// partition) past every message committed so far: it next receives only newer messages.
//
// # Errors
//
// *Error queue_not_found / partition_not_found (404).
func (q *Queue) SeekToEnd(ctx context.Context) error {
	return q.seek(ctx, map[string]any{"toEnd": true})
}

// SeekTo moves the builder's group so that it next receives, in each partition, the first
// message created after t (earlier messages are settled, later ones delivered again).
//
// # Errors
//
// As SeekToEnd.
func (q *Queue) SeekTo(ctx context.Context, t time.Time) error {
	return q.seek(ctx, map[string]any{"timestamp": t.UTC().Format(time.RFC3339Nano)})
}

func (q *Queue) seek(ctx context.Context, body map[string]any) error {
	group := q.group
	if group == "" {
		group = QueueMode
	}
	path := "/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/" + url.PathEscape(q.name)
	if q.partition != "" {
		path += "/partitions/" + url.PathEscape(q.partition)
	}
	_, err := q.client.do(ctx, call{method: http.MethodPost, path: path + "/seek", body: body}, nil)
	return err
}

// QueueFilter selects queues; zero fields do not filter.
type QueueFilter struct {
	Namespace, Task string
	// Search matches a substring of the name.
	Search string
	// Limit is the page size (broker default 1000); Offset skips queues.
	Limit, Offset int
}

// QueueInfo is one queue of a listing.
type QueueInfo struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Namespace  string    `json:"namespace"`
	Task       string    `json:"task"`
	Priority   int       `json:"priority"`
	CreatedAt  time.Time `json:"createdAt"`
	Partitions int       `json:"partitions"`
	Messages   struct {
		Total      int64 `json:"total"`
		Pending    int64 `json:"pending"`
		Processing int64 `json:"processing"`
	} `json:"messages"`
}

// QueuePage is one page of queues, ordered by name.
type QueuePage struct {
	Queues     []QueueInfo `json:"queues"`
	Pagination struct {
		Limit  int `json:"limit"`
		Offset int `json:"offset"`
		Total  int `json:"total"`
	} `json:"pagination"`
}

// Queues lists queues.
//
// # Errors
//
// *Error invalid_parameter for a bad filter; *NetworkError.
func (c *Client) Queues(ctx context.Context, f QueueFilter) (*QueuePage, error) {
	q := url.Values{}
	setString(q, "namespace", f.Namespace)
	setString(q, "task", f.Task)
	setString(q, "search", f.Search)
	setInt(q, "limit", f.Limit)
	setInt(q, "offset", f.Offset)
	var out QueuePage
	if _, err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/resources/queues", query: q}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func setString(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}

func setInt(q url.Values, key string, value int) {
	if value > 0 {
		q.Set(key, strconv.Itoa(value))
	}
}

func setTime(q url.Values, key string, t time.Time) {
	if !t.IsZero() {
		q.Set(key, t.UTC().Format(time.RFC3339Nano))
	}
}
