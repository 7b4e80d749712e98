package regina_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	regina "regina.dev/sdk/go"
)

// The ops of the conformance step language (../conformance/README.md), each through the SDK's
// public API.

// steps maps each op of the step language to its implementation; each returns what the
// step's expectations check.
var steps = map[string]func(r *conformance, ctx context.Context, s map[string]any) (any, error){
	"configure":    (*conformance).configure,
	"deleteQueue":  (*conformance).deleteQueue,
	"push":         (*conformance).push,
	"bufferedPush": (*conformance).bufferedPush,
	"pop":          (*conformance).pop,
	"ack":          (*conformance).ack,
	"renew":        (*conformance).renew,
	"transaction":  (*conformance).transaction,
	"consume":      (*conformance).consume,
	"dlq":          (*conformance).dlq,
	"requeue":      (*conformance).requeue,
	"seek":         (*conformance).seek,
	"groups":       (*conformance).groups,
	"deleteGroup":  (*conformance).deleteGroup,
	"queues":       (*conformance).queues,
	"message":      (*conformance).message,
	"mark":         (*conformance).mark,
	"sleep":        (*conformance).sleep,
	"stream":       (*conformance).runStream,
	"streamHash":   (*conformance).streamHash,
}

func (r *conformance) configure(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	q := c.Queue(str(s, "queue")).Namespace(str(s, "namespace")).Task(str(s, "task"))
	var opts []regina.QueueOption
	for k, v := range obj(s, "options") {
		opts = append(opts, regina.Setting(k, v))
	}
	res, err := q.Config(opts...).Create(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"created": res.Created}, nil
}

func (r *conformance) deleteQueue(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	res, err := c.Queue(str(s, "queue")).Delete(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"existed": res.Existed}, nil
}

func (r *conformance) push(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	results, err := c.Queue(str(s, "queue")).Partition(str(s, "partition")).Push(ctx, items(s["items"])...)
	if err != nil {
		return nil, err
	}
	statuses := make([]any, len(results))
	for i, res := range results {
		statuses[i] = res.Status
	}
	return map[string]any{"statuses": statuses}, nil
}

func (r *conformance) bufferedPush(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	q := c.Queue(str(s, "queue")).Partition(str(s, "partition")).Buffer(regina.BufferOptions{
		MessageCount: num(s, "messageCount", 0),
		FlushAfter:   time.Duration(num(s, "timeMillis", 0)) * time.Millisecond,
	})
	for _, it := range items(s["items"]) {
		if _, err := q.Push(ctx, it); err != nil {
			return nil, err
		}
	}
	return nil, c.Flush(ctx)
}

func (r *conformance) renew(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	m := r.ref(s)
	res, err := c.RenewLease(ctx, m.LeaseID, time.Duration(num(s, "seconds", 0))*time.Second)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": res.Success}, nil
}

func (r *conformance) dlq(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	page, err := c.DLQ(ctx, regina.DLQFilter{Queue: str(s, "queue"), ConsumerGroup: str(s, "group")})
	if err != nil {
		return nil, err
	}
	ids := make([]any, len(page.Messages))
	for i, e := range page.Messages {
		ids[i] = e.TransactionID
	}
	if name := str(s, "save"); name != "" {
		r.dlqs[name] = page.Messages
	}
	return map[string]any{"count": len(page.Messages), "transactionIds": anyOrder(ids)}, nil
}

func (r *conformance) requeue(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	entries := r.dlqs[str(s, "ref")]
	i := num(s, "index", 0)
	if i >= len(entries) {
		return nil, fmt.Errorf("no DLQ entry %s[%d]", str(s, "ref"), i)
	}
	_, err := c.Requeue(ctx, entries[i].Ref(), str(s, "group"))
	return nil, err
}

func (r *conformance) seek(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	q := c.Queue(str(s, "queue")).Group(str(s, "group"))
	if b, _ := s["toEnd"].(bool); b {
		return nil, q.SeekToEnd(ctx)
	}
	ts, err := time.Parse(time.RFC3339Nano, str(s, "timestamp"))
	if err != nil {
		return nil, err
	}
	return nil, q.SeekTo(ctx, ts)
}

func (r *conformance) groups(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	groups, err := c.ConsumerGroups(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]any, len(groups))
	for i, g := range groups {
		rows[i] = map[string]any{"name": g.Name, "queue": g.Queue}
	}
	return map[string]any{"contains": contains(rows)}, nil
}

func (r *conformance) deleteGroup(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	return nil, c.DeleteConsumerGroup(ctx, str(s, "group"), regina.DeleteGroupOptions{Queue: str(s, "queue")})
}

func (r *conformance) message(ctx context.Context, s map[string]any) (any, error) {
	c := r.client
	d, err := c.Message(ctx, r.ref(s).Ref())
	if err != nil {
		return nil, err
	}
	return map[string]any{"payload": jsonValue(d.Payload), "status": d.Status}, nil
}

func (r *conformance) mark(ctx context.Context, s map[string]any) (any, error) {
	r.marks[str(s, "name")] = time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return nil, nil
}

func (r *conformance) sleep(ctx context.Context, s map[string]any) (any, error) {
	time.Sleep(time.Duration(num(s, "ms", 0)) * time.Millisecond)
	return nil, nil
}

