-- Analytics feeds (GET /api/v1/analytics/…, http-api.md §3.12): time series over the per-minute
-- metrics history of the instances (migrations/0007_metrics_history.sql) and the stats refresh's
-- queue lag history (migrations/0009_stats.sql), in buckets of `bucketSeconds` aligned on the
-- epoch, plus a snapshot of PostgreSQL's own statistics. One shape for every feed: `{from, to,
-- bucketSeconds, series: [{name, labels, points: [[timestamp, value], …]}]}`.
--
-- Series of counts (requests, messages, deletions, CPU time) have a point in every bucket of the
-- range, zero where nothing was recorded. Series of sampled gauges (memory, pool, waiters, lag,
-- depth) and ratios have points only where samples exist, averaged over the bucket's minutes (a
-- missing sample is unknown, not zero); `lag_ms_max` takes the bucket's maximum. Buckets of an
-- hour or more read the hourly sums (90_metrics_history.sql).

-- Rows of the instance feeds (`system-metrics`, `worker-metrics`): (series name, its order in the
-- feed, labels, bucket, value, zero-filled?).
create or replace function regina._worker_series(i_feed text, i_query jsonb, i_from timestamptz,
                                                 i_to timestamptz, i_step interval)
returns table (name text, ord integer, labels jsonb, bucket timestamptz, value double precision,
               zero_fill boolean)
language plpgsql stable as $$
declare
    v_seconds double precision := extract(epoch from i_step);
begin
    return query
    select x.name, x.ord, jsonb_build_object('workerId', w.worker_id, 'hostname', w.hostname),
           w.b, x.value, x.zero_fill
    from (select date_bin(i_step, m.bucket, 'epoch') as b, m.worker_id,
                 max(m.hostname) as hostname, sum(m.minutes) as minutes,
                 sum(m.cpu_seconds) as cpu_seconds, sum(m.rss_bytes) as rss_bytes,
                 sum(m.db_pool_busy) as db_pool_busy, sum(m.db_pool_waiting) as db_pool_waiting,
                 sum(m.http_inflight) as http_inflight, sum(m.requests) as requests,
                 sum(m.push_messages) as push_messages, sum(m.pop_messages) as pop_messages,
                 sum(m.ack_messages) as ack_messages, sum(m.db_calls) as db_calls,
                 sum(m.batch_requests) as batch_requests
          from regina._worker_metrics_in(i_from, i_to, i_step) m
          where (i_query ->> 'workerId' is null or m.worker_id = i_query ->> 'workerId')
            and (i_query ->> 'hostname' is null or m.hostname = i_query ->> 'hostname')
          group by 1, 2) w
    cross join lateral (values
        ('system-metrics', 'cpu_percent', 1, w.cpu_seconds / v_seconds * 100, true),
        ('system-metrics', 'rss_bytes', 2, (w.rss_bytes / w.minutes)::double precision, false),
        ('system-metrics', 'db_pool_busy', 3, w.db_pool_busy::double precision / w.minutes, false),
        ('system-metrics', 'db_pool_waiting', 4,
         w.db_pool_waiting::double precision / w.minutes, false),
        ('system-metrics', 'http_inflight', 5,
         w.http_inflight::double precision / w.minutes, false),
        ('worker-metrics', 'requests', 1, w.requests::double precision, true),
        ('worker-metrics', 'push_messages', 2, w.push_messages::double precision, true),
        ('worker-metrics', 'pop_messages', 3, w.pop_messages::double precision, true),
        ('worker-metrics', 'ack_messages', 4, w.ack_messages::double precision, true),
        ('worker-metrics', 'db_calls', 5, w.db_calls::double precision, true),
        ('worker-metrics', 'avg_batch_requests', 6,
         w.batch_requests::double precision / nullif(w.db_calls, 0), false)
    ) x(feed, name, ord, value, zero_fill)
    where x.feed = i_feed and x.value is not null;
end
$$;

-- Rows of the `queue-lag` feed, from the refresh's lag history of the queues i_names.
create or replace function regina._lag_series(i_from timestamptz, i_to timestamptz, i_step interval,
                                              i_names text[])
returns table (name text, ord integer, labels jsonb, bucket timestamptz, value double precision,
               zero_fill boolean)
language plpgsql stable as $$
begin
    return query
    select x.name, x.ord, jsonb_build_object('queue', h.queue_name), h.b, x.value, false
    from (select date_bin(i_step, l.bucket, 'epoch') as b, l.queue_name,
                 sum(l.lag_ms_sum) / nullif(sum(l.lag_samples), 0) as lag_ms_avg,
                 max(l.lag_ms_max) as lag_ms_max,
                 (sum(l.depth) / sum(l.minutes))::double precision as depth
          from regina._lag_history_in(i_from, i_to, i_step, i_names) l
          group by 1, 2) h
    cross join lateral (values ('lag_ms_avg', 1, h.lag_ms_avg), ('lag_ms_max', 2, h.lag_ms_max),
                               ('depth', 3, h.depth)) x(name, ord, value)
    where x.value is not null;
end
$$;

-- Rows of the queue feeds (`queue-ops`, `retention`, `queue-parked-replicas`) of the queues
-- i_names.
create or replace function regina._queue_series(i_feed text, i_from timestamptz, i_to timestamptz,
                                                i_step interval, i_names text[])
returns table (name text, ord integer, labels jsonb, bucket timestamptz, value double precision,
               zero_fill boolean)
language plpgsql stable as $$
begin
    return query
    select x.name, x.ord,
           case when i_feed = 'queue-parked-replicas'
                then jsonb_build_object('queue', q.queue_name, 'workerId', q.worker_id)
                else jsonb_build_object('queue', q.queue_name) end,
           q.b, x.value, i_feed <> 'queue-parked-replicas'
    from (select date_bin(i_step, m.bucket, 'epoch') as b, m.queue_name,
                 case when i_feed = 'queue-parked-replicas' then m.worker_id end as worker_id,
                 sum(m.pushed) as pushed, sum(m.delivered) as delivered, sum(m.acked) as acked,
                 sum(m.ack_failed) as ack_failed, sum(m.dead_lettered) as dead_lettered,
                 sum(m.transactions) as transactions,
                 sum(m.retention_deleted) as retention_deleted,
                 sum(m.completed_deleted) as completed_deleted, sum(m.evicted) as evicted,
                 sum(m.expired) as expired,
                 sum(m.waiters)::double precision / sum(m.minutes) as waiters
          from regina._queue_metrics_in(i_from, i_to, i_step, i_names) m
          group by 1, 2, 3) q
    cross join lateral (values
        ('queue-ops', 'push', 1, q.pushed::double precision),
        ('queue-ops', 'pop', 2, q.delivered::double precision),
        ('queue-ops', 'ack', 3, q.acked::double precision),
        ('queue-ops', 'ack_failed', 4, q.ack_failed::double precision),
        ('queue-ops', 'dlq', 5, q.dead_lettered::double precision),
        ('queue-ops', 'transactions', 6, q.transactions::double precision),
        ('retention', 'retention_deleted', 1, q.retention_deleted::double precision),
        ('retention', 'completed_deleted', 2, q.completed_deleted::double precision),
        ('retention', 'evicted', 3, q.evicted::double precision),
        ('retention', 'expired', 4, q.expired::double precision),
        ('queue-parked-replicas', 'waiters', 1, q.waiters)
    ) x(feed, name, ord, value)
    where x.feed = i_feed;
end
$$;

-- Rows of one feed.
create or replace function regina._analytics_rows(i_feed text, i_query jsonb, i_from timestamptz,
                                                  i_to timestamptz, i_step interval)
returns table (name text, ord integer, labels jsonb, bucket timestamptz, value double precision,
               zero_fill boolean)
language sql stable as $$
    select * from regina._worker_series(i_feed, i_query, i_from, i_to, i_step)
    where i_feed in ('system-metrics', 'worker-metrics')
    union all
    select * from regina._lag_series(i_from, i_to, i_step, regina._metrics_queues(i_query))
    where i_feed = 'queue-lag'
    union all
    select * from regina._queue_series(i_feed, i_from, i_to, i_step,
                                       regina._metrics_queues(i_query))
    where i_feed in ('queue-ops', 'retention', 'queue-parked-replicas')
$$;

-- The latest values of PostgreSQL's own statistics for this database, one point each at i_now.
create or replace function regina._postgres_stats(i_now timestamptz) returns json
language sql stable as $$
    select json_agg(json_build_object('name', s.name, 'labels', '{}'::json,
                                      'points', json_build_array(json_build_array(
                                          regina._ts(i_now), regina._round(s.value, 4))))
                    order by s.ord)
    from (values
        (1, 'database_bytes', pg_database_size(current_database())::double precision),
        (2, 'messages_table_bytes', pg_total_relation_size('regina.messages')::double precision),
        (3, 'connections', (select count(*) from pg_stat_activity a
                            where a.datname = current_database())::double precision),
        (4, 'cache_hit_ratio', (select d.blks_hit::double precision
                                       / nullif(d.blks_hit + d.blks_read, 0)
                                from pg_stat_database d where d.datname = current_database())),
        (5, 'dead_tuples_messages', (select t.n_dead_tup from pg_stat_user_tables t
                                     where t.relid = 'regina.messages'::regclass
                                    )::double precision),
        (6, 'longest_transaction_seconds', (
            select greatest(0, coalesce(max(extract(epoch from i_now - a.xact_start)), 0))
            from pg_stat_activity a
            where a.datname = current_database() and a.xact_start is not null
              and a.pid <> pg_backend_pid()))
    ) s(ord, name, value)
$$;

-- GET /api/v1/analytics/<i_feed>: `i_query = {from, to, bucketSeconds, queue?, workerId?,
-- hostname?, scopes?}`. Null for an unknown feed.
create or replace function regina.analytics(i_feed text, i_query jsonb,
                                            i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_range record := regina._query_range(i_query);
    v_series json;
begin
    if i_feed = 'postgres-stats' then
        v_series := regina._postgres_stats(coalesce(i_now, clock_timestamp()));
    elsif i_feed in ('system-metrics', 'worker-metrics', 'queue-lag', 'queue-ops',
                     'queue-parked-replicas', 'retention') then
        -- Each series gathers its values by bucket once; counts then walk every bucket of the
        -- range, gauges only their own.
        with series as (
            select r.name, r.ord, r.labels, r.zero_fill,
                   jsonb_object_agg(regina._ts(r.bucket), r.value) as values_by_bucket
            from regina._analytics_rows(i_feed, i_query, v_range.o_from, v_range.o_to,
                                        v_range.o_step) r
            group by r.name, r.ord, r.labels, r.zero_fill)
        select coalesce(json_agg(json_build_object(
                   'name', s.name, 'labels', s.labels,
                   'points', case
                       when s.zero_fill then (
                           select json_agg(json_build_array(b.t, regina._round(
                                      (s.values_by_bucket ->> b.t)::double precision))
                                           order by b.t)
                           from (select regina._ts(x.bucket) as t
                                 from regina._buckets(v_range.o_from, v_range.o_to,
                                                      v_range.o_step) x) b)
                       else (
                           select json_agg(json_build_array(
                                               v.key, regina._round(v.value::double precision))
                                           order by v.key)
                           from jsonb_each_text(s.values_by_bucket) v) end)
                   order by s.labels::text, s.ord), '[]')
        into v_series
        from series s;
    else
        return null;
    end if;
    return json_build_object('from', regina._ts(v_range.o_from), 'to', regina._ts(v_range.o_to),
                             'bucketSeconds', extract(epoch from v_range.o_step)::integer,
                             'series', v_series);
end
$$;
