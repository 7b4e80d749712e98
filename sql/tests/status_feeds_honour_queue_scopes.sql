-- The dashboard feeds take the token's queue scopes in their query (`scopes`, http-api.md §1.6): a
-- scoped feed counts only the queues it allows, and never the `_other` rows of the metrics
-- history (they may hold any queue).

do $$
declare
    t0 timestamptz := '2026-01-01T10:00:00Z';
    v_range jsonb := jsonb_build_object('from', t0, 'to', t0 + interval '1 hour', 'bucketSeconds', 60);
    v_a jsonb := v_range || '{"scopes": ["a.*"]}';
    v json;
begin
    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', q, 'partition', 'Default', 'payload', 1,
                             'transactionId', q, 'messageId', gen_random_uuid()))
                         from unnest(array['a.1', 'a.2', 'b.1']) q), i_now => t0);
    perform pg_temp.stats_pass(t0, 100);
    insert into regina.queue_metrics (bucket, queue_name, worker_id, pushed)
    values (t0, 'a.1', 'w', 1), (t0, 'b.1', 'w', 10), (t0, '_other', 'w', 100);
    perform regina.metrics_rollup('-infinity', 'infinity');   -- what the refresh keeps

    v := regina.overview('{"scopes": ["a.*"]}', t0);
    assert (v ->> 'queues')::int = 2 and (v -> 'messages' ->> 'total')::int = 2,
        format('overview %s', v);
    assert (regina.overview('{}', t0) -> 'messages' ->> 'total')::int = 3, 'unscoped overview';

    v := regina.status(v_a, t0 + interval '1 hour');
    assert json_array_length(v -> 'queues') = 2 and (v -> 'throughput' -> 0 ->> 'ingested')::int = 1,
        format('scoped status %s', v -> 'throughput' -> 0);
    v := regina.status(v_range, t0 + interval '1 hour');
    assert (v -> 'throughput' -> 0 ->> 'ingested')::int = 111, 'unscoped: every row, _other too';
    v := regina.status(v_range || '{"queue": "b.1", "scopes": ["a.*"]}', t0 + interval '1 hour');
    assert (v -> 'messages' ->> 'total')::int = 0 and (v -> 'throughput' -> 0 ->> 'ingested')::int = 0,
        'a queue outside the scopes is not shown';

    v := regina.status_queues(v_a || '{"limit": 10, "offset": 0}');
    assert (v -> 'pagination' ->> 'total')::int = 2, format('status queues %s', v -> 'pagination');

    v := regina.analytics('queue-ops', v_range || '{"scopes": ["b.1"]}');
    assert (select array_agg(distinct s -> 'labels' ->> 'queue') from json_array_elements(v -> 'series') s)
           = array['b.1'], format('queue-ops %s', v);

    v := regina.status_analytics(v_a || '{"interval": "hour"}');
    assert (v -> 'dataPoints' -> 0 ->> 'messages')::int = 1, format('analytics %s', v);
end
$$;
