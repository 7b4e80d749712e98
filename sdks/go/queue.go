package regina

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// DefaultPartition is the partition of pushes and pops that name none.
const DefaultPartition = "Default"

// Queue is an immutable builder that addresses one queue (and optionally one partition and one
// consumer group) and carries the settings of the calls made through it. Every setter returns a
// modified copy, so a Queue value can be kept and reused.
type Queue struct {
	client    *Client
	name      string
	partition string // "" means any partition on pop and DefaultPartition on push

	// configure
	options   map[string]any
	namespace string
	task      string

	// push
	buffer *BufferOptions

	// pop and consume
	group            string
	subscriptionMode string
	subscriptionFrom string
	batch            *int
	partitions       int
	wait             *time.Duration
	autoAck          bool
	consume          consumeSettings
}

// Queue returns a builder for the queue name.
func (c *Client) Queue(name string) *Queue {
	return &Queue{client: c, name: name}
}

func (q *Queue) with(change func(*Queue)) *Queue {
	next := *q
	change(&next)
	return &next
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// Partition addresses one partition: pushes go to it and pops read only from it.
func (q *Queue) Partition(name string) *Queue {
	return q.with(func(n *Queue) { n.partition = name })
}

// QueueOption is one queue setting for Config; see LeaseTime, RetryLimit and the others.
type QueueOption func(options map[string]any)

// Config sets queue options for Create. Options not given keep their stored value (or their
// default on a new queue).
func (q *Queue) Config(opts ...QueueOption) *Queue {
	return q.with(func(n *Queue) {
		n.options = make(map[string]any, len(q.options)+len(opts))
		for k, v := range q.options {
			n.options[k] = v
		}
		for _, opt := range opts {
			opt(n.options)
		}
	})
}

// Namespace sets the queue's namespace for Create (default: derived from the name).
func (q *Queue) Namespace(namespace string) *Queue {
	return q.with(func(n *Queue) { n.namespace = namespace })
}

// Task sets the queue's task for Create (default: derived from the name).
func (q *Queue) Task(task string) *Queue {
	return q.with(func(n *Queue) { n.task = task })
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// Setting sets the queue option key (as the HTTP API names it) to value. It reaches options this
// package has no helper for.
func Setting(key string, value any) QueueOption {
	return func(o map[string]any) { o[key] = value }
}

// LeaseTime is how long a pop's lease lasts before it expires (whole seconds; default 5 min).
func LeaseTime(d time.Duration) QueueOption { return Setting("leaseTime", seconds(d)) }

// RetryLimit is how many failed attempts a message may have before it is dead-lettered (default 3).
func RetryLimit(n int) QueueOption { return Setting("retryLimit", n) }

// RetryDelay is how long a partition rests after a failed attempt (milliseconds; default 0).
func RetryDelay(d time.Duration) QueueOption { return Setting("retryDelay", d.Milliseconds()) }

// MaxSize caps the queue's depth in messages; pushes beyond it fail with queue_full (0: no cap).
func MaxSize(n int64) QueueOption { return Setting("maxSize", n) }

// TTL is how long a message may wait before it expires undelivered (whole seconds; 0: never).
func TTL(d time.Duration) QueueOption { return Setting("ttl", seconds(d)) }

// Priority orders queues in namespace/task pops, highest first (default 0).
func Priority(n int) QueueOption { return Setting("priority", n) }

// DelayedProcessing hides every message for this long after its push (whole seconds).
func DelayedProcessing(d time.Duration) QueueOption {
	return Setting("delayedProcessing", seconds(d))
}

// WindowBuffer delivers a partition only once it has had no push for this long (whole seconds).
func WindowBuffer(d time.Duration) QueueOption { return Setting("windowBuffer", seconds(d)) }

// DeadLetterQueue keeps a DLQ copy of dead-lettered messages (default true).
func DeadLetterQueue(on bool) QueueOption { return Setting("deadLetterQueue", on) }

// RetentionEnabled is the master switch of Retention and CompletedRetention (default true).
func RetentionEnabled(on bool) QueueOption { return Setting("retentionEnabled", on) }

// Retention deletes messages older than d, consumed or not (whole seconds; 0: off).
func Retention(d time.Duration) QueueOption { return Setting("retentionSeconds", seconds(d)) }

// CompletedRetention deletes messages older than d that every group has settled (0: off).
func CompletedRetention(d time.Duration) QueueOption {
	return Setting("completedRetentionSeconds", seconds(d))
}

// MaxWaitTime evicts messages older than d that some group has not settled (0: off).
func MaxWaitTime(d time.Duration) QueueOption {
	return Setting("maxWaitTimeSeconds", seconds(d))
}

// EncryptionEnabled stores payloads pushed from now on encrypted (the broker needs a key).
func EncryptionEnabled(on bool) QueueOption { return Setting("encryptionEnabled", on) }

// ConfigureResult is the broker's answer to Create.
type ConfigureResult struct {
	Created     bool           `json:"created"`
	QueueID     string         `json:"queueId"`
	PartitionID string         `json:"partitionId"`
	Queue       string         `json:"queue"`
	Namespace   string         `json:"namespace"`
	Task        string         `json:"task"`
	Options     map[string]any `json:"options"`
}

// Create creates the queue with the options given to Config, or changes an existing queue's
// options (those given replace the stored ones; the others stay).
//
// # Errors
//
// *Error validation_failed for an invalid name or option; encryption_unavailable.
func (q *Queue) Create(ctx context.Context) (*ConfigureResult, error) {
	body := map[string]any{"queue": q.name}
	if q.namespace != "" {
		body["namespace"] = q.namespace
	}
	if q.task != "" {
		body["task"] = q.task
	}
	if len(q.options) > 0 {
		body["options"] = q.options
	}
	var out ConfigureResult
	_, err := q.client.do(ctx, call{method: http.MethodPost, path: "/api/v1/configure", body: body}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteQueueResult is the broker's answer to Delete.
type DeleteQueueResult struct {
	Deleted bool   `json:"deleted"`
	Queue   string `json:"queue"`
	// Existed is false when there was no such queue (deleting is idempotent).
	Existed bool `json:"existed"`
}

// Delete deletes the queue with its partitions, messages, cursors and DLQ entries. Deleting a
// queue that does not exist succeeds with Existed false. Needs the admin role when the broker
// checks tokens.
func (q *Queue) Delete(ctx context.Context) (*DeleteQueueResult, error) {
	var out DeleteQueueResult
	path := "/api/v1/resources/queues/" + url.PathEscape(q.name)
	if _, err := q.client.do(ctx, call{method: http.MethodDelete, path: path}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
