-- completedRetentionSeconds deletes old messages every known group has settled (none without a
-- known group); maxWaitTimeSeconds evicts old messages some known group has not settled (every
-- old message without a known group) and leaves settled ones to retention.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    items jsonb;
    v json;
    n bigint;
begin
    perform regina.configure('{"queue":"c","options":{"completedRetentionSeconds":60}}');
    perform regina.configure('{"queue":"e","options":{"maxWaitTimeSeconds":60}}');
    perform regina.configure('{"queue":"e2","options":{"maxWaitTimeSeconds":60}}');
    for q in 0 .. 2 loop
        select jsonb_agg(jsonb_build_object('queue', (array['c','e','e2'])[q + 1], 'partition', 'p',
                                            'payload', i, 'transactionId', 'm' || i,
                                            'messageId', gen_random_uuid()))
        into items from generate_series(0, 3) i;
        perform regina.push(items, i_now => t0);
    end loop;
    perform regina.push('[{"queue":"e","partition":"p","payload":9,"transactionId":"new","messageId":"0196a000-0000-7000-8000-0000000008a1"}]',
                        i_now => t0 + interval '100 seconds');

    -- No known group on c: completed retention deletes nothing.
    select coalesce(sum(x.removed), 0) into n from regina.retention_run(1000, t0 + interval '120 seconds') x;
    assert n = 0, format('no known group, nothing settled: %s', n);
    -- g settles two, h one: only m0 is settled by every known group.
    perform regina.pop('[{"queue":"c","consumerGroup":"g","batch":2,"autoAck":true}]', t0 + interval '121 seconds');
    perform regina.pop('[{"queue":"c","consumerGroup":"h","batch":1,"autoAck":true}]', t0 + interval '121 seconds');
    select sum(x.removed) into n from regina.retention_run(1000, t0 + interval '122 seconds') x;
    assert n = 1, format('only m0: %s', n);
    assert not exists (select 1 from regina.messages m join regina.partitions p on p.id = m.partition_id
                       join regina.queues q on q.id = p.queue_id where q.name = 'c' and m.transaction_id = 'm0'),
        'm0 deleted';

    -- e: g settled m0; eviction takes m1-m3 (unsettled by g, older than 60 s) and keeps m0
    -- (settled: retention's business) and the new message.
    perform regina.pop('[{"queue":"e","consumerGroup":"g","batch":1,"autoAck":true}]', t0 + interval '10 seconds');
    select sum(x.removed) into n from regina.eviction_run(1000, t0 + interval '120 seconds') x
    where x.queue_name = 'e';
    assert n = 3, format('three evicted from e: %s', n);
    assert (select array_agg(m.transaction_id order by m.seq) from regina.messages m
            join regina.partitions p on p.id = m.partition_id join regina.queues q on q.id = p.queue_id
            where q.name = 'e') = '{m0,new}', 'm0 and the new message stay';
    select result into v from regina.pop('[{"queue":"e","consumerGroup":"g","batch":10,"autoAck":true}]',
                                         t0 + interval '121 seconds');
    assert (select array_agg(e ->> 'transactionId') from json_array_elements(v -> 'messages') e) = '{new}',
        format('g moves over the gap: %s', v);
    -- e2 has no known group: every old message is evicted.
    assert not exists (select 1 from regina.messages m join regina.partitions p on p.id = m.partition_id
                       join regina.queues q on q.id = p.queue_id where q.name = 'e2'), 'e2 emptied';
end $$;
