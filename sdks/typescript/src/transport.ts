/**
 * HTTP transport: one request over `fetch` with failover across servers, retries with exponential
 * backoff and jitter, per-attempt timeouts, bearer tokens and error mapping.
 *
 * Retried: network failures, timeouts and 5xx answers (except `501`). Never retried: 4xx answers,
 * except those a request names in `retryStatuses` (the streams routes retry `408` and `429`).
 * Callers make non-idempotent requests safe to retry before they get here (push items carry a
 * client-assigned transactionId).
 */

import { ReginaError, ReginaNetworkError, ReginaTimeoutError } from "./errors.js";

/** A bearer token, or a function that returns the current one (called before every attempt). */
export type TokenSource = string | (() => string | Promise<string>);

/** Settings of the transport; every field has a default in {@link Regina}. */
export interface TransportOptions {
  /** Base URLs of the brokers, tried in order; the last one that answered is tried first. */
  servers: string[];
  /** Bearer token for `Authorization`. */
  token?: TokenSource | undefined;
  /** Retries after the first attempt. */
  retries: number;
  /** First backoff delay, in milliseconds; doubles every round over all servers. */
  retryBaseMillis: number;
  /** Upper bound of one backoff delay, in milliseconds. */
  retryMaxMillis: number;
  /** Timeout of one attempt, in milliseconds. */
  timeoutMillis: number;
  /** The `fetch` implementation (default: the global one). */
  fetch?: typeof fetch | undefined;
}

/** Query parameter values; `undefined` and `null` leave the key out. */
export type QueryValue = string | number | boolean | undefined | null;

/** One request through {@link Transport.request}. */
export interface RequestOptions {
  method: "GET" | "POST" | "DELETE";
  /** Path below the server URL, starting with `/`; path parameters already encoded. */
  path: string;
  query?: Record<string, QueryValue> | undefined;
  /** JSON body; `undefined` sends none. */
  body?: unknown;
  /** Timeout of each attempt, in milliseconds (default: the transport's). */
  timeoutMillis?: number | undefined;
  /** Cancels the request, including its retries and backoff. */
  signal?: AbortSignal | undefined;
  /** Error statuses whose JSON body is a regular answer here (`/health` answers `503` unhealthy). */
  acceptStatuses?: readonly number[] | undefined;
  /** Statuses below 500 that are retried too (the streams routes retry `408` and `429`). */
  retryStatuses?: readonly number[] | undefined;
}

/** A successful (2xx) response. */
export interface HttpResult<T> {
  status: number;
  /** The parsed JSON body; `undefined` for an empty body (`204`). */
  body: T | undefined;
  headers: Headers;
}

/** Sends requests to the configured servers. */
export class Transport {
  private readonly servers: string[];
  private preferred = 0;

  constructor(private readonly options: TransportOptions) {
    if (options.servers.length === 0) throw new TypeError("at least one server URL is required");
    this.servers = options.servers.map((url) => url.replace(/\/+$/, ""));
  }

  /**
   * Sends one request, retrying and failing over as configured.
   *
   * @throws {ReginaError} the broker answered 4xx, `501`, or 5xx on every attempt.
   * @throws {ReginaNetworkError} (or {@link ReginaTimeoutError}) no attempt got an answer.
   * @throws the signal's reason when `signal` aborts.
   */
  async request<T>(request: RequestOptions): Promise<HttpResult<T>> {
    if (request.signal?.aborted) throw request.signal.reason;
    const start = this.preferred;
    let lastError: unknown;
    for (let attempt = 0; attempt <= this.options.retries; attempt += 1) {
      if (attempt > 0) await sleep(this.delayBefore(attempt, lastError), request.signal);
      const index = (start + attempt) % this.servers.length;
      try {
        const result = await this.attempt<T>(this.servers[index] as string, request);
        this.preferred = index;
        return result;
      } catch (error) {
        if (request.signal?.aborted) throw request.signal.reason;
        if (!isRetryable(error, request.retryStatuses)) throw error;
        lastError = error;
      }
    }
    throw lastError;
  }

  /** The server URLs in use, without trailing slashes. */
  get serverUrls(): readonly string[] {
    return this.servers;
  }

