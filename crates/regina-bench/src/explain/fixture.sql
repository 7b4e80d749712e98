-- The EXPLAIN fixture: queues, partitions, messages, consumer groups at every stage, leases,
-- failed heads, dead letters and 31 days of metrics history, built with set-based inserts.
-- Parameters come from settings: fixture.queues, fixture.partitions, fixture.messages (about;
-- one partition in ten is empty), fixture.dead_letters. Queue `fx.big` holds half the
-- partitions; the others share the rest. Each `-- step:` runs as one statement batch.

-- step: queues
insert into regina.queues (name, namespace, task, retry_limit, created_at)
select case when i = 0 then 'fx.big' else format('f%s.q%s', i % 2, lpad(i::text, 2, '0')) end,
       case when i = 0 then 'fx' else 'f' || (i % 2) end,
       case when i = 0 then 'big' else 'q' || lpad(i::text, 2, '0') end,
       3, now() - interval '30 days'
from generate_series(0, current_setting('fixture.queues')::int - 1) i;

-- step: partitions
insert into regina.partitions (queue_id, name, created_at)
select q.id, 'p' || lpad(k::text, 6, '0'), now() - interval '30 days'
from (select x.id, row_number() over (order by x.id) - 1 as qi, count(*) over () as nq
      from regina.queues x) q
cross join lateral generate_series(
    1, case when q.qi = 0 then current_setting('fixture.partitions')::int / 2
            else (current_setting('fixture.partitions')::int
                  - current_setting('fixture.partitions')::int / 2) / (q.nq - 1)::int end) k;

-- step: messages
-- n(p): 0 for one partition in ten, else 1 … 2·avg − 1 (average avg), createdAt spread over the
-- last 7 days, never decreasing along the offsets.
create temporary table fixture_sizes as
select p.id, case when p.id % 10 = 0 then 0
                  else 1 + (p.id * 7919) % (2 * greatest(1, round(current_setting('fixture.messages')::numeric
                                                                  / (0.9 * current_setting('fixture.partitions')::int))::int) - 1)
             end as n
from regina.partitions p;
insert into regina.messages (partition_id, seq, id, transaction_id, created_at, payload)
select s.id, k, gen_random_uuid(), 'tx-' || s.id || '-' || k,
       now() - interval '7 days' * (1 - (k + 1)::float8 / s.n) - (s.id % 600) * interval '1 second',
       ('{"order":' || k || ',"customer":"c' || s.id || '","note":"fixture payload"}')::json
from fixture_sizes s
cross join lateral generate_series(0, s.n - 1) k
where s.n > 0;
update regina.partitions p
set next_seq = s.n,
    last_created_at = now() - (s.id % 600) * interval '1 second',
    last_push_at = now() - (s.id % 600) * interval '1 second'
from fixture_sizes s
where s.id = p.id and s.n > 0;

-- step: groups
-- Queue mode and `analytics` on every queue (from the beginning), `audit` on fx.big from a day
-- ago. Queue mode: one partition in five without a cursor, one at its start (one in fifty of
-- them leased), one halfway (one in twenty of them with a failed attempt), two caught up.
-- analytics: a cursor on every other partition, caught up or two behind.
insert into regina.subscriptions (queue_id, consumer_group, mode, start_at, created_at)
select q.id, g, 'all', null, now() - interval '30 days'
from regina.queues q cross join unnest(array['__QUEUE_MODE__', 'analytics']) g;
insert into regina.subscriptions (queue_id, consumer_group, mode, start_at, created_at)
select q.id, 'audit', 'new', now() - interval '1 day', now() - interval '1 day'
from regina.queues q where q.name = 'fx.big';
insert into regina.cursors (partition_id, consumer_group, queue_id, next_seq, head_attempts,
                            head_error, lease_id, lease_active, lease_expires_at, lease_end_seq,
                            last_claim_at, total_consumed, batches_consumed, last_consumed_at)
select p.id, '__QUEUE_MODE__', p.queue_id, h.head,
       case when p.id % 5 = 2 and p.id % 100 = 7 then 1 else 0 end,
       case when p.id % 5 = 2 and p.id % 100 = 7 then 'Lease expired' end,
       case when l.leased then gen_random_uuid() end, l.leased,
       case when l.leased then now() + interval '5 minutes' end,
       case when l.leased then least(p.next_seq - 1, 9) end,
       now() - interval '1 hour', h.head, h.head / 10 + 1, now() - interval '1 hour'
