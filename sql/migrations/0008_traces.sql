-- Trace events (http-api.md §3.11): what consumers record about a message while they process it,
-- read back by message, by trace name, and through the list of names.
--
-- An event belongs to its message as the wire names it, (partition, transactionId). A requeued
-- delivery (0006_admin.sql) is the same message as its original, so an event stays while any
-- stored row of the message does and goes with the last one: every function that deletes
-- messages calls regina._traces_forget, then regina._trace_names_settle (docs/adr/0011).

create table regina.traces (
    id             uuid primary key,              -- UUIDv7 assigned by the broker
    partition_id   bigint not null,
    transaction_id text not null,
    event_type     text not null,
    data           json not null check (json_typeof(data) <> 'null'),  -- verbatim, like a payload
    consumer_group text not null,
    worker_id      text,
    trace_names    text[] not null default '{}',  -- as recorded, without repeats
    created_at     timestamptz not null
);

-- A message's events oldest first, and their deletion with the message: one range each.
create index traces_message on regina.traces (partition_id, transaction_id, created_at, id);

-- One row per (event, name). GET /traces/by-name reads one name's rows newest first: a backward
-- range scan of the primary key that stops after offset + limit rows. Names compare byte-wise
-- (collation "C"): they are identifiers, and every writer of the summary takes its rows in this
-- one order.
create table regina.trace_names (
    name           text collate "C" not null,
    created_at     timestamptz not null,
    trace_id       uuid not null,
    partition_id   bigint not null,
    transaction_id text not null,
    queue_id       bigint not null,               -- for token queue scopes and the summary
    first_of_message boolean not null,            -- the message's first event with this name
    primary key (name, created_at, trace_id)
);

-- The names of one message's events: whether a name is new to the message (message_count), and
-- deletion with the message.
create index trace_names_message on regina.trace_names (partition_id, transaction_id, name);

-- Summary per (name, queue), kept exact in the transactions that add and delete events, so the
-- names listing reads a page of this table instead of aggregating every event, and counts
-- restricted to a token's queues stay exact too. A row whose count reaches 0 is deleted.
create table regina.trace_name_stats (
    name          text collate "C" not null,
    queue_id      bigint not null,
    trace_count   bigint not null,   -- events with this name
    message_count bigint not null,   -- messages with at least one such event
    last_seen     timestamptz not null,  -- latest event recorded with this name
    primary key (name, queue_id)
);

-- The names listing, most recently seen first.
create index trace_name_stats_recent on regina.trace_name_stats (last_seen desc, name);

-- What the deletions of one transaction take off the summary, applied once at its end by
-- regina._trace_names_settle (then the rows are gone). Deferring keeps summary row locks, taken
-- in name order, after every message row lock of the deleting transaction, so a deleter never
-- waits for a message while holding a summary row. Rows never outlive their transaction, so
-- the table is unlogged.
create unlogged table regina.trace_name_debits (
    xact_id       xid8 not null,
    name          text collate "C" not null,
    queue_id      bigint not null,
    trace_count   bigint not null,
    message_count bigint not null
);

create index trace_name_debits_xact on regina.trace_name_debits (xact_id);