  private delayBefore(attempt: number, lastError: unknown): number {
    const count = this.servers.length;
    // The first pass over the servers fails over at once; every later pass backs off.
    if (attempt % count !== 0) return 0;
    const round = attempt / count;
    const ceiling = Math.min(this.options.retryMaxMillis, this.options.retryBaseMillis * 2 ** (round - 1));
    const jittered = ceiling / 2 + Math.random() * (ceiling / 2);
    const retryAfter = lastError instanceof ReginaError ? (retryAfterMillis.get(lastError) ?? 0) : 0;
    return Math.min(this.options.retryMaxMillis, Math.max(jittered, retryAfter));
  }

  private async attempt<T>(server: string, request: RequestOptions): Promise<HttpResult<T>> {
    const timeoutMillis = request.timeoutMillis ?? this.options.timeoutMillis;
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal?.reason);
    request.signal?.addEventListener("abort", onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMillis);
    const url = server + request.path + queryString(request.query);
    try {
      const response = await (this.options.fetch ?? globalThis.fetch)(url, {
        method: request.method,
        headers: await this.headers(request.body !== undefined),
        body: request.body === undefined ? null : JSON.stringify(request.body),
        signal: controller.signal,
      });
      const text = await response.text();
      return parseResponse<T>(response, text, request.acceptStatuses);
    } catch (error) {
      if (timedOut) throw new ReginaTimeoutError(url, timeoutMillis);
      if (request.signal?.aborted) throw request.signal.reason;
      if (error instanceof ReginaError) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      throw new ReginaNetworkError(`Request to ${url} failed: ${reason}`, url, { cause: error });
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", onAbort);
    }
  }

  private async headers(hasBody: boolean): Promise<Record<string, string>> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (hasBody) headers["Content-Type"] = "application/json";
    const source = this.options.token;
    const token = typeof source === "function" ? await source() : source;
    if (token) headers.Authorization = `Bearer ${token}`;
    return headers;
  }
}

/** `Retry-After` of 5xx and 429 answers, in milliseconds, for the backoff before the next attempt. */
const retryAfterMillis = new WeakMap<ReginaError, number>();

function isRetryable(error: unknown, also: readonly number[] = []): boolean {
  if (error instanceof ReginaNetworkError) return true;
  if (!(error instanceof ReginaError)) return false;
  return (error.status >= 500 && error.status !== 501) || also.includes(error.status);
}

function parseResponse<T>(response: Response, text: string, accept: readonly number[] = []): HttpResult<T> {
  let body: unknown;
  let parsed = true;
  if (text.length > 0) {
    try {
      body = JSON.parse(text);
    } catch {
      parsed = false;
    }
  }
  if ((response.ok || accept.includes(response.status)) && parsed)
    return { status: response.status, body: body as T, headers: response.headers };

  const fields = isObject(body) ? body : {};
  const error = new ReginaError({
    code: typeof fields.code === "string" ? fields.code : "http_error",
    status: response.status,
    message: typeof fields.error === "string" ? fields.error : describe(response, text, parsed),
    field: typeof fields.field === "string" ? fields.field : undefined,
    index: typeof fields.index === "number" ? fields.index : undefined,
    limit: typeof fields.limit === "number" ? fields.limit : undefined,
    requestId: response.headers.get("x-request-id") ?? undefined,
    results: Array.isArray(body) ? body : fields.results,
  });
  const retryAfter = Number(response.headers.get("retry-after"));
  if ((response.status >= 500 || response.status === 429) && Number.isFinite(retryAfter) && retryAfter > 0) {
    retryAfterMillis.set(error, retryAfter * 1000);
  }
  throw error;
}

function describe(response: Response, text: string, parsed: boolean): string {
  const what = parsed ? "" : ` (body is not JSON: ${text.slice(0, 200)})`;
  return `HTTP ${response.status} ${response.statusText}${what}`.trim();
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function queryString(query: Record<string, QueryValue> | undefined): string {
  if (!query) return "";
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    params.append(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** Waits `millis`, or rejects with the signal's reason when it aborts first. */
export function sleep(millis: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (millis <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, millis);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Encodes one path parameter. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}
