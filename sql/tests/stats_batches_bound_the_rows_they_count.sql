-- A stats batch counts every message row of each partition it recounts, so besides its number of
-- partitions it is bounded by rows (i_rows, STATS_BATCH_ROWS): partitions are taken in id order
-- while the rows of those before stay under the bound, at least one, each sized as its last
-- count plus the offsets pushed since. A batch cut there with partitions left waiting answers
-- minus how many it took, so the pass goes on; the counts come out the same.

create function pg_temp.total(i_partition text) returns bigint
language sql as $$
    select s.total from regina.partition_stats s join regina.partitions p on p.id = s.partition_id
    where p.name = i_partition
$$;

create function pg_temp.waiting() returns text[]
language sql as $$
    select coalesce(array_agg(p.name order by p.id), '{}')
    from regina.stats_dirty d join regina.partitions p on p.id = d.partition_id
$$;

do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v_n integer;
begin
    -- Partitions are created in name order, so their ids are too.
    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', 'rq', 'partition', x.p, 'payload', i,
                             'transactionId', x.p || '-' || i, 'messageId', gen_random_uuid())
                             order by x.p, i)
                         from (values ('pa', 30), ('pb', 30), ('pc', 5)) x(p, n),
                              generate_series(1, x.n) i), i_now => t0);

    -- Never counted: each is sized by its offsets (30, 30, 5).
    perform regina.stats_refresh_begin(t0 + interval '1 second');
    assert pg_temp.waiting() = '{pa,pb,pc}', format('waiting %s', pg_temp.waiting());
    v_n := regina.stats_refresh_batch(10, t0 + interval '1 second', 40);
    assert v_n = -2, format('30 rows before pb are under 40, 60 before pc are not: %s', v_n);
    assert pg_temp.waiting() = '{pc}', format('pc still waits: %s', pg_temp.waiting());
    assert pg_temp.total('pa') = 30 and pg_temp.total('pb') = 30, 'pa and pb counted';
    v_n := regina.stats_refresh_batch(10, t0 + interval '1 second', 40);
    assert v_n = 1, format('the last one, nothing left waiting: %s', v_n);
    assert pg_temp.total('pc') = 5, 'pc counted';
    perform regina.stats_refresh_end(3, t0 + interval '1 second');
    assert (select s.total from regina.queue_stats s join regina.queues q on q.id = s.queue_id
            where q.name = 'rq') = 65, 'the queue sums every partition';

    -- Counted since: each is sized by its count plus what was pushed after it (31, 31, 6). A
    -- partition larger than the bound is taken alone.
    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', 'rq', 'partition', x.p, 'payload', 0,
                             'transactionId', x.p || '-more', 'messageId', gen_random_uuid())
                             order by x.p)
                         from unnest(array['pa', 'pb', 'pc']) x(p)), i_now => t0 + interval '2 seconds');
    perform regina.stats_refresh_begin(t0 + interval '3 seconds');
    v_n := regina.stats_refresh_batch(10, t0 + interval '3 seconds', 1);
    assert v_n = -1, format('pa alone: %s', v_n);
    v_n := regina.stats_refresh_batch(10, t0 + interval '3 seconds', 31);
    assert v_n = -1, format('pb alone (31 rows before pc): %s', v_n);
    v_n := regina.stats_refresh_batch(10, t0 + interval '3 seconds', 31);
    assert v_n = 1, format('pc: %s', v_n);
    assert pg_temp.total('pa') = 31 and pg_temp.total('pb') = 31 and pg_temp.total('pc') = 6,
        'every partition recounted';

    -- Without a bound, or with one they fit under, a batch takes all it may.
    perform regina.push(jsonb_build_array(jsonb_build_object(
                            'queue', 'rq', 'partition', 'pa', 'payload', 0,
                            'transactionId', 'pa-last', 'messageId', gen_random_uuid())),
                        i_now => t0 + interval '4 seconds');
    perform regina.push(jsonb_build_array(jsonb_build_object(
                            'queue', 'rq', 'partition', 'pc', 'payload', 0,
                            'transactionId', 'pc-last', 'messageId', gen_random_uuid())),
                        i_now => t0 + interval '4 seconds');
    perform regina.stats_refresh_begin(t0 + interval '5 seconds');
    v_n := regina.stats_refresh_batch(10, t0 + interval '5 seconds', 1000);
    assert v_n = 2, format('both fit: %s', v_n);
    assert pg_temp.total('pa') = 32 and pg_temp.total('pc') = 7, 'recounted';
    perform regina.stats_refresh_end(2, t0 + interval '5 seconds');
end
$$;
