-- A recount rewrites a partition's counts where they are (a HOT update: no new index entries),
-- even when the table's pages were filled by the first pass: the stats refresh rewrites every
-- partition it recounts, and with full pages the new versions and their index entries took a
-- quarter of a recount batch's insert (docs/benchmarks.md, 2026-12-02).

create function pg_temp.push_each(i_round integer, i_now timestamptz) returns void
language sql as $$
    select regina.push((select jsonb_agg(jsonb_build_object(
                            'queue', 'hot', 'partition', 'p' || i, 'payload', i,
                            'transactionId', i_round || '-' || i,
                            'messageId', gen_random_uuid()))
                        from generate_series(1, 400) i), i_now => i_now)
$$;

do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v_updated bigint;
    v_hot bigint;
    v_n bigint;
begin
    perform pg_temp.push_each(1, t0);
    v_n := pg_temp.stats_pass(t0 + interval '1 second', 100);
    assert v_n >= 400, format('the first pass counts every partition: %s', v_n);
    -- More rows than one page holds, so a table packed full would have no room left in place.
    assert pg_relation_size('regina.partition_stats') > current_setting('block_size')::bigint,
        'the counts fill more than one page';

    v_updated := pg_stat_get_xact_tuples_updated('regina.partition_stats'::regclass);
    v_hot := pg_stat_get_xact_tuples_hot_updated('regina.partition_stats'::regclass);
    perform pg_temp.push_each(2, t0 + interval '2 seconds');
    v_n := pg_temp.stats_pass(t0 + interval '3 seconds', 100);
    assert v_n = 400, format('a push to each partition: every one recounted: %s', v_n);
    v_updated := pg_stat_get_xact_tuples_updated('regina.partition_stats'::regclass) - v_updated;
    v_hot := pg_stat_get_xact_tuples_hot_updated('regina.partition_stats'::regclass) - v_hot;
    assert v_updated = 400, format('each recount rewrites its row once: %s', v_updated);
    assert v_hot = v_updated, format('%s of %s rewrites were in place', v_hot, v_updated);
    assert (select s.total from regina.partition_stats s join regina.partitions p
            on p.id = s.partition_id where p.name = 'p7') = 2, 'the new counts';
end
$$;
