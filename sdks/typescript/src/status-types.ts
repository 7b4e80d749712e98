/**
 * Shapes of the dashboard feeds — status, analytics, failover buffer, maintenance switches,
 * health and metrics — with their wire field names. Timestamps are ISO-8601 UTC strings.
 * Read from the generated types, or checked against them, as in `admin-types.ts`.
 */

import type { MessageCounts, MessageStatus, Pagination, QueueSummary } from "./admin-types.js";
import type { Answer, Conform, Item, Optional, Path, Queries, QueryParams } from "./wire.js";

/** Time range and selectors of the status and analytics feeds (default range: the last hour). */
export interface StatusQuery {
  from?: string | Date;
  to?: string | Date;
  queue?: string;
  namespace?: string;
  task?: string;
}

/** One throughput bucket of `GET /api/v1/status`. */
export interface ThroughputPoint {
  timestamp: string;
  ingested: number;
  processed: number;
  popMessages: number;
  ingestedPerSecond: number;
  processedPerSecond: number;
  avgLagMs: number;
  maxLagMs: number;
}

/** `GET /api/v1/status`. */
export interface SystemStatus {
  timeRange: { from: string; to: string };
  bucketMinutes: number;
  pointCount: number;
  throughput: ThroughputPoint[];
  queues: {
    name: string;
    namespace: string;
    task: string;
    partitions: number;
    messages: { total: number; pending: number; processing: number };
  }[];
  messages: MessageCounts;
  leases: { active: number; partitionsWithLeases: number; totalBatchSize: number; totalAcked: number };
  deadLetterQueue: { total: number; last24h: number; topErrors: { error: string; count: number }[] };
  workers: {
    hostname: string;
    workerId: string;
    version: string;
    startedAt: string;
    lastSeen: string;
    requestsPerSecond: number;
    longPollWaiters: number;
  }[];
  errors: { dbErrors: number; ackFailed: number; dlqMessages: number };
  statsAge: number;
}

/** `GET /api/v1/status/queues`. */
export interface StatusQueueList {
  queues: (QueueSummary & { throughput: { ingested: number; processed: number } })[];
  pagination: Pagination;
}

/** `GET /api/v1/status/queues/:queue`. */
export interface StatusQueueDetail {
  queue: {
    id: string;
    name: string;
    namespace: string;
    task: string;
    priority: number;
    createdAt: string;
    config: {
      leaseTime: number;
      retryLimit: number;
      retryDelay: number;
      ttl: number;
      maxQueueSize: number;
      deadLetterQueue: boolean;
      delayedProcessing: number;
      windowBuffer: number;
      encryptionEnabled: boolean;
    };
  };
  partitions: {
    id: string;
    name: string;
    messages: { total: number; pending: number };
    stats: MessageCounts;
    cursor: { totalConsumed: number; batchesConsumed: number };
    lastActivity: string | null;
    oldestMessage: string | null;
    newestMessage: string | null;
  }[];
  totals: MessageCounts;
}

/** One row of `GET /api/v1/status/queues/:queue/messages`. */
export interface StatusQueueMessage {
  id: string;
  transactionId: string;
  partitionId: string;
  queuePath: string;
  queue: string;
  partition: string;
  status: MessageStatus;
  createdAt: string;
}

/** `GET /api/v1/status/analytics`. */
export interface MessageAnalytics {
  dataPoints: { timestamp: string; messages: number }[];
  interval: "hour" | "day" | "week" | "month";
  from: string;
  to: string;
}

/** The time-series feeds under `/api/v1/analytics/`. */
export type AnalyticsFeed = Path extends infer P ? (P extends `/api/v1/analytics/${infer Feed}` ? Feed : never) : never;

/** Selectors of an analytics feed. */
export interface AnalyticsQuery {
  from?: string | Date;
  to?: string | Date;
  queue?: string;
  hostname?: string;
  workerId?: string;
}

/** The shape every analytics feed answers with. */
export type AnalyticsSeries = Answer<"/api/v1/analytics/queue-lag", "get">;

/** `GET /api/v1/status/buffers`: this instance's failover buffer. */
export type BufferStatus = Answer<"/api/v1/status/buffers", "get">;

/** `GET /api/v1/system/maintenance`. */
export type MaintenanceStatus = Answer<"/api/v1/system/maintenance", "get">;

/** `POST /api/v1/system/maintenance`. */
export type MaintenanceResult = Answer<"/api/v1/system/maintenance", "post">;

/** `GET`/`POST /api/v1/system/maintenance/pop`; `message` only in answers to a switch. */
export type PopMaintenanceResult = Optional<Answer<"/api/v1/system/maintenance/pop", "get">, "message">;

/** `POST /api/v1/stats/refresh`. */
export type StatsRefreshResult = { refreshed: true; durationMs: number } | { skipped: true; reason: string };

/** `GET /health`. */
export type Health = Answer<"/health", "get">;

/** `GET /metrics`: this instance's counters. */
export type InstanceMetrics = Answer<"/metrics", "get">;

/** Checks that every feed's answer (`Answers`, their union) reads as {@link AnalyticsSeries}. */
type EveryFeedReadsAsSeries<Answers extends AnalyticsSeries> = Answers;

/** The SDK's own shapes above, checked against the document: compiling fails when they part ways. */
type ConformanceChecks = [
  Queries<QueryParams<"/api/v1/status", "get">, StatusQuery>,
  Queries<QueryParams<"/api/v1/status/analytics", "get">, StatusQuery>,
  Queries<QueryParams<`/api/v1/analytics/${AnalyticsFeed}`, "get">, AnalyticsQuery>,
  Conform<Answer<"/api/v1/status", "get">, SystemStatus>,
  Conform<Answer<"/api/v1/status/queues", "get">, StatusQueueList>,
  Conform<Answer<"/api/v1/status/queues/{queue}", "get">, StatusQueueDetail>,
  Conform<Item<Answer<"/api/v1/status/queues/{queue}/messages", "get">>, StatusQueueMessage>,
  Conform<Answer<"/api/v1/status/analytics", "get">, MessageAnalytics>,
  // The document lists both answers' fields as one object.
  Conform<Partial<Answer<"/api/v1/stats/refresh", "post">>, StatsRefreshResult>,
  EveryFeedReadsAsSeries<Answer<`/api/v1/analytics/${AnalyticsFeed}`, "get">>,
];
