-- Dashboard feeds (http-api.md §3.8 overview, §3.12): message counts and lag from the stats tables
-- the leader refreshes (91_stats_refresh.sql), queues and partitions as they are, throughput and
-- instances from the per-minute metrics history
-- (migrations/0007_metrics_history.sql), leases and recent dead letters from cheap indexed
-- queries. Every feed takes its query as JSON: `from`/`to` (ISO text, already resolved by the
-- broker), `bucketSeconds`, selectors (`queue`, `namespace`, `task`) and the token's queue
-- `scopes` (absent or null: every queue).

-- The queues a feed covers: those matching `queue`, `namespace`, `task` and the scopes.
create or replace function regina._queues_selected(i_query jsonb) returns setof regina.queues
language sql stable as $$
    select q.* from regina.queues q
    where (i_query ->> 'queue' is null or q.name = i_query ->> 'queue')
      and (i_query ->> 'namespace' is null or q.namespace = i_query ->> 'namespace')
      and (i_query ->> 'task' is null or q.task = i_query ->> 'task')
      and regina._queue_in_scopes(q.name, regina._query_scopes(i_query))
$$;

-- The queue names of the metrics history a feed covers, or null for every row. Metrics rows name
-- queues that may be gone (a feed for one queue still shows its history), and `_other` stands for
-- queues beyond the label limit, so only an unfiltered, unscoped feed counts those.
create or replace function regina._metrics_queues(i_query jsonb) returns text[]
language sql stable as $$
    select case when coalesce(i_query ->> 'queue', i_query ->> 'namespace',
                              i_query ->> 'task') is null
                     and regina._query_scopes(i_query) is null then null
                else array(select q.name from regina._queues_selected(i_query) q
                           union
                           select i_query ->> 'queue'
                           where i_query ->> 'queue' is not null and i_query ->> 'namespace' is null
                             and i_query ->> 'task' is null
                             and regina._queue_in_scopes(i_query ->> 'queue',
                                                         regina._query_scopes(i_query))) end
$$;

-- The buckets of a feed's range: starts aligned on multiples of i_step since the epoch, from the
-- bucket holding i_from up to the last starting before i_to.
create or replace function regina._buckets(i_from timestamptz, i_to timestamptz, i_step interval)
returns table (bucket timestamptz)
language sql stable as $$
    select b from generate_series(date_bin(i_step, i_from, 'epoch'), i_to, i_step) b where b < i_to
$$;

-- The range of a feed's query: `from`, `to`, and the bucket (`bucketSeconds`).
create or replace function regina._query_range(i_query jsonb, out o_from timestamptz,
                                               out o_to timestamptz, out o_step interval)
language sql stable as $$
    select (i_query ->> 'from')::timestamptz, (i_query ->> 'to')::timestamptz,
           coalesce((i_query ->> 'bucketSeconds')::integer, 60) * interval '1 second'
$$;

-- A number rounded to i_digits decimals (0 for null); a whole number prints without decimals.
create or replace function regina._round(i_value double precision, i_digits integer default 2)
returns double precision
language sql immutable as $$
    select round(coalesce(i_value, 0)::numeric, i_digits)::double precision
$$;

-- The six counts of the selected queues (their stats), and their partition count (live).
create or replace function regina._selected_counts(i_query jsonb)
returns table (queues bigint, partitions bigint, counts json)
language sql stable as $$
    select count(*),
           coalesce(sum((select count(*) from regina.partitions p
                         where p.queue_id = q.id)), 0)::bigint,
           regina._counts_json(sum(s.total)::bigint, sum(s.pending)::bigint,
                               sum(s.processing)::bigint, sum(s.completed)::bigint,
                               sum(s.failed)::bigint, sum(s.dead_letter)::bigint)
    from regina._queues_selected(i_query) q
    left join regina.queue_stats s on s.queue_id = q.id
$$;

-- Messages pushed and acked per second over the last complete minute of the metrics history, for
-- the queues named i_names (null: every row).
create or replace function regina._throughput_last_minute(i_names text[], i_now timestamptz)
returns json
language sql stable as $$
    select json_build_object('ingestedPerSecond', regina._round(sum(m.pushed) / 60.0),
                             'processedPerSecond', regina._round(sum(m.acked) / 60.0))
    from regina.queue_metrics m
    where m.bucket = date_trunc('minute', i_now) - interval '1 minute'
      and (i_names is null or m.queue_name = any (i_names))
$$;