from regina.partitions p
cross join lateral (select case p.id % 5 when 1 then 0 when 2 then p.next_seq / 2
                                         else p.next_seq end as head) h
cross join lateral (select p.id % 5 = 1 and p.id % 50 = 1 and p.next_seq > 0 as leased) l
where p.id % 5 <> 0;
insert into regina.cursors (partition_id, consumer_group, queue_id, next_seq, last_claim_at,
                            total_consumed, batches_consumed, last_consumed_at)
select p.id, 'analytics', p.queue_id, greatest(0, p.next_seq - (p.id % 4)), now() - interval '2 hours',
       p.next_seq, 1, now() - interval '2 hours'
from regina.partitions p
where p.id % 2 = 0;
-- The ready set: every (partition, subscribed group) with unsettled messages (0002_ready.sql).
insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
select p.id, s.consumer_group, p.queue_id,
       case when c.lease_active then c.lease_expires_at else p.created_at end
from regina.subscriptions s
join regina.partitions p on p.queue_id = s.queue_id
left join regina.cursors c on c.partition_id = p.id and c.consumer_group = s.consumer_group
where c.lease_active
   or (c.partition_id is not null and p.next_seq > c.next_seq)
   or (c.partition_id is null and p.next_seq > 0
       and (s.start_at is null or p.last_created_at >= s.start_at));

-- step: dead_letters
-- Copies of messages queue mode passed, failed over the last three days with a few errors.
insert into regina.dead_letters (queue_id, partition_id, consumer_group, message_id, seq,
                                 transaction_id, payload, created_at, error_message, retry_count,
                                 failed_at)
select p.queue_id, m.partition_id, '__QUEUE_MODE__', m.id, m.seq, m.transaction_id, m.payload,
       m.created_at, (array['Retries exhausted', 'Lease expired', 'card declined',
                            'timeout calling upstream', 'invalid payload'])[1 + m.seq % 5],
       3, now() - (m.partition_id % 4320) * interval '1 minute'
from regina.messages m
join regina.partitions p on p.id = m.partition_id
where p.id % 5 in (2, 3) and m.seq < 2
limit current_setting('fixture.dead_letters')::int;

-- step: metrics_history
-- 31 days of minutes: three instances, every queue on each, and the refresh's lag history.
insert into regina.worker_metrics (bucket, worker_id, hostname, version, started_at, last_seen,
                                   requests, push_messages, pop_messages, ack_messages, db_calls,
                                   batch_requests, db_errors, cpu_seconds, rss_bytes, db_pool_busy,
                                   db_pool_waiting, http_inflight, longpoll_waiters)
select b, 'w' || w, 'host-' || w, '0.1.0', now() - interval '32 days', b + interval '50 seconds',
       1000 + w, 600, 500, 500, 200, 900, 0, 5.5, 30000000, 3, 0, 12, 40
from generate_series(date_trunc('minute', now()) - interval '31 days', date_trunc('minute', now()),
                     interval '1 minute') b
cross join generate_series(1, 3) w;
insert into regina.queue_metrics (bucket, queue_name, worker_id, pushed, delivered, acked,
                                  ack_failed, dead_lettered, transactions, lag_ms_sum, lag_samples,
                                  lag_ms_max, waiters)
select b, q.name, 'w' || w, 60, 55, 50, 1, 0, 2, 5000, 55, 400, 4
from generate_series(date_trunc('minute', now()) - interval '31 days', date_trunc('minute', now()),
                     interval '1 minute') b
cross join regina.queues q
cross join generate_series(1, 3) w;
insert into regina.queue_lag_history (bucket, queue_name, depth, lag_ms_sum, lag_samples, lag_ms_max)
select b, q.name, 10000, 60000, 6, 20000
from generate_series(date_trunc('minute', now()) - interval '31 days', date_trunc('minute', now()),
                     interval '1 minute') b
cross join regina.queues q;

-- step: rollup
-- The hourly sums the stats refresh keeps, for the whole history at once.
select regina.metrics_rollup('-infinity', 'infinity');

-- step: analyze
analyze;
