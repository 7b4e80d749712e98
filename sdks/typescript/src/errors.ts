/**
 * Errors raised by the client.
 *
 * Every failure the broker reports reaches the caller as a {@link ReginaError} carrying the
 * server's stable `code`; programs branch on `code`, never on the message text. Failures below
 * HTTP (connection refused, reset, DNS) are {@link ReginaNetworkError}s, and a request that ran out
 * of time is a {@link ReginaTimeoutError}. A request cancelled through the caller's `AbortSignal`
 * rejects with the signal's reason (an `AbortError` by default), never with one of these classes.
 */

/** Stable error codes of the HTTP API v1 error registry. */
export const ERROR_CODES = [
  "invalid_json",
  "validation_failed",
  "invalid_parameter",
  "too_many_items",
  "unauthorized",
  "token_expired",
  "forbidden",
  "route_not_found",
  "queue_not_found",
  "partition_not_found",
  "message_not_found",
  "not_in_dlq",
  "method_not_allowed",
  "lease_expired",
  "lease_not_found",
  "not_leased",
  "already_settled",
  "group_mismatch",
  "message_leased",
  "query_not_found",
  "config_hash_mismatch",
  "encryption_unavailable",
  "body_too_large",
  "queue_full",
  "database_unavailable",
  "database_timeout",
  "buffer_unavailable",
  "overloaded",
  "shutting_down",
  "not_implemented",
  "decryption_failed",
  "internal",
] as const;

/** A code of the registry. The client also uses `http_error` for a failure without a JSON body. */
export type ErrorCode = (typeof ERROR_CODES)[number] | "http_error";

/** What the broker said about a failed request, as carried by {@link ReginaError}. */
export interface ReginaErrorDetails {
  /** Stable machine code (`lease_expired`, `validation_failed`, …). */
  code: string;
  /** HTTP status of the response. */
  status: number;
  /** Human-readable text from the broker; may change between versions. */
  message: string;
  /** The offending field, such as `items[3].traceId`, when the broker names one. */
  field?: string | undefined;
  /** The offending array index, when the broker names one. */
  index?: number | undefined;
  /** The limit that was exceeded, when the broker names one. */
  limit?: number | undefined;
  /** The `X-Request-Id` of the failed response, for correlating with broker logs. */
  requestId?: string | undefined;
  /** Per-item results the broker sent along with the failure (push `429`, failed transaction). */
  results?: unknown;
}

/** A request the broker answered with an error status. Branch on {@link ReginaError.code}. */
export class ReginaError extends Error {
  override readonly name = "ReginaError";
  /** Stable machine code; see {@link ERROR_CODES}. */
  readonly code: ErrorCode | (string & {});
  /** HTTP status of the response. */
  readonly status: number;
  /** The offending field, when the broker names one. */
  readonly field: string | undefined;
  /** The offending array index, when the broker names one. */
  readonly index: number | undefined;
  /** The limit that was exceeded, when the broker names one. */
  readonly limit: number | undefined;
  /** `X-Request-Id` of the response. */
  readonly requestId: string | undefined;
  /**
   * Per-item results sent with the failure: for a push answered `429`, the full result list (what
   * was stored and what was rejected); for a failed transaction, the outcomes up to the failing
   * operation.
   */
  readonly results: unknown;

  constructor(details: ReginaErrorDetails) {
    super(details.message);
    this.code = details.code;
    this.status = details.status;
    this.field = details.field;
    this.index = details.index;
    this.limit = details.limit;
    this.requestId = details.requestId;
    this.results = details.results;
  }
}

/** The request could not reach the broker, or the connection failed before a response arrived. */
export class ReginaNetworkError extends Error {
  override readonly name: string = "ReginaNetworkError";
  /** The server URL of the last attempt. */
  readonly url: string;

  constructor(message: string, url: string, options?: { cause?: unknown }) {
    super(message, options);
    this.url = url;
  }
}

/** The request did not complete within its timeout. */
export class ReginaTimeoutError extends ReginaNetworkError {
  override readonly name = "ReginaTimeoutError";
  /** The timeout that elapsed, in milliseconds. */
  readonly timeoutMillis: number;

  constructor(url: string, timeoutMillis: number) {
    super(`Request to ${url} timed out after ${timeoutMillis} ms`, url);
    this.timeoutMillis = timeoutMillis;
  }
}

/** True when `error` is a {@link ReginaError} with the given code. */
export function isReginaError(error: unknown, code?: ErrorCode): error is ReginaError {
  return error instanceof ReginaError && (code === undefined || error.code === code);
}
