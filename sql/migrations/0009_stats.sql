-- Dashboard stats (http-api.md §3.8 overview, §3.12, §4.15, §4.16): the counts of every partition
-- and queue, consumer lag per (queue, group) and the per-minute history of queue lag and depth,
-- kept by the leader's stats refresh (functions/90_stats_refresh.sql, ADR 0012) every
-- STATS_INTERVAL_MS. Readers (overview, status, analytics, Prometheus cluster gauges) read these
-- tables instead of counting messages.
--
-- None of these tables is written by a push, pop or ack. The refresh recounts only partitions
-- that may have changed since its previous pass, found without scanning messages: a changed
-- `partitions.next_seq` (pushes), a ready row moved since then or gone (pops, acks, expiries,
-- seeks), a new set of known groups on the queue, or a deletion of messages or dead letters
-- (recorded by statement triggers into `stats_dirty`).

-- The six counts of one partition as of its last count, and what the count was based on.
create table regina.partition_stats (
    partition_id bigint primary key,
    queue_id     bigint not null,
    next_seq     bigint not null,   -- partitions.next_seq when counted: a push changes it
    has_work     boolean not null,  -- a ready row existed when counted
    total        bigint not null,
    pending      bigint not null,
    processing   bigint not null,
    completed    bigint not null,
    failed       bigint not null,
    dead_letter  bigint not null,
    counted_at   timestamptz not null
);

create index partition_stats_queue on regina.partition_stats (queue_id);

-- Lag of each (partition, group) with unsettled messages when counted (http-api.md §4.16): messages
-- not settled and when the group's head was created.
create table regina.partition_lag (
    partition_id   bigint not null,
    consumer_group text not null,
    queue_id       bigint not null,
    offset_lag     bigint not null,
    head_at        timestamptz,
    primary key (partition_id, consumer_group)
);

create index partition_lag_queue on regina.partition_lag (queue_id, consumer_group);
-- The lagging listing takes the oldest heads first.
create index partition_lag_head_at on regina.partition_lag (head_at);

-- Per queue: the sums of its partitions' counts and the groups the counts were based on.
create table regina.queue_stats (
    queue_id     bigint primary key,
    total        bigint not null default 0,
    pending      bigint not null default 0,
    processing   bigint not null default 0,
    completed    bigint not null default 0,
    failed       bigint not null default 0,
    dead_letter  bigint not null default 0,   -- the queue's DLQ depth
    -- Known groups with their subscription starts (`<start epoch>@<group>`): as of the current
    -- pass, and as the counts above were made. A difference means every partition of the queue
    -- is recounted.
    groups         text[] not null default '{}',
    groups_counted text[],
    refreshed_at   timestamptz
);

-- Consumer lag per (queue, known group): partitions with lag, messages not settled, and the
-- creation time of the oldest unsettled head (lag seconds are measured from it when read).
create table regina.group_stats (
    queue_id            bigint not null,
    consumer_group      text not null,
    partitions_with_lag bigint not null,
    offset_lag          bigint not null,
    oldest_head_at      timestamptz,
    refreshed_at        timestamptz not null,
    primary key (queue_id, consumer_group)
);

-- Per minute and queue: depth (messages some known group has not settled) and the age of the
-- groups' heads, sampled at each refresh of the minute (the `queue-lag` analytics series).
create table regina.queue_lag_history (
    bucket      timestamptz not null,  -- start of the minute
    queue_name  text not null,
    depth       bigint not null,       -- latest sample of the minute
    lag_ms_sum  double precision not null default 0,  -- sum over samples of the average head age
    lag_samples bigint not null default 0,
    lag_ms_max  double precision not null default 0,  -- oldest head age seen in the minute
    primary key (bucket, queue_name)
);

create index queue_lag_history_queue on regina.queue_lag_history (queue_name, bucket);

-- Hourly sums of the per-minute history (0007_metrics_history.sql and the table above), kept by
-- the stats refresh, so feeds over long ranges (buckets of an hour or more) read sixty times fewer
-- rows. `minutes` counts the minute rows summed: a sampled gauge's sum divided by it is its
-- average; counts are plain sums; `*_max` the hour's maximum.
create table regina.worker_metrics_hourly (
    bucket           timestamptz not null,   -- start of the hour
    worker_id        text not null,
    hostname         text not null,
    version          text not null,
    started_at       timestamptz not null,
    last_seen        timestamptz not null,
    minutes          bigint not null,
    requests         bigint not null,
    push_messages    bigint not null,
    pop_messages     bigint not null,
    ack_messages     bigint not null,
    db_calls         bigint not null,
    batch_requests   bigint not null,
    db_errors        bigint not null,
    cpu_seconds      double precision not null,
    rss_bytes        numeric not null,       -- sums of the minutes' samples
    db_pool_busy     bigint not null,
    db_pool_waiting  bigint not null,
    http_inflight    bigint not null,
    longpoll_waiters bigint not null,
    primary key (bucket, worker_id)
);

create table regina.queue_metrics_hourly (
    bucket            timestamptz not null,
    queue_name        text not null,
    worker_id         text not null,
    minutes           bigint not null,
    pushed            bigint not null,
    delivered         bigint not null,
    acked             bigint not null,
    ack_failed        bigint not null,
    dead_lettered     bigint not null,
    transactions      bigint not null,
    expired           bigint not null,
    evicted           bigint not null,
    retention_deleted bigint not null,
    completed_deleted bigint not null,
    lag_ms_sum        double precision not null,
    lag_samples       bigint not null,
    lag_ms_max        double precision not null,
    waiters           bigint not null,       -- sum of the minutes' samples
    primary key (bucket, queue_name, worker_id)
);

create index queue_metrics_hourly_queue on regina.queue_metrics_hourly (queue_name, bucket);

create table regina.queue_lag_history_hourly (
    bucket      timestamptz not null,
    queue_name  text not null,
    minutes     bigint not null,
    depth       numeric not null,         -- sum of the minutes' samples
    lag_ms_sum  double precision not null,
    lag_samples bigint not null,
    lag_ms_max  double precision not null,
    primary key (bucket, queue_name)
);

create index queue_lag_history_hourly_queue on regina.queue_lag_history_hourly (queue_name, bucket);

-- Partitions to recount in the current (or next) pass.
create table regina.stats_dirty (
    partition_id bigint primary key
);

-- One row: where the refresh stands.
create table regina.stats_state (
    id              boolean primary key default true check (id),
    since           timestamptz,  -- ready rows moved after this belong to partitions to recount
    pending_since   timestamptz,  -- `since` of the next pass, once the current one completes
    pass_started_at timestamptz,  -- start of the current (or last) pass
    refreshed_at    timestamptz,  -- end of the last complete pass (statsAge counts from it)
    duration_ms     bigint,       -- of that pass
    recounted       bigint,       -- partitions it recounted
    rollup_from     timestamptz,  -- the oldest hour whose hourly sums may be incomplete
    lag_summary     jsonb         -- the lag distribution over every queue (overview)
);

insert into regina.stats_state default values;

-- Consumer-group listings read the lag above instead of computing it for every partition with
-- work (functions/71_consumer_groups.sql).
drop function if exists regina._group_work(bigint, text);
