-- Per-minute history of what each broker instance did (http-api.md §3.12 analytics, §4.15): every
-- instance adds the deltas of its in-process counters to the rows of the current minute at a
-- short period, and the leader trims rows older than METRICS_RETENTION_DAYS. Rows are keyed by
-- the database clock's minute, so instances with skewed clocks still share buckets.
--
-- Readers aggregate these rows into the buckets a feed asks for (1 min … 6 h); the series of
-- /api/v1/analytics/{system-metrics, worker-metrics, queue-ops, queue-parked-replicas,
-- retention} and the throughput and workers parts of /api/v1/status come from here.

-- One row per (minute, instance).
create table regina.worker_metrics (
    bucket           timestamptz not null,              -- start of the minute
    worker_id        text not null,
    hostname         text not null,
    version          text not null,
    started_at       timestamptz not null,              -- instance start (database clock)
    last_seen        timestamptz not null,              -- last write of this row
    -- Counts of the minute (deltas added at each write).
    requests         bigint not null default 0,         -- HTTP requests received
    push_messages    bigint not null default 0,         -- messages stored by pushes
    pop_messages     bigint not null default 0,         -- messages delivered by pops
    ack_messages     bigint not null default 0,         -- ack items applied
    db_calls         bigint not null default 0,         -- fused database calls of the engine
    batch_requests   bigint not null default 0,         -- requests carried by those calls
    db_errors        bigint not null default 0,         -- database calls that failed
    cpu_seconds      double precision not null default 0, -- user + system CPU used
    -- Latest sample of the minute.
    rss_bytes        bigint not null default 0,
    db_pool_busy     integer not null default 0,
    db_pool_waiting  integer not null default 0,
    http_inflight    integer not null default 0,
    longpoll_waiters integer not null default 0,
    primary key (bucket, worker_id)
);

-- One row per (minute, queue, instance). Queues beyond METRICS_QUEUE_LABELS_MAX distinct names
-- of an instance are counted under the name `_other`, as in the Prometheus output.
create table regina.queue_metrics (
    bucket            timestamptz not null,
    queue_name        text not null,
    worker_id         text not null,
    -- Counts of the minute (deltas added at each write).
    pushed            bigint not null default 0,        -- messages stored
    delivered         bigint not null default 0,        -- messages handed out by pops
    acked             bigint not null default 0,        -- completed acks (incl. dlq acks)
    ack_failed        bigint not null default 0,        -- failed acks
    dead_lettered     bigint not null default 0,        -- messages dead-lettered (acks, sweeps)
    transactions      bigint not null default 0,        -- committed transactions touching it
    expired           bigint not null default 0,        -- ttl expiries settled at claim
    evicted           bigint not null default 0,        -- maxWaitTimeSeconds evictions
    retention_deleted bigint not null default 0,        -- retentionSeconds deletions
    completed_deleted bigint not null default 0,        -- completedRetentionSeconds deletions
    -- createdAt → first delivery of the messages delivered in the minute, milliseconds.
    lag_ms_sum        double precision not null default 0,
    lag_samples       bigint not null default 0,
    lag_ms_max        double precision not null default 0,
    -- Latest sample of the minute: parked long-polls on the queue.
    waiters           integer not null default 0,
    primary key (bucket, queue_name, worker_id)
);

-- Feeds filtered by queue read one queue's minutes in a time range.
create index queue_metrics_queue on regina.queue_metrics (queue_name, bucket);
