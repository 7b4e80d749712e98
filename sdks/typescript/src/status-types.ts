/**
 * Shapes of the dashboard feeds — status, analytics, failover buffer, maintenance switches,
 * health and metrics — with their wire field names. Timestamps are ISO-8601 UTC strings.
 */

import type { MessageCounts, MessageStatus, Pagination, QueueSummary } from "./admin-types.js";

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
export type AnalyticsFeed =
  | "system-metrics"
  | "worker-metrics"
  | "queue-lag"
  | "queue-ops"
  | "queue-parked-replicas"
  | "retention"
  | "postgres-stats";

/** Selectors of an analytics feed. */
export interface AnalyticsQuery {
  from?: string | Date;
  to?: string | Date;
  queue?: string;
  hostname?: string;
  workerId?: string;
}

/** The shape every analytics feed answers with. */
export interface AnalyticsSeries {
  from: string;
  to: string;
  bucketSeconds: number;
  series: { name: string; labels: Record<string, string>; points: [string, number][] }[];
}

/** `GET /api/v1/status/buffers`: this instance's failover buffer. */
export interface BufferStatus {
  pending: number;
  failed: number;
  corrupt: number;
  segments: number;
  bytes: number;
  oldestAt: string | null;
  partitionsBlocked: number;
  dbHealthy: boolean;
  worker: string;
  note: string | null;
}

/** `GET /api/v1/system/maintenance`. */
export interface MaintenanceStatus {
  maintenanceMode: boolean;
  popMaintenanceMode: boolean;
  bufferedMessages: number;
  bufferHealthy: boolean;
  bufferStats: BufferStatus;
}

/** `POST /api/v1/system/maintenance`. */
export interface MaintenanceResult {
  maintenanceMode: boolean;
  bufferedMessages: number;
  bufferHealthy: boolean;
  message: string;
}

/** `GET`/`POST /api/v1/system/maintenance/pop`. */
export interface PopMaintenanceResult {
  popMaintenanceMode: boolean;
  message?: string;
}

/** `POST /api/v1/stats/refresh`. */
export type StatsRefreshResult = { refreshed: true; durationMs: number } | { skipped: true; reason: string };

/** `GET /health`. */
export interface Health {
  status: "healthy" | "unhealthy";
  database: "connected" | "disconnected";
  server: string;
  version: string;
  worker_id: string;
  uptimeSeconds: number;
  maintenanceMode: boolean;
  popMaintenanceMode: boolean;
  failoverBuffer: { pending: number; healthy: boolean };
}

/** `GET /metrics`: this instance's counters. */
export interface InstanceMetrics {
  uptime: number;
  requests: { total: number; rate: number };
  messages: { total: number; rate: number };
  database: { poolSize: number; idleConnections: number; waitingRequests: number };
  memory: { rssBytes: number };
  cpu: { userSeconds: number; systemSeconds: number };
  longPoll: { waiters: number };
}
