-- The counts of a partition (85_admin_status.sql, _partition_counts) come from its offsets: its
-- next offset, its lowest stored one and the holes that deletes left above that
-- (migrations/0018_partition_holes.sql), kept by the delete trigger of regina.messages. Through
-- deletes in the middle, below and above the lowest head, at the top, of a prefix and of
-- everything, they stay equal to counting the stored messages one by one. A group's lag
-- (70_consumer_groups.sql, _group_lag) leaves out the holes beyond its head as well.

-- `total` and `completed` of partition i_partition of queue `hq` (one group: completed is what
-- lies below its head), as _partition_counts gives them and as counting the rows gives them, and
-- the partition's holes.
create function pg_temp.holes_check(i_partition text, i_now timestamptz,
                                    out o_counted bigint[], out o_direct bigint[],
                                    out o_holes bigint[])
language plpgsql as $$
declare
    v_id bigint := pg_temp.partition_id('hq', i_partition);
    v_head bigint := (select c.next_seq from regina.cursors c where c.partition_id = v_id);
begin
    o_counted := (select array[c.total, c.completed]
                  from regina._partition_counts(array[v_id], i_now) c);
    o_direct := (select array[count(*), count(*) filter (where m.seq < v_head)]
                 from regina.messages m where m.partition_id = v_id);
    o_holes := array(select h.seq from regina.partition_holes h where h.partition_id = v_id
                     order by h.seq);
end
$$;

do $$
declare
    t0 timestamptz := '2026-03-01T00:00:00Z';
    v_a bigint;
    v record;
begin
    perform pg_temp.push_numbered('hq', 'a', 'a', 0, 29, t0);
    perform pg_temp.push_numbered('hq', 'b', 'b', 0, 4, t0);
    v_a := (select p.id from regina.partitions p where p.name = 'a');
    -- Queue mode takes the first ten messages of a (head at 10).
    perform regina.pop('[{"queue":"hq","partition":"a","batch":10,"autoAck":true}]', t0);

    v := pg_temp.holes_check('a', t0);
    assert v.o_counted = array[30, 10]::bigint[] and v.o_direct = v.o_counted
           and v.o_holes = '{}', format('as pushed: %s', v);

    delete from regina.messages m where m.partition_id = v_a and m.seq = 15;
    v := pg_temp.holes_check('a', t0);
    assert v.o_counted = array[29, 10]::bigint[] and v.o_direct = v.o_counted
           and v.o_holes = '{15}', format('a hole above the head: %s', v);

    delete from regina.messages m where m.partition_id = v_a and m.seq = 5;
    v := pg_temp.holes_check('a', t0);
    assert v.o_counted = array[28, 9]::bigint[] and v.o_direct = v.o_counted
           and v.o_holes = '{5,15}', format('a hole below the head: %s', v);

    delete from regina.messages m where m.partition_id = v_a and m.seq = 29;
    v := pg_temp.holes_check('a', t0);
    assert v.o_counted = array[27, 9]::bigint[] and v.o_direct = v.o_counted
           and v.o_holes = '{5,15,29}', format('the newest message: %s', v);

    -- A prefix up to 6 (what retention deletes): hole 5 lies below what is stored and goes.
    delete from regina.messages m where m.partition_id = v_a and m.seq <= 6;
    v := pg_temp.holes_check('a', t0);
    assert v.o_counted = array[21, 3]::bigint[] and v.o_direct = v.o_counted
           and v.o_holes = '{15,29}', format('a prefix: %s', v);

    -- Two holes and the lowest stored offset in one statement.
    delete from regina.messages m where m.partition_id = v_a and m.seq in (7, 12, 20);
    v := pg_temp.holes_check('a', t0);
    assert v.o_counted = array[18, 2]::bigint[] and v.o_direct = v.o_counted
           and v.o_holes = '{12,15,20,29}', format('several in one statement: %s', v);

    -- Everything: nothing stored, no hole kept.
    delete from regina.messages m where m.partition_id = v_a;
    v := pg_temp.holes_check('a', t0);
    assert v.o_counted = array[0, 0]::bigint[] and v.o_direct = v.o_counted
           and v.o_holes = '{}', format('emptied: %s', v);

    -- New messages after that lie above the group's head (still 10): none is settled.
    perform pg_temp.push_numbered('hq', 'a', 'c', 0, 2, t0 + interval '1 second');
    v := pg_temp.holes_check('a', t0);
    assert v.o_counted = array[3, 0]::bigint[] and v.o_direct = v.o_counted
           and v.o_holes = '{}', format('pushed after emptying: %s', v);

    -- The other partition never had a delete.
    v := pg_temp.holes_check('b', t0);
    assert v.o_counted = array[5, 0]::bigint[] and v.o_direct = v.o_counted
           and v.o_holes = '{}', format('untouched: %s', v);

    -- Deleting a partition drops its holes.
    delete from regina.messages m
    where m.partition_id = (select p.id from regina.partitions p where p.name = 'b') and m.seq = 2;
    assert (select count(*) from regina.partition_holes h join regina.partitions p
            on p.id = h.partition_id where p.name = 'b') = 1, 'a hole in b';
    delete from regina.partitions p where p.name = 'b';
    assert not exists (select 1 from regina.partition_holes h
                       where h.partition_id not in (select p.id from regina.partitions p)),
        'the holes of a deleted partition go with it';
