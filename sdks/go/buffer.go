package regina

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// BufferOptions configure a client-side push buffer.
type BufferOptions struct {
	// MessageCount sends the buffer as soon as it holds this many items (default 100).
	MessageCount int
	// FlushAfter sends the buffer at the latest this long after its oldest item was buffered
	// (default 1 s).
	FlushAfter time.Duration
}

// Buffer makes Push collect items in memory, per queue and partition, and send them in one
// request when MessageCount items are held or FlushAfter has passed; Client.Flush (and Close)
// send whatever is held. Order within a queue/partition is kept. Items that cannot be sent stay
// buffered, in order, for the next flush.
func (q *Queue) Buffer(opts BufferOptions) *Queue {
	if opts.MessageCount <= 0 {
		opts.MessageCount = 100
	}
	if opts.FlushAfter <= 0 {
		opts.FlushAfter = time.Second
	}
	return q.with(func(n *Queue) { n.buffer = &opts })
}

// Flush sends the buffered items of this queue and partition.
//
// # Errors
//
// As Push; the items stay buffered when the send fails.
func (q *Queue) Flush(ctx context.Context) error {
	if b := q.client.buffers.get(q.name, q.partition); b != nil {
		return b.flush(ctx)
	}
	return nil
}

// bufferSet holds the client's push buffers by queue and partition.
type bufferSet struct {
	client *Client
	mu     sync.Mutex
	byKey  map[[2]string]*pushBuffer
}

func (s *bufferSet) get(queue, partition string) *pushBuffer {
	if partition == "" {
		partition = DefaultPartition
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[[2]string{queue, partition}]
}

func (s *bufferSet) all() []*pushBuffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*pushBuffer, 0, len(s.byKey))
	for _, b := range s.byKey {
		out = append(out, b)
	}
	return out
}

// add buffers items for q and sends the buffer when it is full.
func (s *bufferSet) add(ctx context.Context, q *Queue, items []Item) error {
	partition := q.partition
	if partition == "" {
		partition = DefaultPartition
	}
	key := [2]string{q.name, partition}
	s.mu.Lock()
	if s.byKey == nil {
		s.byKey = make(map[[2]string]*pushBuffer)
	}
	b := s.byKey[key]
	if b == nil {
		b = &pushBuffer{client: s.client}
		s.byKey[key] = b
	}
	s.mu.Unlock()

	if full := b.append(*q.buffer, wireItems(q.name, partition, items)); full {
		return b.flush(ctx)
	}
	return nil
}

// pushBuffer is the buffer of one queue/partition.
type pushBuffer struct {
	client *Client
	send   sync.Mutex // held during a send, so sends of one buffer keep their order

	mu    sync.Mutex
	items []wireItem
	opts  BufferOptions
	timer *time.Timer
}

// append adds items and reports whether the buffer reached its message count.
func (b *pushBuffer) append(opts BufferOptions, items []wireItem) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opts = opts
	b.items = append(b.items, items...)
	b.armLocked()
	return len(b.items) >= b.opts.MessageCount
}

// armLocked starts the FlushAfter timer when items wait and none runs.
func (b *pushBuffer) armLocked() {
	if b.timer != nil || len(b.items) == 0 {
		return
	}
	b.timer = time.AfterFunc(b.opts.FlushAfter, func() {
		b.mu.Lock()
		b.timer = nil
		b.mu.Unlock()
		// A failed background send keeps the items and re-arms the timer; the next Flush
		// reports the error if it persists.
		_ = b.flush(context.Background())
	})
}

// flush sends everything buffered; on failure the items go back to the front of the buffer.
func (b *pushBuffer) flush(ctx context.Context) error {
	b.send.Lock()
	defer b.send.Unlock()
	b.mu.Lock()
	items := b.items
	b.items = nil
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.mu.Unlock()
	if len(items) == 0 {
		return nil
	}
	results, err := b.client.push(ctx, items)
	if err == nil {
		return nil
	}
	// Put back what was not stored, in order; a capacity rejection stored a prefix.
	kept := items
	if results != nil {
		kept = kept[:0:0]
		for i, r := range results {
			if r.Status == StatusFailed && i < len(items) {
				kept = append(kept, items[i])
			}
		}
	}
	b.mu.Lock()
	b.items = append(kept, b.items...)
	b.armLocked()
	b.mu.Unlock()
	return fmt.Errorf("regina: flushing %d buffered items: %w", len(kept), err)
}
