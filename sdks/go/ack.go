package regina

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Status is the outcome an ack reports for a message.
type Status string

// Ack statuses.
const (
	// Completed settles the message for the group.
	Completed Status = "completed"
	// Failed ends the lease and charges a failed attempt to the partition's head; after
	// retryLimit failed attempts the message is dead-lettered.
	Failed Status = "failed"
	// Retry ends the lease without charging an attempt; the messages are delivered again.
	Retry Status = "retry"
	// DLQ dead-letters the message for the group at once.
	DLQ Status = "dlq"
)

// Acknowledgment is one item of a batch ack.
type Acknowledgment struct {
	Message *Message
	Status  Status
	// Error is the failure reason, kept in the DLQ entry.
	Error string
	// ConsumerGroup overrides the message's group.
	ConsumerGroup string
}

// AckOption refines an ack.
type AckOption func(*Acknowledgment)

// WithReason records why the message failed (kept in its DLQ entry).
func WithReason(text string) AckOption {
	return func(a *Acknowledgment) { a.Error = text }
}

// WithGroup acks for group instead of the group the message was delivered to.
func WithGroup(group string) AckOption {
	return func(a *Acknowledgment) { a.ConsumerGroup = group }
}

// AckResult is the outcome of one ack item. Item failures are values, not errors: Success is
// false and Code says why (lease_expired, not_leased, already_settled, message_not_found, …).
type AckResult struct {
	Index         int    `json:"index"`
	TransactionID string `json:"transactionId"`
	Success       bool   `json:"success"`
	Error         string `json:"error"`
	Code          string `json:"code"`
	Queue         string `json:"queueName"`
	Partition     string `json:"partitionName"`
	// LeaseReleased is true when this ack ended the lease.
	LeaseReleased bool `json:"leaseReleased"`
	// DLQ is true when this ack wrote a DLQ entry.
	DLQ bool `json:"dlq"`
}

// Err returns the item failure as an *Error, or nil on success.
func (r AckResult) Err() error {
	if r.Success {
		return nil
	}
	return &Error{Code: r.Code, Message: r.Error, Index: r.Index}
}

// wireAck is an ack item as the broker reads it.
type wireAck struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	Status        Status `json:"status"`
	LeaseID       string `json:"leaseId,omitempty"`
	ConsumerGroup string `json:"consumerGroup,omitempty"`
	Error         string `json:"error,omitempty"`
}

func (a Acknowledgment) wire() wireAck {
	group := a.ConsumerGroup
	if group == "" {
		group = a.Message.ConsumerGroup
	}
	status := a.Status
	if status == "" {
		status = Completed
	}
	return wireAck{TransactionID: a.Message.TransactionID, PartitionID: a.Message.PartitionID,
		Status: status, LeaseID: a.Message.LeaseID, ConsumerGroup: group, Error: a.Error}
}

// Ack reports the outcome of a delivered message under the lease it was delivered with.
//
// # Errors
//
// Only request-level failures are errors (*Error for a bad request, *NetworkError); an ack the
// broker refuses for this message is reported in the result (Success false, Code).
func (c *Client) Ack(ctx context.Context, m *Message, status Status, opts ...AckOption) (AckResult, error) {
	a := Acknowledgment{Message: m, Status: status}
	for _, opt := range opts {
		opt(&a)
	}
	results, err := c.AckBatch(ctx, []Acknowledgment{a})
	if err != nil {
		return AckResult{}, err
	}
	if len(results) == 0 {
		return AckResult{}, &Error{Code: CodeInternal, Message: "empty ack response", Index: -1}
	}
	return results[0], nil
}

// AckBatch sends several acks in one request. Results come in input order.
//
// # Errors
//
// As Ack.
func (c *Client) AckBatch(ctx context.Context, acks []Acknowledgment) ([]AckResult, error) {
	if len(acks) == 0 {
		return nil, nil
	}
	items := make([]wireAck, len(acks))
	for i, a := range acks {
		items[i] = a.wire()
	}
	var out []AckResult
	body := map[string]any{"acknowledgments": items}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/ack/batch", body: body}, &out); err != nil {
		return nil, err
	}
	for i, r := range out {
		if r.Success && i < len(acks) {
			acks[i].Message.settled.Store(true)
		}
	}
	return out, nil
}

// RenewResult is the outcome of a lease extension.
type RenewResult struct {
	LeaseID string `json:"leaseId"`
	Success bool   `json:"success"`
	Error   string `json:"error"`
	// Code is lease_expired or lease_not_found when Success is false.
	Code string `json:"code"`
	// ExpiresAt is the lease's new expiry (the earliest among its partitions).
	ExpiresAt time.Time `json:"expiresAt"`
}

// Renew extends the lease m was delivered under by the queue's leaseTime, for every partition
// the lease holds. An expired lease cannot be renewed (Success false, Code lease_expired).
//
// # Errors
//
// Request-level failures only, as Ack.
func (c *Client) Renew(ctx context.Context, m *Message) (RenewResult, error) {
	return c.RenewLease(ctx, m.LeaseID, 0)
}

// RenewLease extends the lease leaseID to at least now + d (d = 0: the queue's leaseTime).
//
// # Errors
//
// Request-level failures only, as Ack.
func (c *Client) RenewLease(ctx context.Context, leaseID string, d time.Duration) (RenewResult, error) {
	body := map[string]any{}
	if s := seconds(d); s > 0 {
		body["seconds"] = s
	}
	var out []RenewResult
	path := "/api/v1/lease/" + url.PathEscape(leaseID) + "/extend"
	if _, err := c.do(ctx, call{method: http.MethodPost, path: path, body: body}, &out); err != nil {
		return RenewResult{}, err
	}
	if len(out) == 0 {
		return RenewResult{}, &Error{Code: CodeInternal, Message: "empty lease response", Index: -1}
	}
	return out[0], nil
}
