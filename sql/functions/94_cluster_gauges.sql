-- Cluster gauges of the Prometheus output (http-api.md §3.1): read from the stats tables only, so a
-- scrape costs a few small scans whatever the size of the queues.

-- Rows `(metric, queue, consumer_group, value)` for `queue_depth{queue}` (messages some known
-- group has not settled), `dlq_depth{queue}`, `consumer_lag_messages{queue,group}` and
-- `consumer_lag_seconds{queue,group}` (age of the oldest unsettled head, 0 when none), as of the
-- last stats refresh. The first i_queue_labels_max queues by name keep their name; the others
-- are summed under `_other` (lag seconds: their largest).
create or replace function regina.metrics_cluster_gauges(i_queue_labels_max integer,
                                                         i_now timestamptz default null)
returns table (metric text, queue text, consumer_group text, value double precision)
language sql stable as $$
    with labelled as (
        select s.*, case when row_number() over (order by q.name) <= i_queue_labels_max
                         then q.name else '_other' end as label
        from regina.queue_stats s join regina.queues q on q.id = s.queue_id
        where s.refreshed_at is not null)
    select 'queue_depth', l.label, null::text, sum(l.total - l.completed)::double precision
    from labelled l group by l.label
    union all
    select 'dlq_depth', l.label, null, sum(l.dead_letter)::double precision
    from labelled l group by l.label
    union all
    select 'consumer_lag_messages', l.label, g.consumer_group, sum(g.offset_lag)::double precision
    from labelled l join regina.group_stats g on g.queue_id = l.queue_id
    group by l.label, g.consumer_group
    union all
    select 'consumer_lag_seconds', l.label, g.consumer_group,
           coalesce(max(greatest(0, extract(epoch from coalesce(i_now, clock_timestamp())
                                                       - g.oldest_head_at))), 0)
    from labelled l join regina.group_stats g on g.queue_id = l.queue_id
    group by l.label, g.consumer_group
$$;
