-- Streams (streams-api.md §4): registered queries, their per-key state, and the cursor column of
-- the gate's parked leases. Functions in sql/functions/95_streams.sql; decisions in ADR 0013.

-- One row per registered query. `query_id` never changes, not even by a reset.
create table regina.stream_queries (
    query_id     uuid primary key,
    name         text not null unique,
    source_queue text not null,
    sink_queue   text,
    config_hash  text not null,
    created_at   timestamptz not null default clock_timestamp(),
    updated_at   timestamptz not null default clock_timestamp()
);

-- One row per (query, source partition) that has had a cycle: the shard. Every cycle upserts its
-- row first, so the row lock serialises the cycles of a shard, and `last_cycle_at` records the
-- last one without touching the query row (which every cycle of every shard would then contend
-- for). No index column changes on that upsert: it stays a HOT update, hence the fillfactor.
create table regina.stream_shards (
    query_id      uuid not null references regina.stream_queries (query_id) on delete cascade,
    partition_id  uuid not null,  -- a source partition id; no foreign key (rows outlive it)
    last_cycle_at timestamptz not null,
    cycles        bigint not null default 0,
    primary key (query_id, partition_id)
) with (fillfactor = 70);

-- Per-key state of a shard. Read whole (or by key prefix) at every stateful cycle and upserted in
-- batches: the primary key serves both, and the `C` collation makes its order the byte order of
-- UTF-8 that state/get answers in. No foreign key: each inserted row would pay a lookup and a
-- share lock on the parent; the query's delete trigger removes the rows instead.
create table regina.stream_state (
    query_id     uuid not null,
    partition_id uuid not null,
    key          text collate "C" not null,
    value        jsonb not null,  -- any JSON value; JSON null is the jsonb 'null'
    updated_at   timestamptz not null,
    primary key (query_id, partition_id, key)
) with (fillfactor = 80);

-- A lease parked by a cycle's partial `completed` ack with `release_lease: false`: its expiry
-- charges no attempt (streams-api.md §3.3, regina._lease_expire). It names the lease, so a later
-- claim needs no reset of it: the column matters only while it equals `lease_id`.
alter table regina.cursors add column parked_lease_id uuid;
