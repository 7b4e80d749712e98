/**
 * The dashboard's one client of the broker: the TypeScript SDK (`regina-client`) on the page's own
 * origin, with the bearer token kept in `sessionStorage`. Every answer passes through
 * {@link observe}, so a `401` anywhere asks for a token once, in one place.
 */

import { Regina, ReginaError } from "regina-client";

const TOKEN_KEY = "regina.token";

/** The token of this browser tab, if the user gave one. */
export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

/** Keeps the token for this tab (an empty string forgets it). */
export function setToken(value: string): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();

/** Calls `listener` whenever the broker answers `401`; returns the unsubscribe function. */
export function onUnauthorized(listener: Listener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

const observe: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  if (response.status === 401) for (const listener of unauthorizedListeners) listener();
  return response;
};

/**
 * The SDK client. No retries: a dashboard shows a failure at once and refreshes by itself, and
 * its actions must not run twice behind the user's back.
 */
export const client = new Regina({
  url: window.location.origin,
  token: token,
  retries: 0,
  timeoutMillis: 20_000,
  fetch: observe,
});

export const admin = client.admin;

/** A failed call as the dashboard shows it: the broker's `{error, code}` and the HTTP status. */
export interface Failure {
  message: string;
  code: string;
  status: number | null;
}

/** Normalises anything a call may throw into a {@link Failure}. */
export function failure(error: unknown): Failure {
  if (error instanceof ReginaError) return { message: error.message, code: error.code, status: error.status };
  if (error instanceof Error) return { message: error.message, code: error.name, status: null };
  return { message: String(error), code: "unknown", status: null };
}

/** Whether a failure means the endpoint does not exist on this broker (an older version). */
export function isMissingEndpoint(f: Failure): boolean {
  return f.status === 404 && f.code === "route_not_found";
}

/** One registered streams query, as `GET /api/v1/resources/streams` lists it. */
export interface StreamQuery {
  queryId: string;
  name: string;
  sourceQueue: string;
  sinkQueue: string | null;
  configHash: string;
  createdAt: string;
  updatedAt: string;
  shards: number;
  cycles: number;
  lastCycleAt: string | null;
  stateRows: number;
  stateBytes: number;
}

/** A page of streams queries. */
export interface StreamQueryList {
  queries: StreamQuery[];
  total: number;
  limit: number;
  offset: number;
}

/**
 * `GET /api/v1/resources/streams`. The SDK has no streams listing yet, so this one call goes
 * through `fetch` with the SDK's token and the same 401 observer, and fails with a
 * {@link ReginaError} like every SDK call.
 */
export async function streamQueries(
  query: { limit: number; offset: number },
  options: { signal?: AbortSignal } = {},
): Promise<StreamQueryList> {
  const headers: Record<string, string> = {};
  const bearer = token();
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const path = `/api/v1/resources/streams?limit=${query.limit}&offset=${query.offset}`;
  const response = await observe(path, { headers, signal: options.signal });
  const body: unknown = await response.json().catch(() => null);
  if (!response.ok) {
    const error = (body ?? {}) as { error?: string; code?: string };
    throw new ReginaError({
      code: error.code ?? "http_error",
      status: response.status,
      message: error.error ?? `HTTP ${response.status}`,
    });
  }
  return body as StreamQueryList;
}
