-- Small helpers shared by the other function files.

-- Timestamps on the wire: ISO-8601 UTC, milliseconds.
create or replace function regina._ts(i_t timestamptz) returns text
language sql immutable parallel safe as $$
    select to_char(i_t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- A message's createdAt: ISO-8601 UTC, microseconds.
create or replace function regina._ts_us(i_t timestamptz) returns text
language sql immutable parallel safe as $$
    select to_char(i_t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- Text to uuid without raising: null when the text is not a canonical uuid.
create or replace function regina._uuid_or_null(i_text text) returns uuid
language sql immutable parallel safe as $$
    select case when i_text ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                then i_text::uuid end
$$;

-- First unsettled message of group i_group at or after i_from: the smallest existing offset not
-- in i_skip, passing over requeued deliveries meant for other groups (settled for this one).
-- PL/pgSQL rather than SQL here and below: these run once or more per claim and ack, and
-- PostgreSQL re-plans a non-inlined SQL function's body at every call, while PL/pgSQL keeps its
-- plans for the session.
create or replace function regina._head_seq(i_partition_id bigint, i_from bigint, i_skip bigint[],
                                            i_group text)
returns bigint
language plpgsql stable as $$
begin
    return (select m.seq from regina.messages m
            where m.partition_id = i_partition_id and m.seq >= i_from and m.seq <> all (i_skip)
              and (m.for_group is null or m.for_group = i_group)
            order by m.seq
            limit 1);
end
$$;

-- Where a head lands after the messages in i_marks (all at or after i_from) were settled: the
-- first existing unsettled message, or just past the highest mark when none exists. Never past a
-- message that is not yet visible: offsets commit in order, so every message below a settled
-- (hence visible) mark is visible too.
create or replace function regina._advance(i_partition_id bigint, i_from bigint, i_marks bigint[],
                                           i_group text)
returns bigint
language plpgsql stable as $$
begin
    return coalesce(regina._head_seq(i_partition_id, i_from, i_marks, i_group),
                    greatest(i_from, (select max(x) + 1 from unnest(i_marks) x)));
end
$$;

-- Marks that still lie ahead of a head.
create or replace function regina._marks_from(i_marks bigint[], i_head bigint) returns bigint[]
language plpgsql immutable as $$
begin
    if cardinality(i_marks) = 0 then
        return i_marks;
    end if;
    return (select coalesce(array_agg(x order by x), '{}') from unnest(i_marks) x where x >= i_head);
end
$$;

-- Every option of a queue, as configure reports it.
create or replace function regina._queue_options(i_q regina.queues) returns jsonb
language sql stable as $$
    select jsonb_build_object(
        'leaseTime', i_q.lease_time,
        'retryLimit', i_q.retry_limit,
        'retryDelay', i_q.retry_delay_ms,
        'maxSize', i_q.max_size,
        'ttl', i_q.ttl_seconds,
        'priority', i_q.priority,
        'delayedProcessing', i_q.delayed_processing_seconds,
        'windowBuffer', i_q.window_buffer_seconds,
        'deadLetterQueue', i_q.dead_letter_queue,
        'dlqAfterMaxRetries', i_q.dlq_after_max_retries,
        'retentionEnabled', i_q.retention_enabled,
        'retentionSeconds', i_q.retention_seconds,
        'completedRetentionSeconds', i_q.completed_retention_seconds,
        'maxWaitTimeSeconds', i_q.max_wait_time_seconds,
        'encryptionEnabled', i_q.encryption_enabled)
$$;

-- Brings the ready row of a cursor's (partition, group) in line with the cursor (see
-- migrations/0002_ready.sql): claimable at lease expiry, at the retry instant, or now (no earlier
-- than i_wake, when the caller knows the head is invisible until then); deleted when the head has
-- reached the partition's end. The end is read under the partition row's share lock, taken with
-- `skip locked`: a push in flight holds that row and will want the ready row, so it stays.
create or replace function regina._ready_sync(i_c regina.cursors, i_now timestamptz,
                                              i_wake timestamptz default null)
returns void
language plpgsql as $$
declare
    v_at timestamptz;
begin
    if i_c.lease_active then
        v_at := i_c.lease_expires_at;
    elsif i_c.retry_after > i_now then
        v_at := i_c.retry_after;
    elsif exists (select 1 from regina.partitions p
                  where p.id = i_c.partition_id and p.next_seq <= i_c.next_seq
                  for share skip locked) then
        delete from regina.ready r
        where r.partition_id = i_c.partition_id and r.consumer_group = i_c.consumer_group;
        return;
    else
        v_at := i_now;
    end if;
    v_at := greatest(v_at, i_wake);
    update regina.ready r set eligible_at = v_at
    where r.partition_id = i_c.partition_id and r.consumer_group = i_c.consumer_group
      and r.eligible_at is distinct from v_at;
end
$$;

-- Saves a cursor row changed in memory by the pop, ack and lease functions, and its ready row.
create or replace function regina._cursor_save(i_c regina.cursors, i_now timestamptz,
                                               i_wake timestamptz default null)
returns void
language plpgsql as $$
begin
    update regina.cursors set
        next_seq = i_c.next_seq,
        marks = i_c.marks,
        lease_marks = i_c.lease_marks,
        head_attempts = i_c.head_attempts,
        head_error = i_c.head_error,
        retry_after = i_c.retry_after,
        lease_id = i_c.lease_id,
        lease_active = i_c.lease_active,
        lease_expires_at = i_c.lease_expires_at,
        lease_end_seq = i_c.lease_end_seq,
        last_lease_id = i_c.last_lease_id,
        last_claim_at = i_c.last_claim_at,
        total_consumed = i_c.total_consumed,
        batches_consumed = i_c.batches_consumed,
        last_consumed_at = i_c.last_consumed_at
    where partition_id = i_c.partition_id and consumer_group = i_c.consumer_group;
    perform regina._ready_sync(i_c, i_now, i_wake);
end
$$;

-- Whether a token's queue scopes (spec §1.6) allow queue i_queue: null scopes allow every queue;
-- otherwise the name equals an entry, or starts with the text of an entry ending in `*` before
-- that `*`. Listings take the scopes as an optional `scopes` array of their query and leave out
-- the queues this refuses.
create or replace function regina._queue_in_scopes(i_queue text, i_scopes text[]) returns boolean
language sql immutable parallel safe as $$
    select i_scopes is null
        or exists (select 1 from unnest(i_scopes) s
                   where s = i_queue
                      or (right(s, 1) = '*' and starts_with(i_queue, left(s, -1))))
$$;

-- Drops function i_signature (e.g. 'regina.pop(jsonb, timestamptz)') when neither its arguments
-- nor its result mention i_marker. `create or replace` cannot change the row a function returns:
-- a file that changes one calls this first with a name only the new definition has, so the old
-- definition is dropped once and later starts keep the new one.
create or replace function regina._drop_outdated(i_signature text, i_marker text)
returns void
language plpgsql as $$
declare
    v_function regprocedure := to_regprocedure(i_signature);
begin
    if v_function is not null
       and position(i_marker in pg_get_function_arguments(v_function) || ' '
                                || pg_get_function_result(v_function)) = 0 then
        execute format('drop function %s', v_function);
    end if;
end
$$;