end
$$;

-- Lag of group g on partition i_partition of queue `hq`: as the consumer-group detail gives it,
-- and as counting the stored messages g has not settled gives it.
create function pg_temp.lag_of_g(i_partition text, i_now timestamptz) returns bigint[]
language sql as $$
    select array[
        (select (e ->> 'offsetLag')::bigint
         from json_array_elements(regina.consumer_group_detail('g', '{"queue":"hq"}', i_now)
                                  -> 'hq' -> 'partitions') e
         where e ->> 'partition' = i_partition),
        (select count(*) from regina.messages m
         join regina.partitions p on p.id = m.partition_id
         join regina.cursors c on c.partition_id = p.id and c.consumer_group = 'g'
         where p.name = i_partition and m.seq >= c.next_seq
           and m.seq <> all (c.marks || c.lease_marks))]
$$;

-- Lag of group g on partition `l` (http-api.md §4.16: the messages of the partition g has not
-- settled): deleted offsets beyond the head are not messages, whether g had settled them or not.
do $$
declare
    t0 timestamptz := '2026-03-01T00:00:00Z';
    v_l bigint;
    v_lease text;
begin
    perform pg_temp.push_numbered('hq', 'l', 'l', 0, 9, t0);
    v_l := pg_temp.partition_id('hq', 'l');
    v_lease := (select r.result ->> 'leaseId'
                from regina.pop('[{"queue":"hq","partition":"l","consumerGroup":"g","batch":3,
                                  "subscriptionMode":"all"}]', t0) r);
    -- l2 settled inside the lease: a mark beyond the head (0).
    perform regina.ack(jsonb_build_array(jsonb_build_object(
        'transactionId', 'l2',
        'partitionId', (select p.uuid from regina.partitions p where p.id = v_l),
        'leaseId', v_lease, 'consumerGroup', 'g')), t0);
    assert pg_temp.lag_of_g('l', t0) = array[9, 9]::bigint[],
           format('a mark: %s', pg_temp.lag_of_g('l', t0));
    -- l2 (marked) and l5 (not) deleted: holes 2 and 5; eight messages left, none settled.
    delete from regina.messages m where m.partition_id = v_l and m.seq in (2, 5);
    assert pg_temp.lag_of_g('l', t0) = array[8, 8]::bigint[],
           format('a marked hole and a hole: %s', pg_temp.lag_of_g('l', t0));
    -- The newest one deleted as well.
    delete from regina.messages m where m.partition_id = v_l and m.seq = 9;
    assert pg_temp.lag_of_g('l', t0) = array[7, 7]::bigint[],
           format('the newest: %s', pg_temp.lag_of_g('l', t0));
end
$$;
