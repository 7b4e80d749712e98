-- Retention deletes messages older than retentionSeconds, consumed or not, in bounded batches:
-- never inside an active lease's delivered range, freeing their dedup keys, keeping dead letters,
-- moving heads over the gaps and keeping the ready set in line.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v json;
    pid text;
    n bigint;
    lease text := '0196a000-0000-7000-8000-0000000007a1';
begin
    perform regina.configure('{"queue":"r","options":{"retentionSeconds":60,"leaseTime":300,"retryLimit":1}}');
    select jsonb_agg(jsonb_build_object('queue', 'r', 'partition', 'p', 'payload', i,
                                        'transactionId', 'm' || i, 'messageId', gen_random_uuid()))
    into v from generate_series(0, 4) i;
    perform regina.push(v::jsonb, i_now => t0);
    perform regina.push('[{"queue":"r","partition":"p","payload":5,"transactionId":"m5","messageId":"0196a000-0000-7000-8000-0000000007b5"},
                          {"queue":"r","partition":"q","payload":0,"transactionId":"q0","messageId":"0196a000-0000-7000-8000-0000000007c0"}]',
                        i_now => t0 + interval '100 seconds');
    perform regina.push('[{"queue":"r","partition":"old","payload":0,"transactionId":"o0","messageId":"0196a000-0000-7000-8000-0000000007d0"}]',
                        i_now => t0);

    -- g leases offsets 0-1 of p; h settled offset 0; d dead-lettered offset 0; f settled 0-1
    -- and failed once on offset 2.
    select result into v from regina.pop(format('[{"queue":"r","partition":"p","consumerGroup":"g","batch":2,"leaseId":"%s"}]', lease)::jsonb,
                                         t0 + interval '10 seconds');
    pid := v ->> 'partitionId';
    perform regina.pop('[{"queue":"r","partition":"p","consumerGroup":"h","batch":1,"autoAck":true}]', t0 + interval '10 seconds');
    perform regina.pop('[{"queue":"r","partition":"p","consumerGroup":"d","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000007a2"}]',
                       t0 + interval '10 seconds');
    perform regina.ack(format('[{"transactionId":"m0","partitionId":"%s","status":"dlq","consumerGroup":"d","leaseId":"0196a000-0000-7000-8000-0000000007a2"}]', pid)::jsonb,
                       t0 + interval '11 seconds');
    assert (select count(*) from regina.dead_letters) = 1, 'd dead-lettered m0';
    perform regina.pop('[{"queue":"r","partition":"p","consumerGroup":"f","batch":2,"autoAck":true}]', t0 + interval '10 seconds');
    perform regina.pop('[{"queue":"r","partition":"p","consumerGroup":"f","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000007a3"}]',
                       t0 + interval '10 seconds');
    perform regina.ack(format('[{"transactionId":"m2","partitionId":"%s","status":"failed","leaseId":"0196a000-0000-7000-8000-0000000007a3"}]', pid)::jsonb,
                       t0 + interval '11 seconds');
    assert (select c.head_attempts from regina.cursors c where c.consumer_group = 'f') = 1, 'f failed m2 once';
    assert exists (select 1 from regina.ready r join regina.partitions p on p.id = r.partition_id
                   where p.name = 'old' and r.consumer_group = 'g'), 'g has work on partition old';

    -- Batches are bounded: two messages per call.
    select sum(x.removed) into n from regina.retention_run(2, t0 + interval '120 seconds') x;
    assert n = 2, format('first batch deletes two: %s', n);
    select sum(x.removed) into n from regina.retention_run(1000, t0 + interval '120 seconds') x;
    assert n = 2, format('the rest: %s', n);
    assert (select array_agg(m.transaction_id order by m.transaction_id) from regina.messages m)
           = '{m0,m1,m5,q0}', format('leased m0-m1 spared, old ones gone, new ones kept: %s',
                                     (select array_agg(m.transaction_id) from regina.messages m));
    assert (select count(*) from regina.dead_letters) = 1, 'dead letters stay';
    assert not exists (select 1 from regina.ready r join regina.partitions p on p.id = r.partition_id
                       where p.name = 'old'), 'partition old is empty: no ready rows';
    assert (select c.next_seq from regina.cursors c where c.consumer_group = 'f') = 5,
        'f''s head m2 was deleted: it moved over the gap to m5';
    assert (select c.head_attempts from regina.cursors c where c.consumer_group = 'f') = 0,
        'the count of the deleted head is gone with it';
    assert (select c.next_seq from regina.cursors c where c.consumer_group = 'd') = 1, 'd stays at m1';

    -- The dedup key of a deleted message is free again.
    select result into v from regina.push('[{"queue":"r","partition":"p","payload":"again","transactionId":"m3","messageId":"0196a000-0000-7000-8000-0000000007e3"}]',
                                          i_now => t0 + interval '121 seconds');
    assert v ->> 'status' = 'queued', format('m3 accepted again: %s', v);

    -- g settles its lease: its head moves over the gap; the leased messages are then deleted and
    -- h (head at m1) moves over them too.
    perform regina.ack(format('[{"transactionId":"m0","partitionId":"%1$s","leaseId":"%2$s"},{"transactionId":"m1","partitionId":"%1$s","leaseId":"%2$s"}]', pid, lease)::jsonb,
                       t0 + interval '122 seconds');
    assert (select c.next_seq from regina.cursors c where c.consumer_group = 'g'
            and c.partition_id = (select id from regina.partitions where name = 'p')) = 5, 'g at m5';
    select sum(x.removed) into n from regina.retention_run(1000, t0 + interval '130 seconds') x;
    assert n = 2, format('m0 and m1 deleted once their lease ended: %s', n);
    assert (select c.next_seq from regina.cursors c where c.consumer_group = 'h') = 5, 'h moved to m5';
    select result into v from regina.pop('[{"queue":"r","partition":"p","consumerGroup":"h","batch":10,"autoAck":true}]',
                                         t0 + interval '131 seconds');
    assert (select array_agg(e ->> 'transactionId') from json_array_elements(v -> 'messages') e) = '{m5,m3}',
        format('h gets what is left, in order: %s', v);
    perform regina.pop('[{"queue":"r","consumerGroup":"h","batch":10,"partitions":10,"autoAck":true}]',
                       t0 + interval '131 seconds');
    assert not exists (select 1 from regina.ready r where r.consumer_group = 'h'), 'h drained: no ready rows';

    -- retentionEnabled false switches retention off.
    perform regina.configure('{"queue":"r","options":{"retentionEnabled":false}}');
    select count(*) into n from regina.retention_run(1000, t0 + interval '1 day') x;
    assert n = 0, 'retention off';
end $$;
