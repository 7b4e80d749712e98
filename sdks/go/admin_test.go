package regina_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	regina "regina.dev/sdk/go"
)

// Transactions and admin calls against the live broker, beyond the conformance scenarios.

func TestTransactionCommitIsAtomicAndSafeToRepeat(t *testing.T) {
	c := liveClient(t)
	ctx := testContext(t, 30*time.Second)
	src, dst := uniqueName("go-tx-src"), uniqueName("go-tx-dst")
	if _, err := c.Queue(src).Push(ctx, regina.Item{Payload: "in"}); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Queue(src).Group("stage").Pop(ctx)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("pop: %v %v", msgs, err)
	}
	tx := c.Transaction().Ack(msgs[0], regina.Completed).
		Queue(dst).Partition("p").Push(regina.Item{Payload: "out-1"}, regina.Item{Payload: "out-2"})
	first, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A repeated commit (as after a lost answer) applies nothing twice.
	again, err := tx.Commit(ctx)
	if err != nil {
		t.Fatalf("repeating the commit: %v", err)
	}
	if statuses(first) != "[ queued queued]" || statuses(again) != "[ duplicate duplicate]" {
		t.Fatalf("first commit %s, repeated %s", statuses(first), statuses(again))
	}
	out, err := c.Queue(dst).Batch(10).AutoAck(true).Pop(ctx)
	if err != nil || payloads(t, out) != "[out-1 out-2]" {
		t.Fatalf("the next stage got %s (err %v)", payloads(t, out), err)
	}
	if rest, err := c.Queue(src).Group("stage").Pop(ctx); err != nil || len(rest) != 0 {
		t.Fatalf("the acked message is delivered again: %v %v", rest, err)
	}
}

func statuses(r *regina.TransactionResult) string {
	var s []string
	for _, o := range r.Results {
		s = append(s, o.Status)
	}
	return fmt.Sprint(s)
}

func TestAFailedTransactionAppliesNothing(t *testing.T) {
	c := liveClient(t)
	ctx := testContext(t, 30*time.Second)
	src, dst := uniqueName("go-tx-src"), uniqueName("go-tx-dst")
	if _, err := c.Queue(src).Push(ctx, regina.Item{Payload: "in"}); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Queue(src).Group("stage").AutoAck(true).Pop(ctx)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("pop: %v %v", msgs, err)
	}
	// Failing an auto-acked message is refused, so the push must not happen either.
	_, err = c.Transaction().Ack(msgs[0], regina.Failed, regina.WithReason("no")).
		Queue(dst).Push(regina.Item{Payload: "must not appear"}).Commit(ctx)
	var e *regina.Error
	if !errors.As(err, &e) || e.Status != 409 || !errors.Is(err, regina.ErrAlreadySettled) {
		t.Fatalf("want 409 already_settled, got %v", err)
	}
	if out, err := c.Queue(dst).AutoAck(true).Pop(ctx); err != nil || len(out) != 0 {
		t.Fatalf("a failed transaction pushed %s (err %v)", payloads(t, out), err)
	}
}

