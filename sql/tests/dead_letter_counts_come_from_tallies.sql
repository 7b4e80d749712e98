-- The dead letters of a partition (85_admin_status.sql, _partition_counts) are counted from their
-- tallies (migrations/0019_dead_letter_tallies.sql), which the triggers of regina.dead_letters
-- keep: through moves by hand, an entry replaced by a later failure, a requeue, a message delete,
-- a clear and a queue delete, they stay equal to counting the entries one by one, and a recount
-- folds a partition's tallies into one row.

-- The dead letters of partition i_partition of queue `dq` as _partition_counts gives them and as
-- counting the entries gives them, with the number of tally rows the partition has.
create function pg_temp.dlq_check(i_partition text, i_now timestamptz,
                                  out o_counted bigint, out o_direct bigint, out o_rows bigint)
language plpgsql as $$
declare
    v_id bigint := pg_temp.partition_id('dq', i_partition);
begin
    o_counted := (select c.dead_letter from regina._partition_counts(array[v_id], i_now) c);
    o_direct := (select count(*) from regina.dead_letters d where d.partition_id = v_id);
    o_rows := (select count(*) from regina.dead_letter_tallies t where t.partition_id = v_id);
end
$$;

create function pg_temp.uuid(i_partition text) returns text
language sql as $$
    select p.uuid::text from regina.partitions p where p.id = pg_temp.partition_id('dq', i_partition)
$$;

do $$
declare
    t0 timestamptz := '2026-03-01T00:00:00Z';
    v_b bigint;
    v record;
begin
    perform pg_temp.push_numbered('dq', 'a', 'a', 0, 9, t0);
    perform pg_temp.push_numbered('dq', 'b', 'b', 0, 2, t0);
    v_b := pg_temp.partition_id('dq', 'b');

    -- Four entries of a (a0 for two groups), one of b, each written by a statement of its own.
    perform regina.message_dead_letter(pg_temp.uuid('a'), 'a' || i, 'g', 'by hand', t0)
    from generate_series(0, 2) i;
    perform regina.message_dead_letter(pg_temp.uuid('a'), 'a0', 'g2', 'by hand', t0);
    perform regina.message_dead_letter(pg_temp.uuid('b'), 'b0', 'g', 'by hand', t0);
    v := pg_temp.dlq_check('a', t0);
    assert v.o_counted = 4 and v.o_direct = 4 and v.o_rows = 4, format('a after four: %s', v);
    v := pg_temp.dlq_check('b', t0);
    assert v.o_counted = 1 and v.o_direct = 1 and v.o_rows = 1, format('b after one: %s', v);

    -- A later failure of a dead-lettered message replaces its entry (the upsert of _dead_letter):
    -- nothing more to count.
    assert regina._dead_letter(
               (select c from regina.cursors c
                where c.partition_id = pg_temp.partition_id('dq', 'a') and c.consumer_group = 'g'),
               (select q from regina.queues q where q.name = 'dq'), 0, 3, 'again', t0),
           'the entry of a0 replaced';
    assert (select d.error_message from regina.dead_letters d
            where d.transaction_id = 'a0' and d.consumer_group = 'g') = 'again', 'replaced';
    v := pg_temp.dlq_check('a', t0);
    assert v.o_counted = 4 and v.o_direct = 4, format('a after a replaced entry: %s', v);

    -- A requeue takes one entry back, a message delete the entries of its message.
    perform regina.message_requeue(pg_temp.uuid('a'), 'a1', 'g', t0);
    v := pg_temp.dlq_check('a', t0);
    assert v.o_counted = 3 and v.o_direct = 3, format('a after a requeue: %s', v);
    perform regina.message_delete(pg_temp.uuid('a'), 'a0', t0);
    v := pg_temp.dlq_check('a', t0);
    assert v.o_counted = 1 and v.o_direct = 1 and v.o_rows > 1,
           format('a after a message delete: %s', v);

    -- A recount folds each partition's tallies into one row and counts the same.
    perform pg_temp.stats_pass(t0 + interval '1 second', 1000);
    v := pg_temp.dlq_check('a', t0);
    assert v.o_counted = 1 and v.o_direct = 1 and v.o_rows = 1, format('a folded: %s', v);
    assert (select s.dead_letter from regina.partition_stats s join regina.partitions p
            on p.id = s.partition_id where p.name = 'a') = 1, 'the stats row of a';

    -- A clear deletes every entry of the queue; the next recount leaves no tally behind.
    perform regina.queue_clear('dq');
    v := pg_temp.dlq_check('a', t0);
    assert v.o_counted = 0 and v.o_direct = 0, format('a cleared: %s', v);
    v := pg_temp.dlq_check('b', t0);
    assert v.o_counted = 0 and v.o_direct = 0, format('b cleared: %s', v);
    perform pg_temp.stats_pass(t0 + interval '2 seconds', 1000);
    assert not exists (select 1 from regina.dead_letter_tallies t
                       where t.partition_id in (select p.id from regina.partitions p)),
           'no tallies once every count is 0';

    -- A deleted queue takes its partitions' tallies with it.
    perform pg_temp.push_numbered('dq', 'b', 'c', 0, 0, t0 + interval '3 seconds');
    perform regina.message_dead_letter(pg_temp.uuid('b'), 'c0', 'g', 'by hand', t0);
    v := pg_temp.dlq_check('b', t0);
    assert v.o_counted = 1 and v.o_direct = 1, format('b again: %s', v);
    perform regina.queue_delete('dq');
    assert not exists (select 1 from regina.dead_letter_tallies t where t.partition_id = v_b),
           'the tallies of a deleted partition';
end $$;
