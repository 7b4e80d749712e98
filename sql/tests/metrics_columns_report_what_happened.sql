-- The columns the broker's metrics read: pops report deliveries (with the ages of first
-- deliveries only), ttl expiries and lease expiries with their dead letters; acks and the sweep
-- report dead letters whether or not the queue keeps an entry; retention tells its two causes
-- apart.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    r record;
    e json;
    pid text;
    lease text;
begin
    perform regina.configure('{"queue":"m","options":{"leaseTime":5,"retryLimit":0}}');
    perform regina.push('[{"queue":"m","partition":"p","payload":1,"transactionId":"m1","messageId":"0196a000-0000-7000-8000-000000000a01"},
                          {"queue":"m","partition":"p","payload":2,"transactionId":"m2","messageId":"0196a000-0000-7000-8000-000000000a02"},
                          {"queue":"m","partition":"p","payload":3,"transactionId":"m3","messageId":"0196a000-0000-7000-8000-000000000a03"}]',
                        i_now => t0);

    -- A first delivery of two: both ages are reported, nothing else happened.
    select * into r from regina.pop('[{"queue":"m","batch":2,"leaseId":"0196a000-0000-7000-8000-000000000b01"}]',
                                    t0 + interval '1 second');
    e := r.events -> 0;
    assert json_array_length(r.events) = 1 and e ->> 'queue' = 'm'
           and (e ->> 'delivered')::int = 2 and json_array_length(e -> 'firstAgesMs') = 2
           and (e -> 'firstAgesMs' ->> 0)::float8 = 1000
           and (e ->> 'expired')::int = 0 and (e ->> 'leasesExpired')::int = 0
           and (e ->> 'deadLettered')::int = 0, format('first delivery: %s', r.events);

    -- The lease expires unacked; the next claim accounts it (retryLimit 0: m1 is dead-lettered)
    -- and delivers m2 again and m3 for the first time.
    select * into r from regina.pop('[{"queue":"m","batch":3,"leaseId":"0196a000-0000-7000-8000-000000000b02"}]',
                                    t0 + interval '10 seconds');
    e := r.events -> 0;
    assert (e ->> 'delivered')::int = 2 and json_array_length(e -> 'firstAgesMs') = 1
           and (e -> 'firstAgesMs' ->> 0)::float8 = 10000
           and (e ->> 'leasesExpired')::int = 1 and (e ->> 'deadLettered')::int = 1,
           format('expiry at claim: %s', r.events);
    pid := r.result ->> 'partitionId';
    lease := r.result ->> 'leaseId';

    -- m3 completed, then m2 failed: the failure dead-letters m2.
    select * into r from regina.ack(format('[{"transactionId":"m3","partitionId":"%s","leaseId":"%s"}]', pid, lease)::jsonb,
                                    t0 + interval '11 seconds');
    assert r.queue_name = 'm' and r.acked = 'completed' and r.dead_lettered = 0
           and r.leases_expired = 0, format('completed ack: %s', r);
    select * into r from regina.ack(format('[{"transactionId":"m2","partitionId":"%s","leaseId":"%s","status":"failed"}]', pid, lease)::jsonb,
                                    t0 + interval '11 seconds');
    assert r.acked = 'failed' and r.dead_lettered = 1, format('failed ack: %s', r);
    select * into r from regina.ack(format('[{"transactionId":"m2","partitionId":"%s","leaseId":"%s","status":"failed"}]', pid, lease)::jsonb,
                                    t0 + interval '11 seconds');
    assert r.acked is null and r.dead_lettered = 0 and r.queue_name = 'm',
           format('a refused ack applies nothing: %s', r);

    -- ttl: both messages expire at the head; nothing is delivered, the expiries are reported.
    perform regina.configure('{"queue":"t","options":{"ttl":5}}');
    perform regina.push('[{"queue":"t","partition":"p","payload":1,"transactionId":"t1","messageId":"0196a000-0000-7000-8000-000000000a11"},
                          {"queue":"t","partition":"p","payload":2,"transactionId":"t2","messageId":"0196a000-0000-7000-8000-000000000a12"}]',
                        i_now => t0);
    select * into r from regina.pop('[{"queue":"t","batch":5,"leaseId":"0196a000-0000-7000-8000-000000000b11"}]',
                                    t0 + interval '10 seconds');
    assert r.result ->> 'empty' = 'empty' and (r.events -> 0 ->> 'expired')::int = 2
           and (r.events -> 0 ->> 'delivered')::int = 0, format('ttl: %s %s', r.result, r.events);

    -- The sweep: the first expiry is a retry (retryLimit 1), the second a dead letter, and the
    -- redelivery between them is not a first delivery.
    perform regina.configure('{"queue":"s","options":{"leaseTime":5,"retryLimit":1,"deadLetterQueue":false}}');
    perform regina.push('[{"queue":"s","partition":"p","payload":1,"transactionId":"s1","messageId":"0196a000-0000-7000-8000-000000000a21"}]',
                        i_now => t0);
    perform regina.pop('[{"queue":"s","batch":1,"leaseId":"0196a000-0000-7000-8000-000000000b21"}]', t0);
    select * into r from regina.lease_sweep(10, t0 + interval '6 seconds');
    assert r.queue_name = 's' and not r.dead_lettered, format('first expiry: %s', r);
    select * into r from regina.pop('[{"queue":"s","batch":1,"leaseId":"0196a000-0000-7000-8000-000000000b22"}]',
                                    t0 + interval '7 seconds');
    assert (r.events -> 0 ->> 'delivered')::int = 1
           and json_typeof(r.events -> 0 -> 'firstAgesMs') = 'null', format('redelivery: %s', r.events);
    select * into r from regina.lease_sweep(10, t0 + interval '13 seconds');
    assert r.dead_lettered, format('second expiry dead-letters, without an entry: %s', r);
    assert not exists (select 1 from regina.dead_letters d
                       join regina.queues q on q.id = d.queue_id where q.name = 's'),
           'deadLetterQueue false keeps no entry';

    -- Retention: m0, m1 go for retentionSeconds; m2, m3 (settled, younger) for
    -- completedRetentionSeconds.
    perform regina.configure('{"queue":"r","options":{"retentionSeconds":100,"completedRetentionSeconds":10}}');
    perform regina.push('[{"queue":"r","partition":"p","payload":0,"transactionId":"r0","messageId":"0196a000-0000-7000-8000-000000000a30"},
                          {"queue":"r","partition":"p","payload":1,"transactionId":"r1","messageId":"0196a000-0000-7000-8000-000000000a31"}]',
                        i_now => t0);
    perform regina.push('[{"queue":"r","partition":"p","payload":2,"transactionId":"r2","messageId":"0196a000-0000-7000-8000-000000000a32"},
                          {"queue":"r","partition":"p","payload":3,"transactionId":"r3","messageId":"0196a000-0000-7000-8000-000000000a33"}]',
                        i_now => t0 + interval '50 seconds');
    perform regina.pop('[{"queue":"r","batch":10,"autoAck":true}]', t0 + interval '60 seconds');
    select * into r from regina.retention_run(1000, t0 + interval '120 seconds');
    assert r.queue_name = 'r' and r.removed = 4 and r.completed = 2, format('retention: %s', r);
end $$;
