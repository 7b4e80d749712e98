package regina

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Error codes of the broker's error registry (HTTP API §2.3). A code never changes meaning; the
// human-readable text that comes with it may, so programs branch on codes only.
const (
	CodeInvalidJSON           = "invalid_json"
	CodeValidationFailed      = "validation_failed"
	CodeInvalidParameter      = "invalid_parameter"
	CodeTooManyItems          = "too_many_items"
	CodeUnauthorized          = "unauthorized"
	CodeTokenExpired          = "token_expired"
	CodeForbidden             = "forbidden"
	CodeRouteNotFound         = "route_not_found"
	CodeQueueNotFound         = "queue_not_found"
	CodePartitionNotFound     = "partition_not_found"
	CodeMessageNotFound       = "message_not_found"
	CodeNotInDLQ              = "not_in_dlq"
	CodeMethodNotAllowed      = "method_not_allowed"
	CodeLeaseExpired          = "lease_expired"
	CodeLeaseNotFound         = "lease_not_found"
	CodeNotLeased             = "not_leased"
	CodeAlreadySettled        = "already_settled"
	CodeGroupMismatch         = "group_mismatch"
	CodeMessageLeased         = "message_leased"
	CodeQueryNotFound         = "query_not_found"
	CodeConfigHashMismatch    = "config_hash_mismatch"
	CodeEncryptionUnavailable = "encryption_unavailable"
	CodeBodyTooLarge          = "body_too_large"
	CodeQueueFull             = "queue_full"
	CodeDatabaseUnavailable   = "database_unavailable"
	CodeDatabaseTimeout       = "database_timeout"
	CodeBufferUnavailable     = "buffer_unavailable"
	CodeOverloaded            = "overloaded"
	CodeShuttingDown          = "shutting_down"
	CodeNotImplemented        = "not_implemented"
	CodeDecryptionFailed      = "decryption_failed"
	CodeInternal              = "internal"
)

// Sentinels for the codes programs most often branch on. They match any *Error with the same
// code through errors.Is, whatever its status or text:
//
//	if errors.Is(err, regina.ErrLeaseExpired) { ... }
var (
	ErrValidationFailed = sentinel(CodeValidationFailed)
	ErrInvalidParameter = sentinel(CodeInvalidParameter)
	ErrUnauthorized     = sentinel(CodeUnauthorized)
	ErrForbidden        = sentinel(CodeForbidden)
	ErrQueueNotFound    = sentinel(CodeQueueNotFound)
	ErrMessageNotFound  = sentinel(CodeMessageNotFound)
	ErrNotInDLQ         = sentinel(CodeNotInDLQ)
	ErrLeaseExpired     = sentinel(CodeLeaseExpired)
	ErrNotLeased        = sentinel(CodeNotLeased)
	ErrAlreadySettled   = sentinel(CodeAlreadySettled)
	ErrGroupMismatch    = sentinel(CodeGroupMismatch)
	ErrMessageLeased    = sentinel(CodeMessageLeased)
	ErrQueueFull        = sentinel(CodeQueueFull)
	ErrOverloaded       = sentinel(CodeOverloaded)
	// ErrConfigHashMismatch: a stream's query exists with another operator chain (run with
	// Reset to drop its state, or use another QueryID).
	ErrConfigHashMismatch = sentinel(CodeConfigHashMismatch)
)

func sentinel(code string) *Error { return &Error{Code: code, Index: -1} }

// ErrFor returns a sentinel that matches, through errors.Is, every *Error with code (for codes
// without an Err* variable).
func ErrFor(code string) error { return sentinel(code) }

// ErrTimeout matches (through errors.Is) every *NetworkError caused by a request timeout.
var ErrTimeout = errors.New("regina: request timed out")

// Error is an error answered by the broker: an error response, or an item failure reported
// in-band that the SDK turned into an error. Code is the stable machine code of the broker's
// registry (the Code* constants); Message is human text for display only.
type Error struct {
	// Code is the stable snake_case code, such as "lease_expired".
	Code string
	// Status is the HTTP status of the response (0 for an in-band item failure).
	Status int
	// Message is the broker's human-readable text. Never branch on it.
	Message string
	// Field names the offending request field (such as "items[3].traceId"), when the broker says.
	Field string
	// Index is the offending array index, or -1 when the broker names none.
	Index int
	// Limit is the limit that was exceeded (too_many_items, …), or 0 when the broker names none.
	Limit int64

	body       []byte        // the raw response body, for calls whose error responses carry results
	retryAfter time.Duration // the broker's Retry-After, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("regina: ")
	if e.Message != "" {
		b.WriteString(e.Message)
	} else {
		b.WriteString(e.Code)
	}
	b.WriteString(" (")
	b.WriteString(e.Code)
	if e.Status != 0 {
		fmt.Fprintf(&b, ", status %d", e.Status)
	}
	if e.Field != "" {
		b.WriteString(", field ")
		b.WriteString(e.Field)
	}
	if e.Index >= 0 {
		fmt.Fprintf(&b, ", index %d", e.Index)
	}
	b.WriteString(")")
	return b.String()
}

// Is reports whether target is an *Error with the same Code (a sentinel such as ErrQueueFull).
// Fields of target other than Code are ignored when they are zero.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Code != e.Code {
		return false
	}
	return t.Status == 0 || t.Status == e.Status
}

// Temporary reports whether repeating the request may succeed: 5xx answers other than 501, and
// queue_full.
func (e *Error) Temporary() bool {
	return (e.Status >= 500 && e.Status != http.StatusNotImplemented) || e.Code == CodeQueueFull
}

// CodeOf returns the broker code carried by err (through wrapping), or "" when err is not an
// *Error.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// NetworkError is a request that got no HTTP answer from any server: connection refused or
// reset, DNS failure, or a per-request timeout. It is returned after the retries are spent.
type NetworkError struct {
	// Method and URL of the last attempt.
	Method, URL string
	// Err is the transport's error.
	Err     error
	timeout bool
}

func (e *NetworkError) Error() string {
	if e.timeout {
		return fmt.Sprintf("regina: %s %s: timed out: %v", e.Method, e.URL, e.Err)
	}
	return fmt.Sprintf("regina: %s %s: %v", e.Method, e.URL, e.Err)
}

func (e *NetworkError) Unwrap() error { return e.Err }

// Timeout reports whether the request timed out (as opposed to failing to connect).
func (e *NetworkError) Timeout() bool { return e.timeout }

// Is makes errors.Is(err, ErrTimeout) true for timeouts.
func (e *NetworkError) Is(target error) bool { return e.timeout && target == ErrTimeout }

// isRetryable tells whether an attempt's outcome may be repeated, on this or another server.
func isRetryable(err error) bool {
	var ne *NetworkError
	if errors.As(err, &ne) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && e.Status >= 500 && e.Status != http.StatusNotImplemented
}

// hasStatus reports whether err is an *Error answered with one of statuses.
func hasStatus(err error, statuses []int) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	for _, s := range statuses {
		if e.Status == s {
			return true
		}
	}
	return false
}

// isStop reports whether err is the caller's own cancellation or deadline.
func isStop(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
