-- Dashboard stats (spec §3.8 overview, §3.12, §4.15, §4.16): the counts of every partition and
-- queue, consumer lag per (queue, group) and the per-minute history of queue lag and depth, kept
-- by the leader's stats refresh (functions/90_stats_refresh.sql, ADR 0011) every
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

-- Lag of each (partition, group) with unsettled messages when counted (spec §4.16): messages
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

-- Per queue: the sums of its partitions' counts and the groups the counts were based on.
create table regina.queue_stats (
    queue_id     bigint primary key,
    partitions   bigint not null default 0,
    total        bigint not null default 0,
    pending      bigint not null default 0,
    processing   bigint not null default 0,
    completed    bigint not null default 0,
    failed       bigint not null default 0,
    dead_letter  bigint not null default 0,   -- the queue's DLQ depth
    -- Known groups with their subscription starts (`<start epoch>@<group>`): as of the current pass, and
    -- as the counts above were made. A difference means every partition of the queue is recounted.
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
    recounted       bigint        -- partitions it recounted
);

insert into regina.stats_state default values;
