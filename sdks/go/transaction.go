package regina

import (
	"context"
	"net/http"
)

// Transaction is a builder of acks and pushes that the broker applies atomically: all of them
// or none. Build it with Client.Transaction, then Commit.
type Transaction struct {
	client     *Client
	operations []any
	acked      []*Message
}

// Transaction starts an empty transaction.
func (c *Client) Transaction() *Transaction {
	return &Transaction{client: c}
}

// Ack adds an ack of m (under the lease it was delivered with) to the transaction.
func (t *Transaction) Ack(m *Message, status Status, opts ...AckOption) *Transaction {
	a := Acknowledgment{Message: m, Status: status}
	for _, opt := range opts {
		opt(&a)
	}
	w := a.wire()
	t.operations = append(t.operations, struct {
		Type string `json:"type"`
		wireAck
	}{"ack", w})
	t.acked = append(t.acked, m)
	return t
}

// TransactionQueue addresses a queue inside a transaction.
type TransactionQueue struct {
	tx        *Transaction
	queue     string
	partition string
}

// Queue addresses the queue that the next Push of the transaction goes to.
func (t *Transaction) Queue(name string) *TransactionQueue {
	return &TransactionQueue{tx: t, queue: name}
}

// Partition sets the partition of the next Push (default DefaultPartition).
func (tq *TransactionQueue) Partition(name string) *TransactionQueue {
	next := *tq
	next.partition = name
	return &next
}

// Push adds items to the transaction. Items without a TransactionID get one now, so a retried
// commit is deduplicated.
func (tq *TransactionQueue) Push(items ...Item) *Transaction {
	t := tq.tx
	t.operations = append(t.operations, map[string]any{
		"type": "push", "items": wireItems(tq.queue, tq.partition, items),
	})
	return t
}

// TransactionResult is a committed transaction.
type TransactionResult struct {
	// TransactionID names this transaction.
	TransactionID string               `json:"transactionId"`
	Success       bool                 `json:"success"`
	Results       []TransactionOutcome `json:"results"`
}

// TransactionOutcome is the result of one ack operation or one pushed item, in operation order.
type TransactionOutcome struct {
	Index         int    `json:"index"`
	Type          string `json:"type"` // "ack" or "push"
	Success       bool   `json:"success"`
	Status        string `json:"status"` // push: "queued" or "duplicate"
	TransactionID string `json:"transactionId"`
	MessageID     string `json:"messageId"`
	PartitionID   string `json:"partitionId"`
	Queue         string `json:"queueName"`
	Error         string `json:"error"`
	Code          string `json:"code"`
	DLQ           bool   `json:"dlq"`
	LeaseReleased bool   `json:"leaseReleased"`
}

// Commit sends the transaction. Committing the same transaction again (a retry after a lost
// answer) is safe: acks already applied succeed idempotently and pushes come back "duplicate".
//
// # Errors
//
// When any operation fails nothing is applied and the error is an *Error with the failing
// operation's code: lease_expired, not_leased, already_settled or group_mismatch (409),
// message_not_found (404), queue_full (429), validation_failed (400).
func (t *Transaction) Commit(ctx context.Context) (*TransactionResult, error) {
	if len(t.operations) == 0 {
		return nil, &Error{Code: CodeValidationFailed, Message: "operations array cannot be empty", Index: -1}
	}
	var out TransactionResult
	body := map[string]any{"operations": t.operations}
	_, err := t.client.do(ctx, call{method: http.MethodPost, path: "/api/v1/transaction", body: body}, &out)
	if err != nil {
		return nil, err
	}
	if !out.Success {
		// A 2xx without success is not a commit the program may rely on.
		return nil, &Error{Code: CodeInternal, Message: "transaction not committed", Index: -1}
	}
	for _, m := range t.acked {
		m.settled.Store(true)
	}
	return &out, nil
}
