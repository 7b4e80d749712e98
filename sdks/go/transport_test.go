package regina_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	regina "regina.dev/sdk/go"
)

// Retry, backoff, failover and timeout behaviour that a healthy broker cannot provoke, against
// local fake servers.

// fake is a scripted HTTP server that records the requests it receives.
type fake struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
	handle   func(w http.ResponseWriter, r *http.Request, n int)
}

type recorded struct {
	method, path, query, auth string
	body                      []byte
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int)) *fake {
	f := &fake{handle: handle}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), body})
		n := len(f.requests)
		f.mu.Unlock()
		f.handle(w, r, n)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fake) request(i int) recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// deadServer returns a URL on which nothing listens.
func deadServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func fakeClient(t *testing.T, url string, opts ...regina.Option) *regina.Client {
	t.Helper()
	opts = append([]regina.Option{regina.WithBackoff(time.Millisecond, 5*time.Millisecond)}, opts...)
	c, err := regina.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const queuedOne = `[{"index":0,"transaction_id":"x","status":"queued","message_id":"m","partition_id":"p","trace_id":null,"queueName":"q"}]`

func TestPushIsRetriedOn5xxWithTheSameTransactionIDs(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n < 3 {
			reply(w, 503, `{"error":"Database unavailable","code":"database_unavailable"}`)
			return
		}
		reply(w, 201, queuedOne)
	})
	c := fakeClient(t, srv.URL)
	results, err := c.Queue("q").Push(context.Background(), regina.Item{Payload: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Status != regina.StatusQueued {
		t.Fatalf("results %+v", results)
	}
	if srv.count() != 3 {
		t.Fatalf("%d attempts, want 3", srv.count())
	}
	var first struct {
		Items []struct {
			TransactionID string `json:"transactionId"`
			Partition     string `json:"partition"`
		} `json:"items"`
	}
	if err := json.Unmarshal(srv.request(0).body, &first); err != nil {
		t.Fatal(err)
	}
	id := first.Items[0].TransactionID
	if len(id) != 36 || id[14] != '7' {
		t.Fatalf("transactionId %q is not a UUIDv7", id)
	}
	if first.Items[0].Partition != regina.DefaultPartition {
		t.Fatalf("partition %q, want Default", first.Items[0].Partition)
	}
	for i := 1; i < 3; i++ {
		if string(srv.request(i).body) != string(srv.request(0).body) {
			t.Fatalf("attempt %d sent another body:\n%s\n%s", i, srv.request(i).body, srv.request(0).body)
		}
	}
}

func TestClientErrorsAreNeverRetriedAndCarryTheServerCode(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		reply(w, 400, `{"error":"Invalid traceId","code":"validation_failed","field":"items[3].traceId","index":3,"limit":128}`)
	})
	c := fakeClient(t, srv.URL)
	_, err := c.Queue("q").Push(context.Background(), regina.Item{Payload: 1})
	var e *regina.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *regina.Error, got %T %v", err, err)
	}
	if e.Code != regina.CodeValidationFailed || e.Status != 400 || e.Field != "items[3].traceId" || e.Index != 3 || e.Limit != 128 {
		t.Fatalf("error %+v", e)
	}
	if !errors.Is(err, regina.ErrValidationFailed) || errors.Is(err, regina.ErrLeaseExpired) {
		t.Fatal("errors.Is must match by code")
	}
	if regina.CodeOf(err) != regina.CodeValidationFailed {
		t.Fatalf("CodeOf = %q", regina.CodeOf(err))
	}
	if srv.count() != 1 {
		t.Fatalf("a 4xx was sent %d times", srv.count())
	}
}

func TestNotImplementedIsNotRetried(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		reply(w, 501, `{"error":"Streams API is not available in this version","code":"not_implemented"}`)
	})
	_, err := fakeClient(t, srv.URL).Queue("q").Pop(context.Background())
	if regina.CodeOf(err) != regina.CodeNotImplemented || srv.count() != 1 {
		t.Fatalf("got %v after %d attempts", err, srv.count())
	}
}

