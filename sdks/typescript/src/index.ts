/**
 * regina-client — TypeScript client for Regina, the partitioned message queue on PostgreSQL that
 * speaks the Queen MQ HTTP API v1. Works in Node ≥ 20 and in browsers (global `fetch`).
 *
 * ```ts
 * import { Regina } from "regina-client";
 * const client = new Regina("http://localhost:6632");
 * await client.queue("orders").partition("customer-7").push([{ payload: { n: 1 } }]);
 * ```
 */

export { Regina, DEFAULT_URL, type ReginaOptions, type AckOptions } from "./client.js";
export { Queue, RENEW_EVERY_MILLIS_DEFAULT } from "./queue.js";
export { DEFAULT_PARTITION, POP_TIMEOUT_MILLIS_DEFAULT } from "./core.js";
export type { BufferOptions } from "./buffer.js";
export type {
  BatchHandler,
  EachHandler,
  HandlerContext,
  ConsumeOptions,
  ConsumeSummary,
  StopReason,
} from "./consumer.js";
export { Transaction, TransactionPush } from "./transaction.js";
export { Admin } from "./admin.js";
export { Stream, WindowedStream, RunnableStream } from "./stream.js";
export type { StreamContext, GateContext, WindowOptions, CronEvery, LatePolicy } from "./stream-chain.js";
export { StreamRun, type StreamRunOptions, type StreamMetrics, type StreamErrorContext } from "./stream-runner.js";
export type { Registration } from "./stream-wire.js";
export {
  tokenBucketGate,
  slidingWindowGate,
  type TokenBucketOptions,
  type SlidingWindowOptions,
} from "./stream-gates.js";
export type { TokenSource } from "./transport.js";
export {
  ERROR_CODES,
  ReginaError,
  ReginaNetworkError,
  ReginaTimeoutError,
  isReginaError,
  type ErrorCode,
  type ReginaErrorDetails,
} from "./errors.js";
export { uuidv7 } from "./uuid.js";
export type * from "./types.js";
export type * from "./admin-types.js";
export type * from "./status-types.js";