func TestSeekOnOnePartitionReplaysOnlyThatPartition(t *testing.T) {
	c := liveClient(t)
	ctx := testContext(t, 30*time.Second)
	q := uniqueName("go-seek")
	for _, p := range []string{"a", "b"} {
		if _, err := c.Queue(q).Partition(p).Push(ctx, regina.Item{Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	group := c.Queue(q).Group("g").Batch(10).Partitions(10).AutoAck(true)
	if got, err := group.Pop(ctx); err != nil || len(got) != 2 {
		t.Fatalf("first pass: %v %v", got, err)
	}
	if err := group.Partition("a").SeekTo(ctx, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := group.Pop(ctx)
	if err != nil || payloads(t, got) != "[a]" {
		t.Fatalf("after seeking partition a the group gets %s (err %v)", payloads(t, got), err)
	}
}

func TestRequeueDeliversADeadLetterAgainAndLookupShowsIt(t *testing.T) {
	c := liveClient(t)
	ctx := testContext(t, 30*time.Second)
	q := uniqueName("go-requeue")
	if _, err := c.Queue(q).Partition("p").Push(ctx, regina.Item{Payload: map[string]any{"n": 1}, TransactionID: "x1"}); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Queue(q).Group("g").Pop(ctx)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("pop: %v %v", msgs, err)
	}
	if res, err := c.Ack(ctx, msgs[0], regina.DLQ, regina.WithReason("bad input")); err != nil || !res.Success || !res.DLQ {
		t.Fatalf("dlq ack: %+v %v", res, err)
	}
	detail, err := c.Message(ctx, msgs[0].Ref())
	if err != nil {
		t.Fatal(err)
	}
	var payload struct{ N int }
	if err := detail.Decode(&payload); err != nil || payload.N != 1 || detail.TransactionID != "x1" {
		t.Fatalf("lookup %+v (payload %+v, err %v)", detail, payload, err)
	}
	page, err := c.DLQ(ctx, regina.DLQFilter{Queue: q})
	if err != nil || page.Total != 1 || page.Messages[0].ErrorMessage != "bad input" {
		t.Fatalf("DLQ %+v (err %v)", page, err)
	}
	res, err := c.Requeue(ctx, page.Messages[0].Ref(), "")
	if err != nil || fmt.Sprint(res.ConsumerGroups) != "[g]" {
		t.Fatalf("requeue %+v (err %v)", res, err)
	}
	again, err := c.Queue(q).Group("g").AutoAck(true).Pop(ctx)
	if err != nil || len(again) != 1 || again[0].TransactionID != "x1" {
		t.Fatalf("after the requeue the group gets %v (err %v)", again, err)
	}
	if _, err := c.Requeue(ctx, page.Messages[0].Ref(), "g"); !errors.Is(err, regina.ErrNotInDLQ) {
		t.Fatalf("requeueing twice: want not_in_dlq, got %v", err)
	}
	if _, err := c.Message(ctx, regina.MessageRef{PartitionID: msgs[0].PartitionID, TransactionID: "nope"}); !errors.Is(err, regina.ErrMessageNotFound) {
		t.Fatalf("lookup of an unknown message: want message_not_found, got %v", err)
	}
}

func TestDeletingAGroupStartsItAfresh(t *testing.T) {
	c := liveClient(t)
	ctx := testContext(t, 30*time.Second)
	q := uniqueName("go-groups")
	if _, err := c.Queue(q).Push(ctx, regina.Item{Payload: 1}); err != nil {
		t.Fatal(err)
	}
	group := c.Queue(q).Group("g").AutoAck(true)
	if got, err := group.Pop(ctx); err != nil || len(got) != 1 {
		t.Fatalf("pop: %v %v", got, err)
	}
	groups, err := c.ConsumerGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range groups {
		found = found || (g.Name == "g" && g.Queue == q)
	}
	if !found {
		t.Fatalf("group g on %s is not listed among %d groups", q, len(groups))
	}
	if err := c.DeleteConsumerGroup(ctx, "g", regina.DeleteGroupOptions{Queue: q}); err != nil {
		t.Fatal(err)
	}
	if got, err := group.Pop(ctx); err != nil || payloads(t, got) != "[1]" {
		t.Fatalf("after the delete the group gets %s (err %v)", payloads(t, got), err)
	}
	if res, err := c.Queue(q).Delete(ctx); err != nil || !res.Existed {
		t.Fatalf("delete queue: %+v %v", res, err)
	}
	if res, err := c.Queue(q).Delete(ctx); err != nil || res.Existed {
		t.Fatalf("deleting again: %+v %v", res, err)
	}
	page, err := c.Queues(ctx, regina.QueueFilter{Search: q})
	if err != nil || len(page.Queues) != 0 {
		t.Fatalf("the deleted queue is listed: %+v %v", page, err)
	}
}