func TestFailoverMovesToTheNextServerAndStaysThere(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) { reply(w, 201, queuedOne) })
	c := fakeClient(t, deadServer(t), regina.WithFailover(srv.URL), regina.WithRetries(1))
	for i := 0; i < 3; i++ {
		if _, err := c.Queue("q").Push(context.Background(), regina.Item{Payload: i}); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	if srv.count() != 3 {
		t.Fatalf("the live server got %d requests, want 3", srv.count())
	}
}

func TestFailoverOn5xxFromTheFirstServer(t *testing.T) {
	bad := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		reply(w, 503, `{"error":"Shutting down","code":"shutting_down"}`)
	})
	good := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) { reply(w, 201, queuedOne) })
	c := fakeClient(t, bad.URL, regina.WithFailover(good.URL))
	if _, err := c.Queue("q").Push(context.Background(), regina.Item{Payload: 1}); err != nil {
		t.Fatal(err)
	}
	if bad.count() != 1 || good.count() != 1 {
		t.Fatalf("requests: first %d, second %d", bad.count(), good.count())
	}
}

func TestNetworkErrorAfterRetriesAreSpent(t *testing.T) {
	c := fakeClient(t, deadServer(t), regina.WithRetries(2))
	_, err := c.Queue("q").Push(context.Background(), regina.Item{Payload: 1})
	var ne *regina.NetworkError
	if !errors.As(err, &ne) || ne.Timeout() || errors.Is(err, regina.ErrTimeout) {
		t.Fatalf("want a non-timeout *NetworkError, got %T %v", err, err)
	}
	var e *regina.Error
	if errors.As(err, &e) {
		t.Fatal("a network error must not be a *regina.Error")
	}
}

// The answer would take a minute: an error well before it is the client's own timeout.
func TestRequestTimeoutIsATimeoutErrorAndIsRetried(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	})
	c := fakeClient(t, srv.URL, regina.WithTimeout(50*time.Millisecond), regina.WithRetries(1))
	start := time.Now()
	_, err := c.Queue("q").Push(context.Background(), regina.Item{Payload: 1})
	var ne *regina.NetworkError
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, regina.ErrTimeout) {
		t.Fatalf("want a timeout *NetworkError, got %T %v", err, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("a request timeout must not look like the caller's deadline")
	}
	if srv.count() != 2 {
		t.Fatalf("%d attempts, want 2", srv.count())
	}
	if time.Since(start) >= time.Minute {
		t.Fatalf("took %s: the answer, not the timeout, ended the call", time.Since(start))
	}
}

func TestLongPollTimeoutIsThePopTimeoutPlusAMargin(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		time.Sleep(300 * time.Millisecond) // longer than the client timeout, within the pop's
		w.WriteHeader(http.StatusNoContent)
	})
	c := fakeClient(t, srv.URL, regina.WithTimeout(100*time.Millisecond), regina.WithLongPollMargin(time.Second))
	msgs, err := c.Queue("q").Group("g").Wait(200 * time.Millisecond).Pop(context.Background())
	if err != nil || msgs != nil {
		t.Fatalf("msgs %v, err %v", msgs, err)
	}
	got := srv.request(0)
	for _, want := range []string{"wait=true", "timeout=200", "consumerGroup=g"} {
		if !strings.Contains(got.query, want) {
			t.Fatalf("query %q lacks %s", got.query, want)
		}
	}
	if got.path != "/api/v1/pop/queue/q" {
		t.Fatalf("path %q", got.path)
	}
}

