package regina

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Defaults of a Client; each can be changed with an Option.
const (
	DefaultRetries        = 3
	DefaultTimeout        = 30 * time.Second
	DefaultBackoffBase    = 100 * time.Millisecond
	DefaultBackoffMax     = 5 * time.Second
	DefaultLongPollMargin = 10 * time.Second
	// DefaultPopWait is the long-poll timeout of a waiting pop that names none, and the longest
	// single long-poll of a consumer.
	DefaultPopWait = 30 * time.Second
)

// Client talks to one Regina deployment through one or more broker URLs. It is safe for
// concurrent use; create one per process and share it.
type Client struct {
	servers        []string
	token          string
	retries        int
	timeout        time.Duration
	backoffBase    time.Duration
	backoffMax     time.Duration
	longPollMargin time.Duration
	http           *http.Client

	mu        sync.Mutex
	preferred int // index into servers of the server to try first

	buffers bufferSet
}

// Option configures a Client.
type Option func(*Client)

// WithFailover adds servers tried, in order, when the previous one cannot be reached or answers
// 5xx. The client stays with the server that last answered.
func WithFailover(urls ...string) Option {
	return func(c *Client) { c.servers = append(c.servers, urls...) }
}

// WithToken sends "Authorization: Bearer <token>" on every request.
func WithToken(token string) Option {
	return func(c *Client) { c.token = token }
}

// WithRetries sets how many times a request is repeated after a network error or a 5xx answer
// (default 3; 0 disables retries). 4xx answers are never repeated.
func WithRetries(n int) Option {
	return func(c *Client) { c.retries = max(n, 0) }
}

// WithTimeout sets the per-request timeout (default 30 s). A long-poll pop waits its own
// timeout plus a margin instead (see WithLongPollMargin).
func WithTimeout(d time.Duration) Option {
	return func(c *Client) { c.timeout = d }
}

// WithBackoff sets the exponential backoff between retry rounds: the n-th round waits a random
// duration between half and all of min(base·2ⁿ, max). Defaults: 100 ms and 5 s.
func WithBackoff(base, max time.Duration) Option {
	return func(c *Client) { c.backoffBase, c.backoffMax = base, max }
}

// WithLongPollMargin sets how much longer than its pop timeout a long-poll request may take
// before the client gives up on it (default 10 s).
func WithLongPollMargin(d time.Duration) Option {
	return func(c *Client) { c.longPollMargin = d }
}

// WithHTTPClient replaces the HTTP client (for custom transports or TLS settings). Its Timeout
// should be zero: the SDK sets a deadline per request.
func WithHTTPClient(h *http.Client) Option {
	return func(c *Client) { c.http = h }
}

// New returns a client for the broker at serverURL (for example "http://localhost:6632").
//
// # Errors
//
// New fails when a server URL is not an absolute http or https URL.
func New(serverURL string, opts ...Option) (*Client, error) {
	c := &Client{
		servers:        []string{serverURL},
		retries:        DefaultRetries,
		timeout:        DefaultTimeout,
		backoffBase:    DefaultBackoffBase,
		backoffMax:     DefaultBackoffMax,
		longPollMargin: DefaultLongPollMargin,
		http:           &http.Client{Transport: defaultTransport()},
	}
	for _, opt := range opts {
		opt(c)
	}
	for i, s := range c.servers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("regina: invalid server URL %q", s)
		}
		c.servers[i] = strings.TrimRight(s, "/")
	}
	c.buffers.client = c
	return c, nil
}

// defaultTransport keeps enough idle connections for a consumer's concurrent long-polls.
func defaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

// Close flushes every client-side push buffer (see Queue.Buffer) and releases idle connections.
//
// # Errors
//
// Close returns the first flush error; the buffers that could not be flushed keep their items.
func (c *Client) Close(ctx context.Context) error {
	err := c.Flush(ctx)
	c.http.CloseIdleConnections()
	return err
}

// Flush sends every message held in client-side push buffers, each buffer in push order.
//
// # Errors
//
// Flush returns the errors of the buffers that could not be sent (joined); their items stay
// buffered and are sent by the next flush.
func (c *Client) Flush(ctx context.Context) error {
	var errs []error
	for _, b := range c.buffers.all() {
		if err := b.flush(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
