-- The metrics history (migrations/0007_metrics_history.sql, 0009_stats.sql): hourly sums kept
-- from the minute rows, the trim of rows past METRICS_RETENTION_DAYS, and the rows a feed reads
-- for a range: minute rows for buckets under an hour, hourly sums otherwise (their first and
-- last hour count whole).

-- Recomputes the hourly sums of the hours in [i_from, i_to) (hour boundaries) from the minute
-- rows; run by the stats refresh for the hours that may still change.
create or replace function regina.metrics_rollup(i_from timestamptz, i_to timestamptz)
returns void
language plpgsql as $$
begin
    insert into regina.worker_metrics_hourly as h
    select date_bin('1 hour', w.bucket, 'epoch'), w.worker_id,
           (array_agg(w.hostname order by w.bucket desc))[1],
           (array_agg(w.version order by w.bucket desc))[1], min(w.started_at),
           max(w.last_seen), count(*), sum(w.requests), sum(w.push_messages),
           sum(w.pop_messages), sum(w.ack_messages), sum(w.db_calls), sum(w.batch_requests),
           sum(w.db_errors), sum(w.cpu_seconds), sum(w.rss_bytes), sum(w.db_pool_busy),
           sum(w.db_pool_waiting), sum(w.http_inflight), sum(w.longpoll_waiters)
    from regina.worker_metrics w
    where w.bucket >= i_from and w.bucket < i_to
    group by 1, 2
    on conflict (bucket, worker_id) do update
        set hostname = excluded.hostname, version = excluded.version,
            started_at = excluded.started_at, last_seen = excluded.last_seen,
            minutes = excluded.minutes, requests = excluded.requests,
            push_messages = excluded.push_messages, pop_messages = excluded.pop_messages,
            ack_messages = excluded.ack_messages, db_calls = excluded.db_calls,
            batch_requests = excluded.batch_requests, db_errors = excluded.db_errors,
            cpu_seconds = excluded.cpu_seconds, rss_bytes = excluded.rss_bytes,
            db_pool_busy = excluded.db_pool_busy, db_pool_waiting = excluded.db_pool_waiting,
            http_inflight = excluded.http_inflight, longpoll_waiters = excluded.longpoll_waiters;

    insert into regina.queue_metrics_hourly as h
    select date_bin('1 hour', m.bucket, 'epoch'), m.queue_name, m.worker_id, count(*),
           sum(m.pushed), sum(m.delivered), sum(m.acked), sum(m.ack_failed),
           sum(m.dead_lettered), sum(m.transactions), sum(m.expired), sum(m.evicted),
           sum(m.retention_deleted), sum(m.completed_deleted), sum(m.lag_ms_sum),
           sum(m.lag_samples), max(m.lag_ms_max), sum(m.waiters)
    from regina.queue_metrics m
    where m.bucket >= i_from and m.bucket < i_to
    group by 1, 2, 3
    on conflict (bucket, queue_name, worker_id) do update
        set minutes = excluded.minutes, pushed = excluded.pushed,
            delivered = excluded.delivered, acked = excluded.acked,
            ack_failed = excluded.ack_failed, dead_lettered = excluded.dead_lettered,
            transactions = excluded.transactions, expired = excluded.expired,
            evicted = excluded.evicted, retention_deleted = excluded.retention_deleted,
            completed_deleted = excluded.completed_deleted, lag_ms_sum = excluded.lag_ms_sum,
            lag_samples = excluded.lag_samples, lag_ms_max = excluded.lag_ms_max,
            waiters = excluded.waiters;

    insert into regina.queue_lag_history_hourly as h
    select date_bin('1 hour', l.bucket, 'epoch'), l.queue_name, count(*), sum(l.depth),
           sum(l.lag_ms_sum), sum(l.lag_samples), max(l.lag_ms_max)
    from regina.queue_lag_history l
    where l.bucket >= i_from and l.bucket < i_to
    group by 1, 2
    on conflict (bucket, queue_name) do update
        set minutes = excluded.minutes, depth = excluded.depth,
            lag_ms_sum = excluded.lag_ms_sum, lag_samples = excluded.lag_samples,
            lag_ms_max = excluded.lag_ms_max;
end
$$;

-- Deletes up to i_limit rows of the metrics history (minute rows, then hourly sums) older than
-- i_days days, in one transaction; returns the rows deleted. The leader calls it again while it
-- deletes i_limit rows.
create or replace function regina.metrics_trim(i_days integer, i_limit integer,
                                               i_now timestamptz default null)
returns bigint
language plpgsql as $$
declare
    v_before timestamptz := coalesce(i_now, clock_timestamp()) - i_days * interval '1 day';
    v_left bigint := i_limit;
    v_table text;
    v_n bigint;
begin
    foreach v_table in array array['worker_metrics', 'queue_metrics', 'queue_lag_history',
                                   'worker_metrics_hourly', 'queue_metrics_hourly',
                                   'queue_lag_history_hourly'] loop
        exit when v_left <= 0;
        execute format('delete from regina.%1$I t where t.ctid = any (array(
                            select x.ctid from regina.%1$I x where x.bucket < $1 limit $2))',
                       v_table)
        using v_before, v_left;
        get diagnostics v_n = row_count;
        v_left := v_left - v_n;
    end loop;
    return i_limit - v_left;
