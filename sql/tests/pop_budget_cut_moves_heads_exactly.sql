-- A multi-partition pop that reaches its budget reads every partition but the last one to its end:
-- their heads move just past what was delivered, and the last one's head stops where its read was
-- cut, so the next pops deliver the rest, each message once, in offset order. Messages of another
-- group (a requeued copy) behind a head are passed over as before.
do $$
declare
    t0 timestamptz := '2026-03-01T00:00:00Z';
    r record;
    got text[] := '{}';
    items jsonb;
    i integer;
begin
    perform regina.configure('{"queue":"bq","options":{"leaseTime":30}}');
    -- a0, a1 in partition a; b0 .. b3 in b; c0 in c (pushed in that order: a waits longest).
    select jsonb_agg(jsonb_build_object('queue', 'bq', 'partition', x.part,
                                        'payload', to_jsonb(x.part || x.n), 'transactionId', x.part || x.n,
                                        'messageId', gen_random_uuid()) order by x.ord)
    into items
    from (values ('a', 0, 1), ('a', 1, 2), ('b', 0, 3), ('b', 1, 4), ('b', 2, 5), ('b', 3, 6),
                 ('c', 0, 7)) x(part, n, ord);
    perform regina.push(items, i_now => t0);

    -- Budget 4 over three partitions: a is read whole (2), b is cut after 2.
    select * into r from regina.pop(
        '[{"queue":"bq","consumerGroup":"g","batch":4,"partitions":10,"autoAck":true}]',
        t0 + interval '1 second');
    assert json_array_length(r.result -> 'messages') = 4, format('four delivered: %s', r.result);
    assert (select array_agg(m ->> 'data' order by o) from json_array_elements(r.result -> 'messages')
                with ordinality e(m, o)) = '{a0,a1,b0,b1}', format('a whole, b cut: %s', r.result);
    assert (select c.next_seq from regina.cursors c join regina.partitions p on p.id = c.partition_id
            where p.name = 'a' and c.consumer_group = 'g') = 2, 'a: head past its last message';
    assert (select c.next_seq from regina.cursors c join regina.partitions p on p.id = c.partition_id
            where p.name = 'b' and c.consumer_group = 'g') = 2, 'b: head where the read was cut';

    -- c waited longest now (b went to the back of the line): read whole, at the budget.
    select * into r from regina.pop(
        '[{"queue":"bq","consumerGroup":"g","batch":1,"partitions":10,"autoAck":true}]',
        t0 + interval '2 seconds');
    assert (r.result -> 'messages' -> 0 ->> 'data') = 'c0', format('c0: %s', r.result);

    -- b alone over the budget: the last one read, cut short twice.
    for i in 1 .. 4 loop
        select * into r from regina.pop(
            '[{"queue":"bq","consumerGroup":"g","batch":1,"partitions":10,"autoAck":true}]',
            t0 + interval '2 seconds' + i * interval '1 second');
        exit when r.result ->> 'empty' is not null;
        got := got || array(select m ->> 'data' from json_array_elements(r.result -> 'messages') m);
    end loop;
    assert got = '{b2,b3}', format('the rest of b, once each, in order: %s', got);
    assert (select count(*) from regina.ready rr join regina.queues q on q.id = rr.queue_id
            where q.name = 'bq' and rr.consumer_group = 'g') = 0, 'drained';
    assert (select bool_and(c.next_seq = p.next_seq) from regina.cursors c
            join regina.partitions p on p.id = c.partition_id
            where c.consumer_group = 'g' and p.queue_id = (select id from regina.queues where name = 'bq')),
        'every head at its partition''s end';
end
$$;
