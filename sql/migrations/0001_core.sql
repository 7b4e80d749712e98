-- Core tables: queues, partitions, messages, cursors, subscriptions, dead letters.
--
-- Hot rows are kept apart from large payloads: `partitions` is updated by every push batch and
-- `cursors` by every pop and ack, so neither has an index on a column those updates change
-- (except the lease columns, which change once per claim and once per release), and both leave
-- free space on each page so updates stay HOT.

create table regina.queues (
    id                          bigint generated always as identity primary key,
    uuid                        uuid not null default gen_random_uuid() unique,
    name                        text not null unique,
    namespace                   text not null default '',
    task                        text not null default '',
    lease_time                  integer not null default 300,   -- seconds
    retry_limit                 integer not null default 3,
    retry_delay_ms              bigint not null default 0,
    max_size                    bigint not null default 0,      -- messages, 0 = unlimited
    ttl_seconds                 bigint not null default 0,
    priority                    integer not null default 0,
    delayed_processing_seconds  integer not null default 0,
    window_buffer_seconds       integer not null default 0,
    dead_letter_queue           boolean not null default true,
    dlq_after_max_retries       boolean not null default true,
    retention_enabled           boolean not null default true,
    retention_seconds           bigint not null default 0,
    completed_retention_seconds bigint not null default 0,
    max_wait_time_seconds       bigint not null default 0,
    encryption_enabled          boolean not null default false,
    created_at                  timestamptz not null default clock_timestamp()
);

create index queues_namespace_task on regina.queues (namespace, task);

create table regina.partitions (
    id              bigint generated always as identity primary key,
    uuid            uuid not null default gen_random_uuid() unique,
    queue_id        bigint not null references regina.queues (id) on delete cascade,
    name            text not null,
    next_seq        bigint not null default 0,  -- offset the next pushed message gets
    last_created_at timestamptz,                -- createdAt of the newest message (never decreases)
    last_push_at    timestamptz,
    created_at      timestamptz not null default clock_timestamp(),
    unique (queue_id, name)
) with (fillfactor = 70);

-- Insert-only. `seq` is the message's offset in its partition; offset order is commit order.
-- Payloads are `json`, kept verbatim: any JSON value round-trips (U+0000 included, which `jsonb`
-- refuses), and neither push nor pop pays for a conversion.
create table regina.messages (
    partition_id   bigint not null,
    seq            bigint not null,
    id             uuid not null,
    transaction_id text not null,
    trace_id       text,
    producer_sub   text,
    created_at     timestamptz not null,
    payload        json,
    primary key (partition_id, seq)
);

create unique index messages_dedup on regina.messages (partition_id, transaction_id);

-- One row per (partition, consumer group): the group's head, settled marks ahead of it, the
-- head's failed attempts, and the latest lease (active or ended).
create table regina.cursors (
    partition_id     bigint not null,
    consumer_group   text not null,
    queue_id         bigint not null,
    next_seq         bigint not null,                 -- head: no unsettled message below it
    marks            bigint[] not null default '{}',  -- settled ahead of the head, kept (dlq acks)
    lease_marks      bigint[] not null default '{}',  -- completed ahead of the head, live with the lease
    head_attempts    integer not null default 0,
    head_error       text,
    retry_after      timestamptz,                     -- not eligible before this instant
    lease_id         uuid,                            -- latest lease, active or ended
    lease_active     boolean not null default false,
    lease_expires_at timestamptz,
    lease_end_seq    bigint,                          -- last offset delivered under the lease
    last_lease_id    uuid,                            -- latest lease that ended fully settled
    last_claim_at    timestamptz,
    total_consumed   bigint not null default 0,
    batches_consumed bigint not null default 0,
    last_consumed_at timestamptz,
    created_at       timestamptz not null default clock_timestamp(),
    primary key (partition_id, consumer_group)
) with (fillfactor = 50);

create index cursors_queue_group on regina.cursors (queue_id, consumer_group);
create index cursors_lease on regina.cursors (lease_id) where lease_id is not null;
create index cursors_lease_expiry on regina.cursors (lease_expires_at) where lease_active;

-- Where a named group starts on a queue (fixed by its first pop there).
create table regina.subscriptions (
    queue_id       bigint not null references regina.queues (id) on delete cascade,
    consumer_group text not null,
    mode           text not null,  -- all | new | timestamp
    start_at       timestamptz,    -- null: from the oldest retained message
    created_at     timestamptz not null default clock_timestamp(),
    primary key (queue_id, consumer_group)
);

-- Dead letters keep a copy of the message, so they outlive its retention.
create table regina.dead_letters (
    id             bigint generated always as identity primary key,
    queue_id       bigint not null,
    partition_id   bigint not null,
    consumer_group text not null,
    message_id     uuid not null,
    seq            bigint not null,
    transaction_id text not null,
    trace_id       text,
    producer_sub   text,
    payload        json,
    created_at     timestamptz not null,
    error_message  text,
    retry_count    integer not null default 0,
    failed_at      timestamptz not null,
    unique (message_id, consumer_group)
);

create index dead_letters_failed_at on regina.dead_letters (failed_at desc);
create index dead_letters_queue_failed_at on regina.dead_letters (queue_id, failed_at desc);

-- Rotation among queues of equal priority in namespace/task pops.
create table regina.pop_rotation (
    selector       text not null,
    consumer_group text not null,
    counter        bigint not null default 0,
    primary key (selector, consumer_group)
);

-- A push item after name resolution (used inside regina.push).
create type regina.push_item as (
    idx            integer,
    queue_name     text,
    partition_name text,
    partition_id   bigint,
    partition_uuid uuid,
    transaction_id text,
    message_id     uuid,
    trace_id       text,
    producer_sub   text,
    payload        json
);

-- What claiming one partition gave a pop: messages (wire objects), or why not and when to retry.
create type regina.claim_outcome as (
    messages json[],
    reason   text,
    wake     timestamptz
);

-- A cursor changed in memory, and whether the change wrote a dead letter.
create type regina.cursor_outcome as (
    c   regina.cursors,
    dlq boolean
);

-- An ack item after resolution of its message, partition and consumer group (inside regina.ack).
create type regina.ack_item as (
    idx            integer,
    transaction_id text,
    status         text,
    lease_text     text,
    lease_id       uuid,
    error          text,
    partition_id   bigint,
    partition_name text,
    queue_id       bigint,
    queue_name     text,
    seq            bigint,
    consumer_group text,
    group_mismatch boolean
);
