-- A failed ack rests the partition for retryDelay; when the head is finally completed its
-- attempt count resets, so the next message starts at retryCount 0.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    pid text;
    lease text;
begin
    perform regina.configure('{"queue":"r","options":{"retryDelay":5000,"retryLimit":5}}');
    perform regina.push('[{"queue":"r","partition":"p","payload":1,"transactionId":"m1","messageId":"0196a000-0000-7000-8000-0000000000d1"},
                          {"queue":"r","partition":"p","payload":2,"transactionId":"m2","messageId":"0196a000-0000-7000-8000-0000000000d2"}]',
                        i_now => t0);
    select result into v from regina.pop('[{"queue":"r","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000000e1"}]', t0);
    pid := v ->> 'partitionId';
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId','m1','partitionId',pid,
        'status','failed','leaseId','0196a000-0000-7000-8000-0000000000e1','error','bad')), t0);
    select result into v from regina.pop('[{"queue":"r","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000000e2"}]',
                                         t0 + interval '4 seconds');
    assert v ->> 'empty' = 'empty' and v ->> 'wakeAt' = '2026-01-01T00:00:05.000000Z', format('resting: %s', v);
    select result into v from regina.pop('[{"queue":"r","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000000e3"}]',
                                         t0 + interval '5 seconds');
    assert v -> 'messages' -> 0 ->> 'retryCount' = '1', format('redelivered: %s', v);
    perform regina.ack(jsonb_build_array(jsonb_build_object('transactionId','m1','partitionId',pid,
        'leaseId','0196a000-0000-7000-8000-0000000000e3')), t0 + interval '6 seconds');
    select result into v from regina.pop('[{"queue":"r","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000000e4"}]',
                                         t0 + interval '7 seconds');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'm2'
       and v -> 'messages' -> 0 ->> 'retryCount' = '0', format('next head: %s', v);
end $$;
