-- A claim set saves the cursor of every partition it claimed, whether one by one (a set of a few
-- cursors) or in one statement (eight cursors or more, regina._cursors_claimed): an autoAck claim
-- moves the head past what it delivered (the last partition of a read cut by the budget only past
-- what it read), counts the messages and the batch; a lease claim records its lease, where it
-- ends and when it expires, one lease per request when a run of alike requests claims together.
do $$
declare
    t0 timestamptz := '2026-04-01T00:00:00Z';
    n integer;
    q text;
    v_lease uuid;
    leases uuid[];
    r record;
    c regina.cursors;
    v_got jsonb;
begin
    foreach n in array array[3, 12] loop
        q := 'cs' || n;
        perform regina.configure(jsonb_build_object('queue', q, 'options',
                                                    jsonb_build_object('leaseTime', 30)));
        perform regina.pop(jsonb_build_array(jsonb_build_object(
                    'queue', q, 'consumerGroup', 'g', 'autoAck', true)), t0);
        for i in 1 .. n loop
            perform pg_temp.push_numbered(q, 'p' || i, 'a-', 0, 2, t0 + i * interval '1 ms');
        end loop;

        -- autoAck over every partition, the budget cutting the last one after its first message.
        v_got := (select p.result from regina.pop(jsonb_build_array(jsonb_build_object(
                      'queue', q, 'consumerGroup', 'g', 'autoAck', true,
                      'batch', 3 * (n - 1) + 1, 'partitions', n)),
                  t0 + interval '1 second') p);
        assert jsonb_array_length(v_got -> 'messages') = 3 * (n - 1) + 1,
            format('%s partitions: every message but the cut ones: %s', n, v_got);
        for c in select * from regina.cursors k
                 where k.queue_id = (select id from regina.queues where name = q) loop
            if c.total_consumed = 1 then
                assert c.next_seq = 1, format('%s: the cut partition past its one message: %s', n, c);
            else
                assert c.total_consumed = 3 and c.next_seq = 3,
                    format('%s: a whole partition past its three messages: %s', n, c);
            end if;
            assert c.batches_consumed = 1 and c.marks = '{}' and c.head_attempts = 0
                   and c.last_consumed_at = t0 + interval '1 second'
                   and c.last_claim_at = t0 + interval '1 second',
                format('%s: the claim is recorded: %s', n, c);
        end loop;
        assert (select count(*) from regina.cursors k
                where k.queue_id = (select id from regina.queues where name = q)
                  and k.total_consumed = 1) = 1, format('%s: one partition cut', n);

        -- One lease over every partition, after two more messages each.
        for i in 1 .. n loop
            perform pg_temp.push_numbered(q, 'p' || i, 'l-', 3, 4, t0 + interval '1500 ms');
        end loop;
        v_lease := gen_random_uuid();
        v_got := (select p.result from regina.pop(jsonb_build_array(jsonb_build_object(
                      'queue', q, 'consumerGroup', 'g', 'leaseId', v_lease,
                      'batch', 1000, 'partitions', n)),
                  t0 + interval '2 seconds') p);
        assert (v_got ->> 'partitionsClaimed')::integer = n, format('%s: all claimed: %s', n, v_got);
        for c in select * from regina.cursors k
                 where k.queue_id = (select id from regina.queues where name = q) loop
            assert c.lease_id = v_lease and c.lease_active and c.lease_end_seq = 4
                   and c.lease_expires_at = t0 + interval '32 seconds' and c.lease_marks = '{}'
                   and c.last_claim_at = t0 + interval '2 seconds'
                   and c.next_seq = case when c.total_consumed = 1 then 1 else 3 end,
                format('%s: the lease is recorded, the head stays: %s', n, c);
        end loop;
        perform regina.lease_sweep(1000, t0 + interval '40 seconds');

        -- A run of alike requests, one partition each, each under its own lease (the expired
        -- lease's messages are due again).
        leases := array(select gen_random_uuid() from generate_series(1, n));
        for r in select * from regina.pop(
                     (select jsonb_agg(jsonb_build_object('queue', q, 'consumerGroup', 'g',
                                                          'leaseId', l, 'batch', 10)
                                       order by o)
                      from unnest(leases) with ordinality u(l, o)),
                     t0 + interval '60 seconds') loop
            c := (select k from regina.cursors k
                  join regina.partitions p on p.id = k.partition_id
                  where p.queue_id = (select id from regina.queues where name = q)
                    and p.name = r.result ->> 'partition');
            assert c.lease_id = leases[r.idx + 1] and c.lease_active
                   and c.lease_expires_at = t0 + interval '90 seconds',
                format('%s: request %s holds its own lease: %s %s', n, r.idx, r.result, c);
        end loop;
    end loop;
end
$$;
