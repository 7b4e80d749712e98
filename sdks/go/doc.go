// Package regina is the Go client of Regina, a partitioned message queue backed by PostgreSQL
// that speaks the Queen MQ HTTP API v1.
//
// One Client serves a whole program. Queues are addressed with a small builder grammar:
//
//	client.Queue("orders").Config(regina.LeaseTime(30*time.Second)).Create(ctx)
//	client.Queue("orders").Partition("customer-7").Push(ctx, regina.Item{Payload: order})
//	client.Queue("orders").Group("billing").Batch(10).Consume(ctx, handle)
//	client.Transaction().Ack(m, regina.Completed).Queue("shipments").Push(item).Commit(ctx)
//
// Every call that does I/O takes a context.Context first. Errors answered by the broker are
// *Error values carrying the broker's stable code (compare with errors.Is against the Err*
// sentinels, or read Code); requests that got no answer fail with *NetworkError. Network errors
// and 5xx answers are retried with exponential backoff and jitter, across the configured
// servers; 4xx answers never are. Pushes stay safe to retry because the client gives every item
// a transactionId before the first attempt, and the broker deduplicates on it.
package regina

// Version of this SDK, sent in the User-Agent header.
const Version = "0.1.0"
