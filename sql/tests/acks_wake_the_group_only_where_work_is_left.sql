-- An ack names the group whose long-polls should ask again (wake_queue, wake_group) only when the
-- lease it ended leaves work for the group on that partition: more messages, a message pushed
-- during the lease, a retry, an expired lease's redelivery. A lease ended at the partition's end
-- makes nothing due, and the ack names no one, on each of the three paths an ack call takes (one
-- item, several one-message leases on different partitions, the general loop).

set track_functions = 'pl';

-- The wake_group of each item of an ack call at i_now, in item order ('-' for none), after
-- checking that every item succeeded and that wake_queue goes with wake_group.
create function pg_temp.wakes(i_acks jsonb, i_now timestamptz) returns text
language plpgsql as $$
declare
    v text;
    v_wrong text;
begin
    select string_agg(coalesce(a.wake_group, '-'), ' ' order by a.idx),
           string_agg(a.result::text, ' ' order by a.idx)
             filter (where (a.result ->> 'success')::boolean is not true
                           or (a.wake_queue is null) <> (a.wake_group is null)
                           or a.wake_queue <> 'wk')
    into v, v_wrong
    from regina.ack(i_acks, i_now) a;
    assert v_wrong is null, format('every item succeeds, its wake names queue and group: %s',
                                   v_wrong);
    return v;
end
$$;

-- The lease of group g on partition i_partition of queue wk: one per partition.
create function pg_temp.lease_id(i_partition text) returns uuid
language sql as $$
    select ('0196c000-0000-7000-8000-' || lpad(to_hex(ascii(i_partition)), 12, '0'))::uuid
$$;

-- A lease pop of i_batch messages of partition i_partition by group g.
create function pg_temp.lease(i_partition text, i_batch integer, i_now timestamptz)
returns void
language sql as $$
    select regina.pop(jsonb_build_array(jsonb_build_object(
               'queue', 'wk', 'partition', i_partition, 'consumerGroup', 'g',
               'batch', i_batch, 'leaseId', pg_temp.lease_id(i_partition))), i_now)
$$;

-- The ack item of message i_tid of partition i_partition under its lease.
create function pg_temp.item(i_tid text, i_partition text, i_status text) returns jsonb
language sql as $$
    select jsonb_build_object('transactionId', i_tid,
                              'partitionId', (select p.uuid::text from regina.partitions p
                                              where p.id = pg_temp.partition_id('wk', i_partition)),
                              'leaseId', pg_temp.lease_id(i_partition), 'status', i_status,
                              'consumerGroup', 'g')
$$;

do $$
declare
    t0 timestamptz := '2026-05-01T00:00:00Z';
    t1 timestamptz := t0 + interval '1 second';
    v text;
    lone bigint;
    general bigint;
    r record;
begin
    perform regina.configure('{"queue":"wk","options":{"leaseTime":60,"retryLimit":3}}');
    -- Partition, messages stored, messages leased.
    for r in select * from (values ('a', 1, 1), ('b', 2, 1), ('c', 1, 1), ('d', 1, 1),
                                   ('e', 2, 1), ('f', 2, 2), ('h', 3, 2), ('i', 1, 1),
                                   ('j', 1, 1), ('k', 1, 1)) x(part, stored, leased) loop
        perform pg_temp.push_numbered('wk', r.part, r.part, 1, r.stored, t0);
        perform pg_temp.lease(r.part, r.leased, t0);
    end loop;
    -- c gets a message while c1 is leased.
    perform pg_temp.push_numbered('wk', 'c', 'c', 2, 2, t0);

    -- One item, the last message of its partition: no one to wake.
    v := pg_temp.wakes(jsonb_build_array(pg_temp.item('a1', 'a', 'completed')), t1);
    assert v = '-', format('a lease ended at the end of a: %s', v);
    -- One item with a message behind it, and one with a message pushed during its lease.
    v := pg_temp.wakes(jsonb_build_array(pg_temp.item('b1', 'b', 'completed')), t1);
    assert v = 'g', format('b2 is due: %s', v);
    v := pg_temp.wakes(jsonb_build_array(pg_temp.item('c1', 'c', 'completed')), t1);
    assert v = 'g', format('c2, pushed during the lease, is due: %s', v);

    -- Several one-message leases on different partitions (regina._ack_lone): d ends, e has e2.
    lone := pg_temp.calls('_ack_lone');
    general := pg_temp.calls('_ack_items');
    v := pg_temp.wakes(jsonb_build_array(pg_temp.item('d1', 'd', 'completed'),
                                         pg_temp.item('e1', 'e', 'completed')), t1);
    assert v = '- g', format('d ended, e2 is due: %s', v);
    assert pg_temp.calls('_ack_lone') = lone + 1 and pg_temp.calls('_ack_items') = general,
        'settled by regina._ack_lone';

    -- The general loop: an ack/batch of a whole lease at the end of f, then of a lease with h3
    -- behind it (the run's last item names the group).
    v := pg_temp.wakes(jsonb_build_array(pg_temp.item('f1', 'f', 'completed'),
                                         pg_temp.item('f2', 'f', 'completed')), t1);
    assert v = '- -', format('f ended: %s', v);
    v := pg_temp.wakes(jsonb_build_array(pg_temp.item('h1', 'h', 'completed'),
                                         pg_temp.item('h2', 'h', 'completed')), t1);
    assert v = '- g', format('h3 is due: %s', v);
    assert pg_temp.calls('_ack_items') = general + 2, 'settled by the general loop';

    -- A failure with retries left makes its message due again; a dead letter at the end does not.
    v := pg_temp.wakes(jsonb_build_array(pg_temp.item('i1', 'i', 'failed')), t1);
    assert v = 'g', format('i1 is retried: %s', v);
    v := pg_temp.wakes(jsonb_build_array(pg_temp.item('j1', 'j', 'dlq')), t1);
    assert v = '-', format('j1 dead-lettered, j ended: %s', v);

    -- An ack that accounts its lease's expiry fails, and wakes the group: k1 is due again.
    select string_agg(coalesce(a.wake_group, '-') || ' ' || (a.result ->> 'code'), ' ')
    into v
    from regina.ack(jsonb_build_array(pg_temp.item('k1', 'k', 'completed')),
                    t0 + interval '2 minutes') a;
    assert v = 'g lease_expired', format('k1 is due again after the expiry: %s', v);
end
$$;
