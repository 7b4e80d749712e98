/**
 * The three streams routes on the wire: register a query, read state, commit a cycle.
 *
 * These requests are retried on network errors, timeouts, `408`, `429` and 5xx (not `501`), with
 * the client's retry count and backoff; other 4xx are final. A `2xx` answer with `success: false`
 * is a failure too. A cycle is safe to retry: the broker recognises a cycle that already
 * committed (by its ack's lease), and the sink items keep the transaction ids given to them
 * before the first attempt, so a repeated ack-less cycle pushes nothing twice.
 */

import { ReginaError } from "./errors.js";
import type { StateOp, StateRow } from "./stream-engine.js";
import type { Transport } from "./transport.js";

/** Statuses below 500 that the streams routes retry. */
const STREAM_RETRY_STATUSES = [408, 429] as const;

/** Answer of a query registration. */
export interface Registration {
  /** The broker's id of the query (a UUID, unchanged by a reset). */
  queryId: string;
  /** The query's name (`queryId` of `run`). */
  name: string;
  /** True when this registration created the query. */
  fresh: boolean;
  /** True when this registration wiped the query's state for a new chain. */
  reset: boolean;
}

/** A sink item of a cycle, as `/api/v1/push` items are written. */
export interface CycleItem {
  queue: string;
  partition: string;
  payload: unknown;
  transactionId: string;
  traceId?: string;
}

/** The ack of a cycle. */
export interface CycleAck {
  transactionId: string;
  leaseId: string;
  status: "completed";
  count: number;
}

/** One cycle: state changes, sink items and (unless it is an idle flush) the source ack. */
export interface Cycle {
  queryId: string;
  partitionId: string;
  consumerGroup: string;
  stateOps: StateOp[];
  pushItems: CycleItem[];
  ack: CycleAck | null;
  releaseLease?: boolean;
}

/** Reads state rows of one shard; with no filter, every row. */
export interface StateQuery {
  queryId: string;
  partitionId: string;
  keyPrefix?: string;
  ripeAtOrBefore?: number;
}

/** Calls of the streams routes. */
export class StreamWire {
  constructor(private readonly transport: Transport) {}

  /**
   * Registers the query, or finds it.
   *
   * @throws {ReginaError} `config_hash_mismatch` (409) when the chain changed and `reset` is false;
   *   its message ends with a hint on what to do.
   */
  async register(
    name: string,
    sourceQueue: string,
    sinkQueue: string | undefined,
    hash: string,
    reset: boolean,
  ): Promise<Registration> {
    const body = { name, source_queue: sourceQueue, sink_queue: sinkQueue ?? null, config_hash: hash, reset };
    let answer: Record<string, unknown>;
    try {
      answer = await this.post("/streams/v1/queries", body);
    } catch (error) {
      throw mismatchWithHint(error, name);
    }
    return {
      queryId: String(answer.query_id ?? ""),
      name: String(answer.name ?? name),
      fresh: answer.fresh === true,
      reset: answer.reset === true,
    };
  }

  /** The shard's rows, ascending by key. */
  async state(query: StateQuery): Promise<StateRow[]> {
    const body: Record<string, unknown> = { query_id: query.queryId, partition_id: query.partitionId, keys: [] };
    if (query.keyPrefix !== undefined) body.key_prefix = query.keyPrefix;
    if (query.ripeAtOrBefore !== undefined) body.ripe_at_or_before = query.ripeAtOrBefore;
    const answer = await this.post("/streams/v1/state/get", body);
    const rows = Array.isArray(answer.rows) ? (answer.rows as { key?: unknown; value?: unknown }[]) : [];
    return rows
      .filter((row) => typeof row.key === "string")
      .map((row) => ({ key: row.key as string, value: row.value }));
  }

  /** Commits a cycle: all of it or nothing. */
  async cycle(cycle: Cycle): Promise<void> {
    const body: Record<string, unknown> = {
      query_id: cycle.queryId,
      partition_id: cycle.partitionId,
      consumer_group: cycle.consumerGroup,
      state_ops: cycle.stateOps,
      push_items: cycle.pushItems,
      ack: cycle.ack,
    };
    if (cycle.releaseLease !== undefined) body.release_lease = cycle.releaseLease;
    await this.post("/streams/v1/cycle", body);
  }

  private async post(path: string, body: unknown): Promise<Record<string, unknown>> {
    const result = await this.transport.request<Record<string, unknown>>({
      method: "POST",
      path,
      body,
      retryStatuses: STREAM_RETRY_STATUSES,
    });
    const answer = result.body;
    if (typeof answer !== "object" || answer === null || answer.success === false) {
      const text = typeof answer?.error === "string" ? answer.error : `${path} answered without success`;
      throw new ReginaError({ code: String(answer?.code ?? "http_error"), status: result.status, message: text });
    }
    return answer;
  }
}

/** A `409` from the registration, with a hint appended to the broker's text. */
function mismatchWithHint(error: unknown, name: string): unknown {
  if (!(error instanceof ReginaError) || error.status !== 409) return error;
  return new ReginaError({
    code: error.code === "http_error" ? "config_hash_mismatch" : error.code,
    status: 409,
    message:
      `${error.message} The operator chain of query '${name}' differs from the registered one: ` +
      "run with reset: true to drop its state, or use a new queryId.",
    requestId: error.requestId,
  });
}