func TestEmptyPopAs204Or200WithNoMessagesIsTheSame(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 1 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		reply(w, 200, `{"success":true,"queue":"q","partition":"Default","partitionId":null,"leaseId":null,"consumerGroup":"__QUEUE_MODE__","messages":[],"reason":"empty"}`)
	})
	c := fakeClient(t, srv.URL)
	for i := 0; i < 2; i++ {
		msgs, err := c.Queue("q").Pop(context.Background())
		if err != nil || len(msgs) != 0 {
			t.Fatalf("pop %d: msgs %v, err %v", i, msgs, err)
		}
	}
}

func TestBearerTokenIsSent(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusNoContent) })
	c := fakeClient(t, srv.URL, regina.WithToken("s3cret"))
	if _, err := c.Queue("q").Pop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if auth := srv.request(0).auth; auth != "Bearer s3cret" {
		t.Fatalf("Authorization %q", auth)
	}
}

func TestCancellingTheCallerStopsRetrying(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		reply(w, 503, `{"error":"Overloaded","code":"overloaded"}`)
	})
	// A backoff lasts at least 30 s (half of a minute, equal jitter): ending sooner means the
	// caller's cancellation ended it.
	c := fakeClient(t, srv.URL, regina.WithBackoff(time.Minute, time.Minute), regina.WithRetries(5))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Queue("q").Push(ctx, regina.Item{Payload: 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the caller's deadline, got %v", err)
	}
	if srv.count() != 1 || time.Since(start) >= 30*time.Second {
		t.Fatalf("%d attempts in %s", srv.count(), time.Since(start))
	}
}

func TestErrorWithoutACodeGetsOneFromItsStatus(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
	})
	c := fakeClient(t, srv.URL, regina.WithRetries(1))
	_, err := c.Queue("q").Pop(context.Background())
	var e *regina.Error
	if !errors.As(err, &e) || e.Status != 502 || e.Code != regina.CodeInternal {
		t.Fatalf("got %v", err)
	}
	if srv.count() != 2 {
		t.Fatalf("a 502 was sent %d times, want 2", srv.count())
	}
}

func TestQueueFullReturnsTheItemResultsAndATypedError(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Retry-After", "1")
		reply(w, 429, `[{"index":0,"transaction_id":"a","status":"queued","message_id":"m","partition_id":"p","trace_id":null,"queueName":"q"},
			{"index":1,"transaction_id":"b","status":"failed","queueName":"q","error":"Queue is full (maxSize 1)","code":"queue_full"}]`)
	})
	c := fakeClient(t, srv.URL)
	results, err := c.Queue("q").Push(context.Background(), regina.Item{Payload: 1}, regina.Item{Payload: 2})
	if !errors.Is(err, regina.ErrQueueFull) {
		t.Fatalf("want queue_full, got %v", err)
	}
	var e *regina.Error
	if !errors.As(err, &e) || e.Status != 429 || e.Index != 1 {
		t.Fatalf("error %+v", e)
	}
	if len(results) != 2 || results[0].Status != regina.StatusQueued || results[1].Code != regina.CodeQueueFull {
		t.Fatalf("results %+v", results)
	}
	if srv.count() != 1 {
		t.Fatalf("a 429 was retried (%d attempts)", srv.count())
	}
}

