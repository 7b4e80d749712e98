/**
 * A local stand-in for the broker's pop, ack and streams routes, for wire-shape tests of the
 * stream runner: pops answer from a script, registrations, state and cycles live in memory, and
 * every request is recorded. Answers can be overridden per route to provoke failures.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Message } from "../src/index.js";

/** A recorded request with its parsed JSON body. */
export interface Seen {
  method: string;
  path: string;
  body: Record<string, unknown>;
}

/** A scripted failure: answer this status and body instead of the normal answer. */
export interface Failure {
  status: number;
  body: unknown;
}

/** The fake broker. */
export class FakeStreams {
  readonly seen: Seen[] = [];
  /** Batches handed out by successive pops; an empty pop after the last. */
  readonly pops: Message[][] = [];
  /** Stored queries by name. */
  readonly queries = new Map<string, { id: string; hash: string }>();
  /** State by `<queryId>/<partitionId>`, then key. */
  readonly state = new Map<string, Map<string, unknown>>();
  /** Failures to answer next, per path, in order. */
  readonly failures = new Map<string, Failure[]>();
  private server: Server | undefined;
  private nextId = 1;

  async start(): Promise<string> {
    this.server = createServer((request, response) => this.handle(request, response));
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Requests to one path (query string excluded). */
  requests(path: string): Seen[] {
    return this.seen.filter((request) => request.path === path || request.path.startsWith(`${path}/`));
  }

  /** The rows of a shard. */
  shard(queryId: string, partitionId: string): Map<string, unknown> {
    const key = `${queryId}/${partitionId}`;
    let rows = this.state.get(key);
    if (!rows) {
      rows = new Map();
      this.state.set(key, rows);
    }
    return rows;
  }

  fail(path: string, ...failures: Failure[]): void {
    this.failures.set(path, failures);
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const path = (request.url ?? "").split("?")[0] as string;
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      this.seen.push({ method: request.method ?? "", path, body });
      const failure = this.failures.get(path)?.shift();
      if (failure) return send(response, failure.status, failure.body);
      if (path.startsWith("/api/v1/pop/")) {
        const batch = this.pops.shift();
        if (batch) return send(response, 200, { messages: batch });
        setTimeout(() => send(response, 204, undefined), 20);
        return;
      }
      if (path === "/api/v1/ack") return send(response, 200, [{ index: 0, success: true, code: null }]);
      if (path === "/streams/v1/queries") return send(response, ...this.register(body));
      if (path === "/streams/v1/state/get") return send(response, 200, { success: true, rows: this.rows(body) });
      if (path === "/streams/v1/cycle") return send(response, 200, this.cycle(body));
      send(response, 404, { error: "no route", code: "route_not_found" });
    });
  }

  private register(body: Record<string, unknown>): [number, unknown] {
    const name = body.name as string;
    const hash = body.config_hash as string;
    const stored = this.queries.get(name);
    if (!stored) {
      const id = `00000000-0000-4000-8000-${String(this.nextId++).padStart(12, "0")}`;
      this.queries.set(name, { id, hash });
      return [200, { success: true, query_id: id, name, config_hash: hash, fresh: true, reset: false }];
    }
    if (stored.hash === hash) {
      return [200, { success: true, query_id: stored.id, name, config_hash: hash, fresh: false, reset: false }];
    }
    if (body.reset !== true) {
      const error = `config_hash mismatch: operator chain changed for queryId '${name}'. Pass reset:true to wipe existing state, or use a new queryId.`;
      return [409, { success: false, error, code: "config_hash_mismatch", query_id: stored.id, name }];
    }
    for (const key of [...this.state.keys()]) if (key.startsWith(`${stored.id}/`)) this.state.delete(key);
    stored.hash = hash;
    return [200, { success: true, query_id: stored.id, name, config_hash: hash, fresh: false, reset: true }];
  }

  private rows(body: Record<string, unknown>): { key: string; value: unknown }[] {
    const rows = this.shard(body.query_id as string, body.partition_id as string);
    const prefix = typeof body.key_prefix === "string" ? body.key_prefix : "";
    const ripe = typeof body.ripe_at_or_before === "number" ? body.ripe_at_or_before : undefined;
    return [...rows.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .filter(([, value]) => {
        if (ripe === undefined) return true;
        const end = (value as { windowEnd?: unknown } | null)?.windowEnd;
        return typeof end === "number" && end <= ripe;
      })
      .sort(([a], [b]) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1))
      .map(([key, value]) => ({ key, value }));
  }

  private cycle(body: Record<string, unknown>): unknown {
    const rows = this.shard(body.query_id as string, body.partition_id as string);
    for (const op of (body.state_ops ?? []) as { type: string; key: string; value?: unknown }[]) {
      if (op.type === "upsert") rows.set(op.key, op.value ?? {});
      else rows.delete(op.key);
    }
    return { success: true, state_ops_applied: ((body.state_ops ?? []) as unknown[]).length, push_results: [] };
  }
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "Content-Type": "application/json" });
  response.end(body === undefined ? "" : JSON.stringify(body));
}

let sequence = 0;

/** A delivered message of partition `partition` (id `pid-<partition>`), under lease `lease`. */
export function message(
  partition: string,
  data: unknown,
  createdAt = "2026-01-01T00:00:00.000Z",
  lease = "lease-1",
): Message {
  sequence += 1;
  return {
    id: `m-${sequence}`,
    transactionId: `tx-${sequence}`,
    traceId: null,
    data,
    producerSub: null,
    createdAt,
    partitionId: `pid-${partition}`,
    partition,
    queue: "source",
    leaseId: lease,
    consumerGroup: "streams.q",
    retryCount: 0,
  };
}