-- The overview's `lag` from a regina._lag_summary: ages in seconds at i_now, messages not settled.
create or replace function regina._lag_json(i_summary jsonb, i_now timestamptz) returns json
language sql stable as $$
    select json_build_object(
        'time', json_build_object(
            'avg', regina._round(greatest(0, v.now - (i_summary ->> 'headAvg')::float8)),
            'median', regina._round(greatest(0, v.now - (i_summary ->> 'headMedian')::float8)),
            'min', regina._round(greatest(0, v.now - (i_summary ->> 'headMax')::float8)),
            'max', regina._round(greatest(0, v.now - (i_summary ->> 'headMin')::float8))),
        'offset', json_build_object(
            'avg', regina._round((i_summary ->> 'offsetAvg')::float8),
            'median', regina._round((i_summary ->> 'offsetMedian')::float8),
            'min', coalesce((i_summary ->> 'offsetMin')::bigint, 0),
            'max', coalesce((i_summary ->> 'offsetMax')::bigint, 0)))
    from (select extract(epoch from i_now)::float8 as now) v
$$;

-- GET /api/v1/resources/overview: `i_query = {scopes?}`. Lag is over every (partition, group)
-- with unsettled messages when last counted; unscoped, as the last pass summed it up.
create or replace function regina.overview(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_counts record;
    v_summary jsonb;
begin
    select * into v_counts from regina._selected_counts(i_query);
    if regina._query_scopes(i_query) is null then
        select s.lag_summary into v_summary from regina.stats_state s;
    else
        v_summary := regina._lag_summary(
            array(select q.id from regina._queues_selected(i_query) q));
    end if;
    return json_build_object(
        'queues', v_counts.queues,
        'partitions', v_counts.partitions,
        'namespaces', (select count(distinct q.namespace) from regina._queues_selected(i_query) q
                       where q.namespace <> ''),
        'tasks', (select count(distinct q.task) from regina._queues_selected(i_query) q
                  where q.task <> ''),
        'messages', v_counts.counts,
        'lag', regina._lag_json(coalesce(v_summary, '{}'), v_now),
        'throughput', regina._throughput_last_minute(regina._metrics_queues(i_query), v_now),
        'timestamp', regina._ts(v_now),
        'statsAge', regina._stats_age(v_now));
end
$$;

-- The throughput buckets of GET /api/v1/status for the queues named i_names (null: every row),
-- zero-filled: messages pushed, acked and delivered, per-second rates, and the delivery lag
-- (createdAt → first delivery) of the messages delivered in the bucket.
create or replace function regina._status_throughput(i_names text[], i_from timestamptz,
                                                     i_to timestamptz, i_step interval)
returns json
language sql stable as $$
    with rows as (
        select date_bin(i_step, m.bucket, 'epoch') as bucket, sum(m.pushed) as pushed,
               sum(m.acked) as acked, sum(m.delivered) as delivered,
               sum(m.lag_ms_sum) as lag_ms_sum, sum(m.lag_samples) as lag_samples,
               max(m.lag_ms_max) as lag_ms_max
        from regina._queue_metrics_in(i_from, i_to, i_step, i_names) m
        group by 1)
    select coalesce(json_agg(json_build_object(
               'timestamp', regina._ts(b.bucket),
               'ingested', coalesce(r.pushed, 0), 'processed', coalesce(r.acked, 0),
               'popMessages', coalesce(r.delivered, 0),
               'ingestedPerSecond', regina._round(r.pushed / extract(epoch from i_step)),
               'processedPerSecond', regina._round(r.acked / extract(epoch from i_step)),
               'avgLagMs', regina._round(r.lag_ms_sum / nullif(r.lag_samples, 0)),
               'maxLagMs', regina._round(r.lag_ms_max))
               order by b.bucket), '[]')
    from regina._buckets(i_from, i_to, i_step) b
    left join rows r on r.bucket = b.bucket
$$;

-- Active leases of the selected queues: leases, partitions they hold, messages in their ranges
-- from the head, and completions inside them ahead of the head (found through the partial index
-- on live leases' expiry).
create or replace function regina._status_leases(i_query jsonb, i_now timestamptz) returns json
language sql stable as $$
    select json_build_object(
        'active', count(distinct c.lease_id), 'partitionsWithLeases', count(*),
        'totalBatchSize', coalesce(sum(greatest(0, c.lease_end_seq - c.next_seq + 1)), 0),
        'totalAcked', coalesce(sum(cardinality(c.lease_marks)), 0))
    from regina.cursors c
    where c.lease_active and c.lease_expires_at > i_now
      and c.queue_id in (select q.id from regina._queues_selected(i_query) q)
$$;

-- Dead letters of the selected queues: the live entries (stats), those of the last 24 hours and
-- their five most frequent errors.
create or replace function regina._status_dead_letters(i_query jsonb, i_now timestamptz)
returns json
language sql stable as $$
    with recent as (
        select d.error_message from regina.dead_letters d
        where d.failed_at > i_now - interval '24 hours'
          and d.queue_id in (select q.id from regina._queues_selected(i_query) q))
    select json_build_object(
        'total', (select coalesce(sum(s.dead_letter), 0) from regina.queue_stats s
                  where s.queue_id in (select q.id from regina._queues_selected(i_query) q)),
        'last24h', (select count(*) from recent),
        'topErrors', (select coalesce(json_agg(json_build_object('error', e.error, 'count', e.n)
                                               order by e.n desc, e.error), '[]')
                      from (select coalesce(r.error_message, '') as error, count(*) as n
                            from recent r group by 1 order by 2 desc, 1 limit 5) e))
$$;

-- Instances seen in the metrics history within i_seen: the latest row of each, with its
-- requests per second over the last complete minute.
create or replace function regina._status_workers(i_now timestamptz, i_seen interval) returns json
language sql stable as $$
    select coalesce(json_agg(json_build_object(
               'hostname', w.hostname, 'workerId', w.worker_id, 'version', w.version,
               'startedAt', regina._ts(w.started_at), 'lastSeen', regina._ts(w.last_seen),
               'requestsPerSecond', regina._round(coalesce(
                   (select p.requests from regina.worker_metrics p
                    where p.bucket = date_trunc('minute', i_now) - interval '1 minute'
                      and p.worker_id = w.worker_id), 0) / 60.0),
               'longPollWaiters', w.longpoll_waiters)
               order by w.worker_id), '[]')
    from (select distinct on (x.worker_id) x.* from regina.worker_metrics x
          where x.bucket >= date_trunc('minute', i_now - i_seen) and x.last_seen >= i_now - i_seen
          order by x.worker_id, x.bucket desc) w
$$;

-- GET /api/v1/status: `i_query = {from, to, bucketSeconds, queue?, namespace?, task?,
-- workerSeenSeconds, scopes?}`.
create or replace function regina.status(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_range record := regina._query_range(i_query);
    v_names text[] := regina._metrics_queues(i_query);
    v_counts record;
begin
    select * into v_counts from regina._selected_counts(i_query);
    return json_build_object(
        'timeRange', json_build_object('from', regina._ts(v_range.o_from),
                                       'to', regina._ts(v_range.o_to)),
        'bucketMinutes', extract(epoch from v_range.o_step)::integer / 60,
        'pointCount', (select count(*)
                       from regina._buckets(v_range.o_from, v_range.o_to, v_range.o_step)),
        'throughput', regina._status_throughput(v_names, v_range.o_from, v_range.o_to,
                                                v_range.o_step),
        'queues', (select coalesce(json_agg(json_build_object(
                              'name', q.name, 'namespace', q.namespace, 'task', q.task,
                              'partitions', (select count(*) from regina.partitions p
                                             where p.queue_id = q.id),
                              'messages', json_build_object(
                                  'total', coalesce(s.total, 0),
                                  'pending', coalesce(s.pending, 0),
                                  'processing', coalesce(s.processing, 0)))
                              order by q.name), '[]')
                   from regina._queues_selected(i_query) q
                   left join regina.queue_stats s on s.queue_id = q.id),
        'messages', v_counts.counts,
        'leases', regina._status_leases(i_query, v_now),
        'deadLetterQueue', regina._status_dead_letters(i_query, v_now),
        'workers', regina._status_workers(
            v_now, coalesce((i_query ->> 'workerSeenSeconds')::integer, 60) * interval '1 second'),
        'errors', (select json_build_object(
                       'dbErrors', (select coalesce(sum(w.db_errors), 0)
                                    from regina._worker_metrics_in(v_range.o_from, v_range.o_to,
                                                                   v_range.o_step) w),
                       'ackFailed', coalesce(sum(m.ack_failed), 0),
                       'dlqMessages', coalesce(sum(m.dead_lettered), 0))
                   from regina._queue_metrics_in(v_range.o_from, v_range.o_to, v_range.o_step,
                                                 v_names) m),
        'statsAge', regina._stats_age(v_now));
end
$$;

-- GET /api/v1/status/queues: `i_query = {from, to, bucketSeconds, namespace?, task?, limit,
-- offset, scopes?}`; queues by name with their counts (stats) and what they ingested and
-- processed in the range.
create or replace function regina.status_queues(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_range record := regina._query_range(i_query);
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 100);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
begin
    return (
        with matching as (select * from regina._queues_selected(i_query - 'queue')),
        page as (select * from matching m order by m.name limit v_limit offset v_offset),
        throughput as (
            select m.queue_name, sum(m.pushed) as pushed, sum(m.acked) as acked
            from regina._queue_metrics_in(v_range.o_from, v_range.o_to, v_range.o_step,
                                          array(select p.name from page p)) m
            group by m.queue_name)
        select json_build_object(
            'queues', coalesce(json_agg(json_build_object(
                          'id', p.uuid, 'name', p.name, 'namespace', p.namespace, 'task', p.task,
                          'priority', p.priority, 'createdAt', regina._ts(p.created_at),
                          'partitions', (select count(*) from regina.partitions x
                                         where x.queue_id = p.id),
                          'messages', json_build_object('total', coalesce(s.total, 0),
                                                        'pending', coalesce(s.pending, 0),
                                                        'processing', coalesce(s.processing, 0)),
                          'throughput', json_build_object('ingested', coalesce(t.pushed, 0),
                                                          'processed', coalesce(t.acked, 0)))
                          order by p.name), '[]'),
            'pagination', json_build_object('limit', v_limit, 'offset', v_offset,
                                            'total', (select count(*) from matching)))
        from page p
        left join regina.queue_stats s on s.queue_id = p.id
        left join throughput t on t.queue_name = p.name);
end
$$;

-- GET /api/v1/status/queues/:queue: `i_query = {queue, limit, offset}` (the partition page).
-- Null when the queue does not exist. Counts come from the stats (zero for a partition not
-- counted yet); consumption, activity and the oldest and newest message are read for the page.
create or replace function regina.status_queue(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 1000);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_q regina.queues;
begin
    select * into v_q from regina.queues q where q.name = i_query ->> 'queue';
    if not found then
        return null;
    end if;
    return json_build_object(
        'queue', json_build_object(
            'id', v_q.uuid, 'name', v_q.name, 'namespace', v_q.namespace, 'task', v_q.task,
            'priority', v_q.priority, 'createdAt', regina._ts(v_q.created_at),
            'config', json_build_object(
                'leaseTime', v_q.lease_time, 'retryLimit', v_q.retry_limit,
                'retryDelay', v_q.retry_delay_ms, 'ttl', v_q.ttl_seconds,
                'maxQueueSize', v_q.max_size, 'deadLetterQueue', v_q.dead_letter_queue,
                'delayedProcessing', v_q.delayed_processing_seconds,
                'windowBuffer', v_q.window_buffer_seconds,
                'encryptionEnabled', v_q.encryption_enabled)),
        'partitions', (
            select coalesce(json_agg(json_build_object(
                       'id', p.uuid, 'name', p.name,
                       'messages', json_build_object('total', coalesce(s.total, 0),
                                                     'pending', coalesce(s.pending, 0)),
                       'stats', regina._counts_json(s.total, s.pending, s.processing, s.completed,
                                                    s.failed, s.dead_letter),
                       'cursor', json_build_object('totalConsumed', k.total_consumed,
                                                   'batchesConsumed', k.batches_consumed),
                       'lastActivity', regina._ts(coalesce(greatest(p.last_push_at, k.last_at),
                                                           p.created_at)),
                       'oldestMessage', (select regina._ts_us(m.created_at) from regina.messages m
                                         where m.partition_id = p.id and m.for_group is null
                                         order by m.seq limit 1),
                       'newestMessage', (select regina._ts_us(m.created_at) from regina.messages m
                                         where m.partition_id = p.id and m.for_group is null
                                         order by m.seq desc limit 1))
                       order by p.name), '[]')
            from (select * from regina.partitions x where x.queue_id = v_q.id
                  order by x.name limit v_limit offset v_offset) p
            left join regina.partition_stats s on s.partition_id = p.id
            cross join lateral (
                select coalesce(sum(c.total_consumed), 0) as total_consumed,
                       coalesce(sum(c.batches_consumed), 0) as batches_consumed,
                       max(greatest(c.last_claim_at, c.last_consumed_at)) as last_at
                from regina.cursors c where c.partition_id = p.id) k),
        'totals', (select regina._counts_json(s.total, s.pending, s.processing, s.completed,
                                              s.failed, s.dead_letter)
                   from (select 1) one
                   left join regina.queue_stats s on s.queue_id = v_q.id));
end
$$;

-- GET /api/v1/status/queues/:queue/messages: `i_query = {queue, limit, offset}`; no row when the
-- queue does not exist. The page of its stored messages, newest first, with their status
-- (§4.16), and `total`: the queue's message count as of the last stats refresh.
--
-- The page is read in one of two ways. A queue of few partitions: the newest `offset + limit`
-- of each partition (along its offsets, as createdAt never decreases along them), merged; at most
-- 100 000 rows for the page (partitions x (offset + limit)). Otherwise the createdAt index of all
-- messages, newest first, keeping the queue's: that walks past the newer messages of every
-- other queue, which is what a small queue of a large database must not pay. Planned without
-- sequential or bitmap scans: each read is a short keyed range (a bitmap scan of the queue's
-- partitions handles every index entry of their rows' old versions).
create or replace function regina.status_queue_messages(i_query jsonb,
                                                        i_now timestamptz default null)
returns table (total bigint, body json)
language plpgsql set enable_seqscan = off set enable_bitmapscan = off set jit = off as $$
declare
    v_now timestamptz := coalesce(i_now, clock_timestamp());
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 50);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_page bigint := v_offset::bigint + v_limit;
    v_partitions bigint[];
    v_q regina.queues;
    v_cursor refcursor;
    v_row record;
    v_rows json[] := '{}';
begin
    select * into v_q from regina.queues q where q.name = i_query ->> 'queue';
    if not found then
        return;
    end if;
    -- (One partition more than the merge may take: then the index is read.)
    v_partitions := array(select p.id from regina.partitions p where p.queue_id = v_q.id
                          limit 100000 / greatest(v_page, 1) + 1);
    if cardinality(v_partitions) * v_page <= 100000 then
        open v_cursor for
        select x.m, p from regina.partitions p
        cross join lateral (select mm as m from regina.messages mm
                            where mm.partition_id = p.id and mm.for_group is null
                            order by mm.seq desc
                            limit v_page) x
        where p.id = any (v_partitions)
        order by (x.m).created_at desc, p.id desc, (x.m).seq desc
        limit v_page;
    else
        v_cursor := regina._messages_open(null, null, array[v_q.id], '-infinity', 'infinity');
    end if;
    move forward v_offset from v_cursor;
    loop
        exit when cardinality(v_rows) = v_limit;
        fetch v_cursor into v_row;
        exit when not found;
        v_rows := v_rows || json_build_object(
            'id', (v_row.m).id, 'transactionId', (v_row.m).transaction_id,
            'partitionId', (v_row.p).uuid, 'queuePath', v_q.name || '/' || (v_row.p).name,
            'queue', v_q.name, 'partition', (v_row.p).name,
            'status', regina._message_summary(v_row.m, null, v_now) -> 'status',
            'createdAt', regina._ts_us((v_row.m).created_at));
    end loop;
    close v_cursor;
    total := coalesce((select s.total from regina.queue_stats s where s.queue_id = v_q.id), 0);
    body := array_to_json(v_rows);
    return next;
end
$$;

-- GET /api/v1/status/analytics: `i_query = {from, to, interval (hour|day|week|month), queue?,
-- namespace?, task?, scopes?}`; messages pushed per interval (UTC calendar buckets), zero-filled.
-- The session's time zone is set to UTC: calendar steps (a day, a month) are UTC ones.
create or replace function regina.status_analytics(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql stable set timezone = 'UTC' as $$
declare
    v_range record := regina._query_range(i_query);
    v_unit text := coalesce(i_query ->> 'interval', 'hour');
    v_step interval := ('1 ' || v_unit)::interval;
    v_names text[] := regina._metrics_queues(i_query);
    v_first timestamptz := date_trunc(v_unit, v_range.o_from, 'UTC');
begin
    return json_build_object(
        'dataPoints', (
            -- Every interval is whole hours: the hourly sums serve.
            with rows as (
                select date_trunc(v_unit, m.bucket, 'UTC') as bucket, sum(m.pushed) as pushed
                from regina._queue_metrics_in(v_first, v_range.o_to, interval '1 hour', v_names) m
                group by 1)
            select coalesce(json_agg(json_build_object('timestamp', regina._ts(b.bucket),
                                                       'messages', coalesce(r.pushed, 0))
                                     order by b.bucket), '[]')
            from generate_series(v_first, v_range.o_to, v_step) b(bucket)
            left join rows r on r.bucket = b.bucket
            where b.bucket < v_range.o_to),
        'interval', v_unit,
        'from', regina._ts(v_range.o_from),
        'to', regina._ts(v_range.o_to));
end
$$;
