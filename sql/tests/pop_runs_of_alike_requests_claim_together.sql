-- Consecutive pop requests of one call that name the same queue, ask for one partition each and
-- agree on the rest (a long-polling group's consumers, fused by the broker) are served as one
-- claim: one read of the ready rows, one read of the messages, one save of the ready rows for
-- the lot. Each request still gets what it would have got on its own, in order: a partition of
-- its own, longest waiting first, at most `batch` messages of it, under its own lease.
do $$
declare
    t0 timestamptz := '2026-03-01T00:00:00Z';
    leases uuid[] := array(select gen_random_uuid() from generate_series(1, 5));
    reqs jsonb;
    got text[] := '{}';
    quiets text[] := '{}';
    r record;
begin
    perform regina.configure('{"queue":"ru","options":{"leaseTime":60}}');
    perform regina.pop(jsonb_build_array(jsonb_build_object(
                'queue', 'ru', 'consumerGroup', 'g', 'leaseId', gen_random_uuid())),
            t0 - interval '1 second');
    -- Four partitions of one message, due one second apart (p3 first), then p9 with three.
    for i in 0 .. 3 loop
        perform pg_temp.push_numbered('ru', 'p' || (3 - i), 'one-', i, i,
                                      t0 + i * interval '1 second');
    end loop;
    perform pg_temp.push_numbered('ru', 'p9', 'deep-', 0, 2, t0 + interval '5 seconds');

    -- Function calls of this transaction are counted from here.
    perform set_config('track_functions', 'pl', true);
    reqs := (select jsonb_agg(jsonb_build_object('queue', 'ru', 'consumerGroup', 'g',
                                                 'batch', 2, 'leaseId', l, 'quiet', true)
                              order by o)
             from unnest(leases) with ordinality u(l, o));
    for r in select * from regina.pop(reqs, t0 + interval '10 seconds') order by idx loop
        assert (r.result ->> 'leaseId')::uuid = leases[r.idx + 1],
            format('request %s answers under its own lease: %s', r.idx, r.result);
        assert (select bool_and((m ->> 'leaseId')::uuid = leases[r.idx + 1])
                from json_array_elements(r.result -> 'messages') m),
            format('and so do its messages: %s', r.result);
        assert (r.result ->> 'partitionsClaimed')::int = 1, format('one partition: %s', r.result);
        got := got || (r.result ->> 'partition') || array(
            select m ->> 'data' from json_array_elements(r.result -> 'messages') m);
        quiets := quiets || coalesce(r.quiet, 'null');
    end loop;
    assert got = array['p3', '0', 'p2', '1', 'p1', '2', 'p0', '3', 'p9', '0', '1'],
        format('a partition each, longest waiting first, at most its batch of it: %s', got);
    assert (select calls from pg_stat_xact_user_functions
            where schemaname = 'regina' and funcname = '_pop_claim_set') = 1,
        'the five requests are claimed together';
    assert (select calls from pg_stat_xact_user_functions
            where schemaname = 'regina' and funcname = '_ready_candidates') = 1,
        'from one read of the ready rows';
    assert not exists (select 1 from pg_stat_xact_user_functions
                       where schemaname = 'regina' and funcname = '_pop_one'),
        'and not one request at a time';
    -- Each cursor is leased to the request its partition went to.
    assert (select array_agg(c.lease_id order by p.name) from regina.cursors c
            join regina.partitions p on p.id = c.partition_id
            where c.consumer_group = 'g' and c.lease_active)
           = array[leases[4], leases[3], leases[2], leases[1], leases[5]],
        'cursors leased to their own requests';
    -- All five partitions are leased until t0 + 70 s: nothing is due before, for any of them.
    assert quiets = array_fill(regina._ts_us(t0 + interval '70 seconds'), array[5]),
        format('the run tells its group quiet until the first lease ends: %s', quiets);
end $$;

-- Each request of a run reads up to its own batch, not the run's: a partition with more than a
-- batch goes to the back of the line with the rest, and its head moves past what was read.
do $$
declare
    t0 timestamptz := '2026-03-01T00:00:00Z';
    req jsonb := '{"queue":"rd","consumerGroup":"h","batch":2,"autoAck":true}';
    results json[];
begin
    perform regina.configure('{"queue":"rd","options":{}}');
    perform pg_temp.push_numbered('rd', 'd1', 'd1-', 0, 2, t0);
    perform regina.push(jsonb_build_array(jsonb_build_object(
                'queue', 'rd', 'partition', 'd2', 'payload', 9,
                'transactionId', 'd2-0', 'messageId', gen_random_uuid())),
            i_now => t0 + interval '1 second');

    results := array(select p.result from regina.pop(jsonb_build_array(req, req),
                                                     t0 + interval '2 seconds') p order by p.idx);
    assert (select array_agg(m ->> 'data') from json_array_elements(results[1] -> 'messages') m)
           = array['0', '1'] and results[1] ->> 'partition' = 'd1',
        format('the first request: two of d1, its batch: %s', results[1]);
    assert (select array_agg(m ->> 'data') from json_array_elements(results[2] -> 'messages') m)
           = array['9'] and results[2] ->> 'partition' = 'd2',
        format('the second: d2: %s', results[2]);
    assert (select c.next_seq from regina.cursors c join regina.partitions p on p.id = c.partition_id
            where p.name = 'd1' and c.consumer_group = 'h') = 2, 'd1''s head past what was read';

    results := array(select p.result from regina.pop(jsonb_build_array(req, req),
                                                     t0 + interval '3 seconds') p order by p.idx);
    assert (select array_agg(m ->> 'data') from json_array_elements(results[1] -> 'messages') m)
           = array['2'], format('d1''s last message comes next: %s', results[1]);
    assert results[2] ->> 'empty' = 'empty', format('nothing is left: %s', results[2]);
    assert not exists (select 1 from regina.ready r join regina.partitions p on p.id = r.partition_id
                       where p.queue_id = (select id from regina.queues where name = 'rd')),
        'both partitions drained for the group';
end $$;

-- Only requests alike form a run, and the answers keep the order of the requests: a request for
-- more partitions, for another group or for a named partition is served on its own between
-- them, and a request for a queue that does not exist is answered as such.
do $$
declare
    t0 timestamptz := '2026-03-01T00:00:00Z';
    one jsonb := '{"queue":"rm","consumerGroup":"g","batch":1,"autoAck":true}';
    rows record;
    answers text[] := '{}';
begin
    perform regina.configure('{"queue":"rm","options":{}}');
    for i in 0 .. 5 loop
        perform pg_temp.push_numbered('rm', 'm' || i, 'm-', i, i, t0 + i * interval '1 second');
    end loop;
    for rows in select * from regina.pop(jsonb_build_array(
                    one, one,
                    '{"queue":"rm","consumerGroup":"g","batch":2,"partitions":2,"autoAck":true}'::jsonb,
                    one,
                    '{"queue":"rm","consumerGroup":"g","partition":"m5","batch":1,"autoAck":true}'::jsonb,
                    '{"queue":"missing","consumerGroup":"g","batch":1,"autoAck":true}'::jsonb,
                    '{"queue":"missing","consumerGroup":"g","batch":1,"autoAck":true}'::jsonb),
                t0 + interval '10 seconds') order by idx loop
        answers := answers || coalesce(
            rows.result ->> 'empty',
            (select string_agg(m ->> 'partition', '+') from json_array_elements(rows.result -> 'messages') m));
    end loop;
    assert answers = array['m0', 'm1', 'm2+m3', 'm4', 'm5', 'queue_not_found', 'queue_not_found'],
        format('each request in its place: %s', answers);
end $$;

-- A cursor that needs more than a read (here an expired lease to account) is claimed on its own
-- inside the run, still for the request whose slot it took and under that request's lease.
do $$
declare
    t0 timestamptz := '2026-03-01T00:00:00Z';
    leases uuid[] := array[gen_random_uuid(), gen_random_uuid()];
    first_lease uuid := gen_random_uuid();
    results json[];
    all_events json;
begin
    perform regina.configure('{"queue":"rx","options":{"leaseTime":10}}');
    perform regina.pop(jsonb_build_array(jsonb_build_object(
                'queue', 'rx', 'consumerGroup', 'g', 'leaseId', gen_random_uuid())),
            t0 - interval '1 second');
    for i in 0 .. 1 loop
        perform pg_temp.push_numbered('rx', 'x' || i, 'x-', i, i, t0 + i * interval '1 second');
    end loop;
    -- x0 is claimed and its lease left to expire (at t0 + 12 s); x1 waits since t0 + 1 s.
    perform regina.pop(jsonb_build_array(jsonb_build_object(
                'queue', 'rx', 'consumerGroup', 'g', 'leaseId', first_lease)),
            t0 + interval '2 seconds');

    select array_agg(p.result order by p.idx), json_agg(p.events) filter (where p.events is not null)
    into results, all_events
    from regina.pop((select jsonb_agg(jsonb_build_object('queue', 'rx', 'consumerGroup', 'g',
                                                         'leaseId', l) order by o)
                     from unnest(leases) with ordinality u(l, o)),
                    t0 + interval '20 seconds') p;
    assert results[1] ->> 'partition' = 'x1' and (results[1] ->> 'leaseId')::uuid = leases[1],
        format('the first request: x1, the longest waiting, under its lease: %s', results[1]);
    assert results[2] ->> 'partition' = 'x0' and (results[2] ->> 'leaseId')::uuid = leases[2]
           and (results[2] -> 'messages' -> 0 ->> 'leaseId')::uuid = leases[2],
        format('the second: x0 again, under the second lease: %s', results[2]);
    assert (results[2] -> 'messages' -> 0 ->> 'retryCount')::int = 1,
        format('the expired lease counted as an attempt: %s', results[2]);
    assert (select c.lease_id from regina.cursors c join regina.partitions p on p.id = c.partition_id
            where p.name = 'x0' and c.consumer_group = 'g') = leases[2],
        'x0''s cursor leased to the second request';
    assert (select sum((e ->> 'leasesExpired')::int) from json_array_elements(all_events) ev,
                   json_array_elements(ev) e) = 1,
        format('the expiry reported once: %s', all_events);
end $$;
