-- A multi-partition pop settles, without a claim of their own, the candidates whose head is at the
-- partition's end (their ready rows go, their cursors stay as they were), leaves a head behind
-- removed messages to the claim that moves it, and answers the group's quiet from what it
-- claimed: `infinity` or the next instant when it settled everything due, null otherwise.
do $$
declare
    t0 timestamptz := '2026-02-01T00:00:00Z';
    r record;
    before regina.cursors;
    after regina.cursors;
    items jsonb;
begin
    perform regina.configure('{"queue":"eq","options":{"leaseTime":30}}');
    select jsonb_agg(jsonb_build_object('queue', 'eq', 'partition', 'p' || i, 'payload', i,
                                        'transactionId', 't' || i,
                                        'messageId', gen_random_uuid()))
    into items from generate_series(0, 4) i;
    perform regina.push(items, i_now => t0);

    -- Everything due is claimed and drained: nothing is claimable until a push.
    select * into r from regina.pop(
        '[{"queue":"eq","consumerGroup":"g","batch":10,"partitions":10,"autoAck":true,"quiet":true}]',
        t0 + interval '1 second');
    assert json_array_length(r.result -> 'messages') = 5, format('five delivered: %s', r.result);
    assert r.quiet = 'infinity', format('all settled: quiet until a push, got %s', r.quiet);
    assert not exists (select 1 from regina.ready where consumer_group = 'g'), 'drained: no rows';

    -- A ready row left due at a drained head (a push held the partition when it was claimed):
    -- the next pop deletes it and leaves the cursor untouched.
    insert into regina.ready (partition_id, consumer_group, queue_id, eligible_at)
    select p.id, 'g', p.queue_id, t0 + interval '1 second'
    from regina.partitions p where p.name = 'p0';
    select c.* into before from regina.cursors c
    join regina.partitions p on p.id = c.partition_id where p.name = 'p0';
    select * into r from regina.pop(
        '[{"queue":"eq","consumerGroup":"g","batch":10,"partitions":10,"autoAck":true,"quiet":true}]',
        t0 + interval '2 seconds');
    assert r.result ->> 'empty' = 'empty', format('nothing to deliver: %s', r.result);
    assert r.quiet = 'infinity', format('the stale row settled: quiet, got %s', r.quiet);
    assert not exists (select 1 from regina.ready where consumer_group = 'g'), 'stale row deleted';
    select c.* into after from regina.cursors c
    join regina.partitions p on p.id = c.partition_id where p.name = 'p0';
    assert after is not distinct from before, format('cursor unchanged: %s -> %s', before, after);

    -- A head behind messages that are gone (as retention leaves it) moves to the partition's end.
    perform regina.push('[{"queue":"eq","partition":"p1","payload":1,"transactionId":"gone1","messageId":"0196b000-0000-7000-8000-0000000000a1"},
                          {"queue":"eq","partition":"p1","payload":2,"transactionId":"gone2","messageId":"0196b000-0000-7000-8000-0000000000a2"}]',
                        i_now => t0 + interval '3 seconds');
    delete from regina.messages m using regina.partitions p
    where p.id = m.partition_id and p.name = 'p1' and m.transaction_id like 'gone%';
    select * into r from regina.pop(
        '[{"queue":"eq","consumerGroup":"g","batch":10,"partitions":10,"autoAck":true,"quiet":true}]',
        t0 + interval '4 seconds');
    assert r.result ->> 'empty' = 'empty', format('nothing to deliver: %s', r.result);
    assert (select c.next_seq = p.next_seq from regina.cursors c
            join regina.partitions p on p.id = c.partition_id
            where p.name = 'p1' and c.consumer_group = 'g'), 'head moved to the end';
    assert not exists (select 1 from regina.ready where consumer_group = 'g'), 'p1 row deleted';

    -- A claim that leaves work behind (the budget ran out) is not quiet.
    perform regina.push('[{"queue":"eq","partition":"p2","payload":1,"transactionId":"w1","messageId":"0196b000-0000-7000-8000-0000000000b1"},
                          {"queue":"eq","partition":"p2","payload":2,"transactionId":"w2","messageId":"0196b000-0000-7000-8000-0000000000b2"},
                          {"queue":"eq","partition":"p3","payload":3,"transactionId":"w3","messageId":"0196b000-0000-7000-8000-0000000000b3"}]',
                        i_now => t0 + interval '5 seconds');
    select * into r from regina.pop(
        '[{"queue":"eq","consumerGroup":"g","batch":1,"partitions":10,"autoAck":true,"quiet":true}]',
        t0 + interval '6 seconds');
    assert json_array_length(r.result -> 'messages') = 1, format('one delivered: %s', r.result);
    assert r.quiet is null, format('work left: not quiet, got %s', r.quiet);
    -- Nor is one whose partitions ran out while another is due (p3 goes first: it waited longer).
    select * into r from regina.pop(
        '[{"queue":"eq","consumerGroup":"g","batch":10,"partitions":1,"autoAck":true,"quiet":true}]',
        t0 + interval '7 seconds');
    assert json_array_length(r.result -> 'messages') = 1, format('one delivered: %s', r.result);
    assert (r.result -> 'messages' -> 0 ->> 'data') = '3', format('p3 first: %s', r.result);
    assert r.quiet is null, format('p2 left: not quiet, got %s', r.quiet);

    -- Leased claims wait for their lease's end: quiet until the earliest of them.
    select * into r from regina.pop(
        '[{"queue":"eq","consumerGroup":"g","batch":10,"partitions":10,"quiet":true,"leaseId":"0196b000-0000-7000-8000-0000000000c1"}]',
        t0 + interval '8 seconds');
    assert json_array_length(r.result -> 'messages') = 1, format('the last one: %s', r.result);
    assert r.quiet = regina._ts_us(t0 + interval '38 seconds'),
        format('quiet until the lease ends, got %s', r.quiet);
end
$$;
