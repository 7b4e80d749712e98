-- A stats pass finds the partitions whose offsets moved as its batches go (_stats_walk over the
-- pass's window, 91_stats_refresh.sql), not by listing them in `stats_dirty` at its start. The
-- queue here has no subscribed group, so its partitions have no ready rows: a push changes
-- nothing but their offsets, and only the walk can find them. Each is recounted once, in id
-- order under the batch's bounds, however the walk and `stats_dirty` meet.

create function pg_temp.total(i_partition text) returns bigint
language sql as $$
    select s.total from regina.partition_stats s join regina.partitions p on p.id = s.partition_id
    where p.name = i_partition
$$;

create function pg_temp.push(i_partition text, i_n integer, i_tag text, i_now timestamptz)
returns void
language sql as $$
    select regina.push((select jsonb_agg(jsonb_build_object(
                            'queue', 'wq', 'partition', i_partition, 'payload', i,
                            'transactionId', i_partition || '-' || i_tag || '-' || i,
                            'messageId', gen_random_uuid()) order by i)
                        from generate_series(1, i_n) i), i_now => i_now);
    select null::void
$$;

do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v_n bigint;
begin
    -- Partitions are created in name order, so their ids are too.
    perform pg_temp.push('wa', 30, 'x', t0);
    perform pg_temp.push('wb', 30, 'x', t0);
    perform pg_temp.push('wc', 5, 'x', t0);
    v_n := pg_temp.stats_pass(t0 + interval '1 second', 10);
    assert v_n = 3, format('the first pass counts the new queue: %s', v_n);
    assert not exists (select 1 from regina.ready r join regina.partitions p
                       on p.id = r.partition_id where p.name like 'w_'),
        'no group, no ready rows';

    -- Pushed since: nothing is listed at the start; the batches find all three, sized by their
    -- counts plus the offsets pushed since (31, 31, 6), and the row bound cuts them.
    perform pg_temp.push('wa', 1, 'y', t0 + interval '2 seconds');
    perform pg_temp.push('wb', 1, 'y', t0 + interval '2 seconds');
    perform pg_temp.push('wc', 1, 'y', t0 + interval '2 seconds');
    v_n := regina.stats_refresh_begin(t0 + interval '3 seconds');
    assert v_n = 0 and not exists (select 1 from regina.stats_dirty),
        format('the start lists nothing: %s', v_n);
    v_n := regina.stats_refresh_batch(10, t0 + interval '3 seconds', 1);
    assert v_n = -1, format('wa alone: %s', v_n);
    assert pg_temp.total('wa') = 31 and pg_temp.total('wb') = 30, 'wa recounted, wb not yet';
    v_n := regina.stats_refresh_batch(10, t0 + interval '3 seconds', 31);
    assert v_n = -1, format('wb alone (31 rows before wc): %s', v_n);
    -- A push to wa, which the walk has passed, waits for the next pass.
    perform pg_temp.push('wa', 1, 'z', t0 + interval '3 seconds');
    v_n := regina.stats_refresh_batch(10, t0 + interval '3 seconds', 31);
    assert v_n = 1, format('wc, the last: %s', v_n);
    v_n := regina.stats_refresh_batch(10, t0 + interval '3 seconds', 31);
    assert v_n = 0, format('the window is done: %s', v_n);
    perform regina.stats_refresh_end(3, t0 + interval '3 seconds');
    assert pg_temp.total('wa') = 31 and pg_temp.total('wb') = 31 and pg_temp.total('wc') = 6,
        'every partition recounted once';
    assert (select s.total from regina.queue_stats s join regina.queues q on q.id = s.queue_id
            where q.name = 'wq') = 68, 'the queue sums every partition';

    v_n := pg_temp.stats_pass(t0 + interval '4 seconds', 10);
    assert v_n = 1 and pg_temp.total('wa') = 32, format('wa in the next pass: %s', v_n);

    -- A partition both listed (a delete, recorded by its trigger) and found by the walk (a push)
    -- is recounted once; the walk goes on past it.
    perform regina.message_delete(
        (select p.uuid::text from regina.partitions p where p.name = 'wb'), 'wb-x-1',
        t0 + interval '5 seconds');
    perform pg_temp.push('wb', 2, 'w', t0 + interval '5 seconds');
    perform pg_temp.push('wc', 1, 'w', t0 + interval '5 seconds');
    v_n := pg_temp.stats_pass(t0 + interval '6 seconds', 10);
    assert v_n = 2, format('wb once, and wc: %s', v_n);
    assert pg_temp.total('wb') = 32 and pg_temp.total('wc') = 7,
        format('wb %s, wc %s', pg_temp.total('wb'), pg_temp.total('wc'));
    assert not exists (select 1 from regina.stats_dirty), 'nothing left listed';

    -- In batches of one: each partition found is taken alone, the walk resuming after it.
    perform pg_temp.push('wa', 1, 'v', t0 + interval '7 seconds');
    perform pg_temp.push('wc', 1, 'v', t0 + interval '7 seconds');
    v_n := pg_temp.stats_pass(t0 + interval '8 seconds', 1);
    assert v_n = 2 and pg_temp.total('wa') = 33 and pg_temp.total('wc') = 8,
        format('two batches of one: %s', v_n);
    v_n := pg_temp.stats_pass(t0 + interval '9 seconds', 1);
    assert v_n = 0, format('nothing changed, nothing recounted: %s', v_n);

    -- A pass that stops before its walk is done (windows of two partitions here): the next one
    -- starts where it stopped, not after its window.
    perform pg_temp.push('wa', 1, 'u', t0 + interval '10 seconds');
    perform pg_temp.push('wb', 1, 'u', t0 + interval '10 seconds');
    perform pg_temp.push('wc', 1, 'u', t0 + interval '10 seconds');
    perform regina.stats_refresh_begin(t0 + interval '11 seconds', 2);
    v_n := regina.stats_refresh_batch(1, t0 + interval '11 seconds');
    assert v_n = 1 and pg_temp.total('wa') = 34 and pg_temp.total('wb') = 32,
        format('wa only, then the pass stops: %s', v_n);
    perform regina.stats_refresh_begin(t0 + interval '12 seconds', 2);
    loop
        v_n := regina.stats_refresh_batch(1, t0 + interval '12 seconds');
        exit when v_n < 1;
    end loop;
    perform regina.stats_refresh_end(2, t0 + interval '12 seconds');
    assert pg_temp.total('wb') = 33 and pg_temp.total('wc') = 9,
        format('wb and wc, the rest of the stopped window: %s, %s',
               pg_temp.total('wb'), pg_temp.total('wc'));
end
$$;