func TestBufferKeepsItemsInOrderWhenASendFails(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if fail.Load() {
			reply(w, 503, `{"error":"Database unavailable","code":"database_unavailable"}`)
			return
		}
		reply(w, 201, `[]`)
	})
	c := fakeClient(t, srv.URL, regina.WithRetries(0))
	q := c.Queue("q").Partition("p").Buffer(regina.BufferOptions{MessageCount: 100, FlushAfter: time.Hour})
	ctx := context.Background()
	for i := 1; i <= 2; i++ {
		if _, err := q.Push(ctx, regina.Item{Payload: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(ctx); !errors.Is(err, regina.ErrFor(regina.CodeDatabaseUnavailable)) {
		t.Fatalf("want the send's error, got %v", err)
	}
	if _, err := q.Push(ctx, regina.Item{Payload: 3}); err != nil {
		t.Fatal(err)
	}
	fail.Store(false)
	if err := q.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Items []struct {
			Payload   int    `json:"payload"`
			Partition string `json:"partition"`
		} `json:"items"`
	}
	if err := json.Unmarshal(srv.request(srv.count()-1).body, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Items) != 3 || sent.Items[0].Payload != 1 || sent.Items[1].Payload != 2 || sent.Items[2].Payload != 3 {
		t.Fatalf("sent %+v", sent.Items)
	}
	if err := c.Flush(ctx); err != nil || srv.count() != 2 {
		t.Fatalf("an empty flush sent a request (%d) or failed (%v)", srv.count(), err)
	}
}

func TestInvalidServerURLIsRejected(t *testing.T) {
	for _, u := range []string{"localhost:6632", "ftp://x", ""} {
		if _, err := regina.New(u); err == nil {
			t.Fatalf("New(%q) accepted", u)
		}
	}
}

func TestConsumerKeepsGoingThroughTransientFailures(t *testing.T) {
	const delivery = `{"success":true,"queue":"q","partition":"p","partitionId":"pid","leaseId":"L","consumerGroup":"g","partitionsClaimed":1,
		"messages":[{"id":"m1","transactionId":"t1","traceId":null,"data":{"n":1},"producerSub":null,"createdAt":"2026-05-10T09:00:01.123456Z",
		"partitionId":"pid","partition":"p","queue":"q","leaseId":"L","consumerGroup":"g","retryCount":0}]}`
	pops := 0
	srv := newFake(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.URL.Path == "/api/v1/ack/batch" {
			reply(w, 200, `[{"index":0,"transactionId":"t1","success":true,"error":null,"code":null,"leaseReleased":true,"dlq":false}]`)
			return
		}
		if pops++; pops <= 2 {
			w.Header().Set("Retry-After", "1")
			reply(w, 503, `{"error":"Too many waiters","code":"overloaded"}`)
			return
		}
		reply(w, 200, delivery)
	})
	c := fakeClient(t, srv.URL, regina.WithRetries(0))
	var reported []error
	sum, err := c.Queue("q").Group("g").Limit(1).OnError(func(err error) { reported = append(reported, err) }).
		Consume(context.Background(), func(_ context.Context, m *regina.Message) error {
			if m.TransactionID != "t1" || m.CreatedAt.Nanosecond() != 123456000 {
				t.Errorf("message %+v", m)
			}
			return nil
		})
	if err != nil || sum.Messages != 1 || sum.StoppedBy != regina.StopLimit {
		t.Fatalf("summary %+v, err %v", sum, err)
	}
	if len(reported) != 2 || !errors.Is(reported[0], regina.ErrOverloaded) {
		t.Fatalf("reported %v, want the two overloaded answers", reported)
	}
	ack := srv.request(srv.count() - 1)
	var body struct {
		Acknowledgments []map[string]string `json:"acknowledgments"`
	}
	if err := json.Unmarshal(ack.body, &body); err != nil || len(body.Acknowledgments) != 1 {
		t.Fatalf("ack body %s (%v)", ack.body, err)
	}
	want := map[string]string{"transactionId": "t1", "partitionId": "pid", "status": "completed", "leaseId": "L", "consumerGroup": "g"}
	if fmt.Sprint(body.Acknowledgments[0]) != fmt.Sprint(want) {
		t.Fatalf("ack %v, want %v", body.Acknowledgments[0], want)
	}
}

func TestAConsumerWithACancelledContextSendsNothing(t *testing.T) {
	srv := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusNoContent) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sum, err := fakeClient(t, srv.URL).Queue("q").Consume(ctx, func(context.Context, *regina.Message) error { return nil })
	if err != nil || sum.StoppedBy != regina.StopCancelled || srv.count() != 0 {
		t.Fatalf("summary %+v, err %v, %d requests", sum, err, srv.count())
	}
}
