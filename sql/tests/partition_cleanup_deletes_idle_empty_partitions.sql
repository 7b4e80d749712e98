-- Partition cleanup deletes partitions without messages, active lease or recent push, with their
-- cursors and ready rows; a later push re-creates the partition and cursors start again.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v json;
    n bigint;
    old_id bigint;
begin
    perform regina.configure('{"queue":"k","options":{"retentionSeconds":10,"retryLimit":0}}');
    perform regina.push('[{"queue":"k","partition":"idle","payload":1,"transactionId":"a","messageId":"0196a000-0000-7000-8000-0000000009a1"},
                          {"queue":"k","partition":"full","payload":2,"transactionId":"b","messageId":"0196a000-0000-7000-8000-0000000009a2"},
                          {"queue":"k","partition":"dead","payload":3,"transactionId":"c","messageId":"0196a000-0000-7000-8000-0000000009a3"}]',
                        i_now => t0);
    perform regina.pop('[{"queue":"k","partition":"idle","consumerGroup":"g","batch":1,"autoAck":true}]', t0 + interval '1 second');
    select result into v from regina.pop('[{"queue":"k","partition":"dead","consumerGroup":"g","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000009b1"}]',
                                         t0 + interval '1 second');
    perform regina.ack(format('[{"transactionId":"c","partitionId":"%s","status":"failed","leaseId":"0196a000-0000-7000-8000-0000000009b1"}]',
                              v ->> 'partitionId')::jsonb, t0 + interval '2 seconds');
    perform regina.retention_run(1000, t0 + interval '20 seconds');
    -- "full" gets a fresh message, so it keeps one.
    perform regina.push('[{"queue":"k","partition":"full","payload":4,"transactionId":"d","messageId":"0196a000-0000-7000-8000-0000000009a4"}]',
                        i_now => t0 + interval '15 seconds');
    select id into old_id from regina.partitions where name = 'idle';

    select coalesce(sum(x.removed), 0) into n from regina.partition_cleanup(30, 1000, t0 + interval '29 days') x;
    assert n = 0, 'pushed to within 30 days: kept';
    select sum(x.removed) into n from regina.partition_cleanup(30, 1000, t0 + interval '31 days') x;
    assert n = 1, format('only the idle, empty partition without dead letters: %s', n);
    assert (select array_agg(name order by name) from regina.partitions) = '{Default,dead,full}',
        format('left: %s', (select array_agg(name) from regina.partitions));
    assert not exists (select 1 from regina.cursors where partition_id = old_id), 'its cursors are gone';
    assert not exists (select 1 from regina.ready where partition_id = old_id), 'its ready rows are gone';

    -- A later push re-creates it; g starts again by its subscription (from the beginning).
    perform regina.push('[{"queue":"k","partition":"idle","payload":5,"transactionId":"a","messageId":"0196a000-0000-7000-8000-0000000009a5"}]',
                        i_now => t0 + interval '32 days');
    select result into v from regina.pop('[{"queue":"k","partition":"idle","consumerGroup":"g","batch":5,"autoAck":true}]',
                                         t0 + interval '32 days');
    assert v -> 'messages' -> 0 ->> 'data' = '5', format('the new message is delivered: %s', v);
    assert (select id from regina.partitions where name = 'idle') <> old_id, 'a new partition';
end $$;