end
$$;

-- The worker rows of [i_from, i_to) at the resolution the bucket i_step calls for, as sums:
-- `minutes` rows summed, counts, and the sums of the sampled gauges.
create or replace function regina._worker_metrics_in(i_from timestamptz, i_to timestamptz,
                                                     i_step interval)
returns table (bucket timestamptz, worker_id text, hostname text, minutes bigint,
               requests bigint, push_messages bigint, pop_messages bigint, ack_messages bigint,
               db_calls bigint, batch_requests bigint, db_errors bigint,
               cpu_seconds double precision, rss_bytes numeric, db_pool_busy bigint,
               db_pool_waiting bigint, http_inflight bigint)
language plpgsql stable as $$
begin
    if i_step >= interval '1 hour' then
        return query
        select h.bucket, h.worker_id, h.hostname, h.minutes, h.requests, h.push_messages,
               h.pop_messages, h.ack_messages, h.db_calls, h.batch_requests, h.db_errors,
               h.cpu_seconds, h.rss_bytes, h.db_pool_busy, h.db_pool_waiting, h.http_inflight
        from regina.worker_metrics_hourly h
        where h.bucket >= date_bin(i_step, i_from, 'epoch') and h.bucket < i_to;
    else
        return query
        select w.bucket, w.worker_id, w.hostname, 1::bigint, w.requests, w.push_messages,
               w.pop_messages, w.ack_messages, w.db_calls, w.batch_requests, w.db_errors,
               w.cpu_seconds, w.rss_bytes::numeric, w.db_pool_busy::bigint,
               w.db_pool_waiting::bigint, w.http_inflight::bigint
        from regina.worker_metrics w
        where w.bucket >= date_bin(i_step, i_from, 'epoch') and w.bucket < i_to;
    end if;
end
$$;

-- The queue rows of [i_from, i_to) of the queues i_names (null: every row), as
-- _worker_metrics_in does for instances.
create or replace function regina._queue_metrics_in(i_from timestamptz, i_to timestamptz,
                                                    i_step interval, i_names text[])
returns table (bucket timestamptz, queue_name text, worker_id text, minutes bigint,
               pushed bigint, delivered bigint, acked bigint, ack_failed bigint,
               dead_lettered bigint, transactions bigint, expired bigint, evicted bigint,
               retention_deleted bigint, completed_deleted bigint, lag_ms_sum double precision,
               lag_samples bigint, lag_ms_max double precision, waiters bigint)
language plpgsql stable as $$
begin
    if i_step >= interval '1 hour' then
        return query
        select h.bucket, h.queue_name, h.worker_id, h.minutes, h.pushed, h.delivered, h.acked,
               h.ack_failed, h.dead_lettered, h.transactions, h.expired, h.evicted,
               h.retention_deleted, h.completed_deleted, h.lag_ms_sum, h.lag_samples,
               h.lag_ms_max, h.waiters
        from regina.queue_metrics_hourly h
        where h.bucket >= date_bin(i_step, i_from, 'epoch') and h.bucket < i_to
          and (i_names is null or h.queue_name = any (i_names));
    else
        return query
        select m.bucket, m.queue_name, m.worker_id, 1::bigint, m.pushed, m.delivered, m.acked,
               m.ack_failed, m.dead_lettered, m.transactions, m.expired, m.evicted,
               m.retention_deleted, m.completed_deleted, m.lag_ms_sum, m.lag_samples,
               m.lag_ms_max, m.waiters::bigint
        from regina.queue_metrics m
        where m.bucket >= date_bin(i_step, i_from, 'epoch') and m.bucket < i_to
          and (i_names is null or m.queue_name = any (i_names));
    end if;
end
$$;

-- The queue lag history of [i_from, i_to) of the queues i_names (null: every queue), as sums.
create or replace function regina._lag_history_in(i_from timestamptz, i_to timestamptz,
                                                  i_step interval, i_names text[])
returns table (bucket timestamptz, queue_name text, minutes bigint, depth numeric,
               lag_ms_sum double precision, lag_samples bigint, lag_ms_max double precision)
language plpgsql stable as $$
begin
    if i_step >= interval '1 hour' then
        return query
        select h.bucket, h.queue_name, h.minutes, h.depth, h.lag_ms_sum, h.lag_samples,
               h.lag_ms_max
        from regina.queue_lag_history_hourly h
        where h.bucket >= date_bin(i_step, i_from, 'epoch') and h.bucket < i_to
          and (i_names is null or h.queue_name = any (i_names));
    else
        return query
        select l.bucket, l.queue_name, 1::bigint, l.depth::numeric, l.lag_ms_sum,
               l.lag_samples, l.lag_ms_max
        from regina.queue_lag_history l
        where l.bucket >= date_bin(i_step, i_from, 'epoch') and l.bucket < i_to
          and (i_names is null or l.queue_name = any (i_names));
    end if;
end
$$;