func (r *conformance) pop(ctx context.Context, s map[string]any) (any, error) {
	q := r.client.Queue(str(s, "queue")).Partition(str(s, "partition")).Group(str(s, "group"))
	if _, ok := s["batch"]; ok {
		q = q.Batch(num(s, "batch", 1))
	}
	if _, ok := s["partitions"]; ok {
		q = q.Partitions(num(s, "partitions", 1))
	}
	if b, _ := s["wait"].(bool); b {
		q = q.Wait(time.Duration(num(s, "timeoutMs", 30000)) * time.Millisecond)
	}
	if b, _ := s["autoAck"].(bool); b {
		q = q.AutoAck(true)
	}
	if mode := str(s, "subscriptionMode"); mode != "" {
		q = q.SubscriptionMode(mode)
	}
	if from := str(s, "subscriptionFrom"); from == "now" {
		q = q.SubscriptionFromNow()
	} else if from != "" {
		ts, err := time.Parse(time.RFC3339Nano, from)
		if err != nil {
			return nil, err
		}
		q = q.SubscriptionFrom(ts)
	}
	msgs, err := q.Pop(ctx)
	if err != nil {
		return nil, err
	}
	if name := str(s, "save"); name != "" {
		r.pops[name] = msgs
	}
	return messageChecks(msgs), nil
}

func (r *conformance) ack(ctx context.Context, s map[string]any) (any, error) {
	var msgs []*regina.Message
	if all, _ := s["all"].(bool); all {
		msgs = r.pops[str(s, "ref")]
	} else {
		msgs = []*regina.Message{r.ref(s)}
	}
	status := regina.Status(str(s, "status"))
	if status == "" {
		status = regina.Completed
	}
	acks := make([]regina.Acknowledgment, len(msgs))
	for i, m := range msgs {
		acks[i] = regina.Acknowledgment{Message: m, Status: status, Error: str(s, "error"), ConsumerGroup: str(s, "group")}
	}
	results, err := r.client.AckBatch(ctx, acks)
	if err != nil {
		return nil, err
	}
	if len(results) != len(acks) {
		return nil, fmt.Errorf("%d ack results for %d acks", len(results), len(acks))
	}
	success, codes := make([]any, len(results)), make([]any, len(results))
	for i, res := range results {
		success[i], codes[i] = res.Success, res.Code
	}
	return map[string]any{"success": every(success), "code": every(codes)}, nil
}

func (r *conformance) transaction(ctx context.Context, s map[string]any) (any, error) {
	tx := r.client.Transaction()
	for _, raw := range list(s, "acks") {
		a := raw.(map[string]any)
		status := regina.Status(str(a, "status"))
		if status == "" {
			status = regina.Completed
		}
		tx = tx.Ack(r.ref(a), status)
	}
	for _, raw := range list(s, "pushes") {
		p := raw.(map[string]any)
		tx = tx.Queue(str(p, "queue")).Partition(str(p, "partition")).Push(items(p["items"])...)
	}
	res, err := tx.Commit(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"success": res.Success}, nil
}

func (r *conformance) consume(ctx context.Context, s map[string]any) (any, error) {
	fail := list(s, "failPayloads")
	q := r.client.Queue(str(s, "queue")).Group(str(s, "group")).
		Batch(num(s, "batch", 1)).Limit(num(s, "limit", 0)).
		IdleTimeout(time.Duration(num(s, "idleMillis", 2000)) * time.Millisecond)
	if b, _ := s["autoAck"].(bool); b {
		q = q.AutoAck(true)
	}
	if mode := str(s, "subscriptionMode"); mode != "" {
		q = q.SubscriptionMode(mode)
	}
	var got []*regina.Message
	_, err := q.Consume(ctx, func(_ context.Context, m *regina.Message) error {
		got = append(got, m)
		payload := jsonValue(m.Data)
		for _, f := range fail {
			if reflect.DeepEqual(payload, f) {
				return fmt.Errorf("handler rejects payload %v", f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if name := str(s, "save"); name != "" {
		r.pops[name] = got
	}
	return messageChecks(got), nil
}

func (r *conformance) queues(ctx context.Context, s map[string]any) (any, error) {
	want, ok := s["expect"].(map[string]any)
	if !ok {
		return nil, errors.New("queues step without expect")
	}
	out := map[string]any{}
	for _, key := range []string{"contains", "excludes"} {
		name, ok := want[key].(string)
		if !ok {
			continue
		}
		page, err := r.client.Queues(ctx, regina.QueueFilter{Search: name})
		if err != nil {
			return nil, err
		}
		names := make([]any, len(page.Queues))
		for i, q := range page.Queues {
			names[i] = q.Name
		}
		if key == "contains" {
			out[key] = contains(names)
		} else {
			out[key] = excludes(names)
		}
	}
	return out, nil
}

// ref returns the saved message named by the step's ref and index.
func (r *conformance) ref(s map[string]any) *regina.Message {
	msgs := r.pops[str(s, "ref")]
	i := num(s, "index", 0)
	if i >= len(msgs) {
		r.t.Fatalf("no saved message %s[%d]", str(s, "ref"), i)
	}
	return msgs[i]
}
