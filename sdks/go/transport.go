package regina

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// responseBytesMax bounds the body the client reads from one response.
const responseBytesMax = 256 << 20

// userAgent identifies the SDK in the broker's logs.
const userAgent = "regina-go/" + Version

// call is one logical API request; the client may send it several times.
type call struct {
	method string
	path   string // already escaped
	query  url.Values
	body   any
	// timeout of one attempt; 0 means the client's timeout.
	timeout time.Duration
	// retryStatuses are 4xx statuses retried like 5xx for this call (the streams routes retry
	// 408 and 429).
	retryStatuses []int
}

// response is an HTTP answer with a status below 400.
type response struct {
	status int
	body   []byte
}

// do sends c with retries and failover and decodes a 2xx JSON body into out (when out is not nil
// and the body is not empty).
//
// Network errors and 5xx answers (and the call's retryStatuses) are retried: the next attempt goes
// to the next server, and a backoff is slept after every server has been tried once. The body is
// encoded once, so a retried push carries the same transactionIds as the first attempt.
func (c *Client) do(ctx context.Context, req call, out any) (*response, error) {
	var payload []byte
	if req.body != nil {
		var err error
		if payload, err = json.Marshal(req.body); err != nil {
			return nil, fmt.Errorf("regina: encoding the request: %w", err)
		}
	}
	tried, round := 0, 0
	for attempt := 0; ; attempt++ {
		server := c.server()
		resp, err := c.attempt(ctx, server, req, payload)
		if err == nil {
			c.prefer(server)
			if out != nil && len(resp.body) > 0 {
				if err := json.Unmarshal(resp.body, out); err != nil {
					return resp, fmt.Errorf("regina: decoding the %s %s response: %w", req.method, req.path, err)
				}
			}
			return resp, nil
		}
		if ctx.Err() != nil || !(isRetryable(err) || hasStatus(err, req.retryStatuses)) || attempt >= c.retries {
			return nil, err
		}
		c.skip(server)
		if tried++; tried >= len(c.servers) {
			tried = 0
			if err := sleep(ctx, c.backoff(round, err)); err != nil {
				return nil, err
			}
			round++
		}
	}
}

// attempt sends one request to one server.
func (c *Client) attempt(ctx context.Context, server string, req call, payload []byte) (*response, error) {
	timeout := req.timeout
	if timeout <= 0 {
		timeout = c.timeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	target := server + req.path
	if len(req.query) > 0 {
		target += "?" + req.query.Encode()
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	hreq, err := http.NewRequestWithContext(actx, req.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("regina: building the request: %w", err)
	}
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", userAgent)
	if payload != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.token)
	}

	hresp, err := c.http.Do(hreq)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(io.LimitReader(hresp.Body, responseBytesMax))
		hresp.Body.Close()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("regina: %s %s: %w", req.method, target, ctx.Err())
		}
		if actx.Err() != nil {
			return nil, &NetworkError{Method: req.method, URL: target, timeout: true,
				Err: fmt.Errorf("no answer within %s", timeout)}
		}
		return nil, &NetworkError{Method: req.method, URL: target, Err: err}
	}
	if hresp.StatusCode >= 400 {
		return nil, decodeError(hresp, data)
	}
	return &response{status: hresp.StatusCode, body: data}, nil
}

// wireError is the error body of every error response (HTTP API §1.3).
type wireError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	Field string `json:"field"`
	Index *int   `json:"index"`
	Limit int64  `json:"limit"`
}

// decodeError turns an error response into an *Error; a body without a code (a proxy's page, for
// example) gets a code derived from the status.
func decodeError(resp *http.Response, data []byte) *Error {
	e := &Error{Status: resp.StatusCode, Index: -1, body: data}
	var w wireError
	if json.Unmarshal(data, &w) == nil && w.Code != "" {
		e.Code, e.Message, e.Field, e.Limit = w.Code, w.Error, w.Field, w.Limit
		if w.Index != nil {
			e.Index = *w.Index
		}
	} else {
		e.Code = statusCode(resp.StatusCode)
		e.Message = http.StatusText(resp.StatusCode)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.retryAfter = time.Duration(s) * time.Second
	}
	return e
}

// statusCode is the registry code that a bare status most likely stands for.
func statusCode(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return CodeUnauthorized
	case status == http.StatusForbidden:
		return CodeForbidden
	case status == http.StatusNotFound:
		return CodeRouteNotFound
	case status == http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case status == http.StatusRequestEntityTooLarge:
		return CodeBodyTooLarge
	case status == http.StatusTooManyRequests:
		return CodeQueueFull
	case status == http.StatusServiceUnavailable:
		return CodeOverloaded
	case status >= 500:
		return CodeInternal
	default:
		return CodeValidationFailed
	}
}

// server returns the server to try next.
func (c *Client) server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[c.preferred]
}

// prefer makes server the first choice of later requests.
func (c *Client) prefer(server string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.servers {
		if s == server {
			c.preferred = i
			return
		}
	}
}

// skip moves the first choice past server, unless another request already did.
func (c *Client) skip(server string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers[c.preferred] == server {
		c.preferred = (c.preferred + 1) % len(c.servers)
	}
}

// backoff returns the pause before retry round n: equal jitter over min(base·2ⁿ, max), and at
// least the Retry-After the broker asked for (capped by max).
func (c *Client) backoff(n int, cause error) time.Duration {
	d := c.backoffMax
	if n < 30 && c.backoffBase<<n < c.backoffMax && c.backoffBase<<n > 0 {
		d = c.backoffBase << n
	}
	d = d/2 + rand.N(d/2+1)
	var e *Error
	if errors.As(cause, &e) && e.retryAfter > d {
		d = min(e.retryAfter, c.backoffMax)
	}
	return d
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
