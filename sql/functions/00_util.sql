-- Small helpers shared by the other function files.

-- Timestamps on the wire: ISO-8601 UTC, milliseconds. Stable, as to_char is: a SQL function
-- declared more strictly than its body is not inlined, and each statement that calls it would plan
-- its body again (about 20 µs, once per statement).
create or replace function regina._ts(i_t timestamptz) returns text
language sql stable parallel safe as $$
    select to_char(i_t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- A message's createdAt: ISO-8601 UTC, microseconds (stable: see _ts).
create or replace function regina._ts_us(i_t timestamptz) returns text
language sql stable parallel safe as $$
    select to_char(i_t at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
$$;

-- A text as a JSON value: a string with JSON's escapes, or null. (Stable, as to_json is: a
-- function declared more constant than its body is not inlined into its callers.)
create or replace function regina._json_text(i_text text) returns text
language sql stable parallel safe as $$
    select coalesce(to_json(i_text)::text, 'null')
$$;

-- Text to uuid without raising: null when the text is not a canonical uuid.
create or replace function regina._uuid_or_null(i_text text) returns uuid
language sql immutable parallel safe as $$
    select case when i_text ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                then i_text::uuid end
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

-- Whether a token's queue scopes (http-api.md §1.6) allow queue i_queue: null scopes allow every
-- queue; otherwise the name equals an entry, or starts with the text of an entry ending in `*`
-- before that `*`. Listings take the scopes as an optional `scopes` array of their query and leave
-- out the queues this refuses.
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
