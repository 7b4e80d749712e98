-- A pop over a namespace that finds nothing due answers with the earliest instant any of its
-- queues has work again (each queue's ready set read in claim order, then the least of them).
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    q text;
begin
    perform regina.configure('{"queue":"wk.slow","options":{"retryDelay":5000,"retryLimit":5}}');
    perform regina.configure('{"queue":"wk.fast","options":{"retryDelay":3000,"retryLimit":5}}');
    foreach q in array array['wk.slow', 'wk.fast'] loop
        perform regina.push(jsonb_build_array(jsonb_build_object(
                    'queue', q, 'partition', 'p', 'payload', 1, 'transactionId', q || '-m1',
                    'messageId', gen_random_uuid())), i_now => t0);
        select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
                   'queue', q, 'batch', 1, 'leaseId', '0196a000-0000-7000-8000-0000000000f1')), t0);
        assert v -> 'messages' -> 0 ->> 'transactionId' = q || '-m1', format('leased: %s', v);
        perform regina.ack(jsonb_build_array(jsonb_build_object(
                    'transactionId', q || '-m1', 'partitionId', v ->> 'partitionId',
                    'status', 'failed', 'leaseId', '0196a000-0000-7000-8000-0000000000f1',
                    'error', 'bad')), t0);
    end loop;

    select result into v from regina.pop('[{"namespace":"wk","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000000f2"}]',
                                         t0 + interval '1 second');
    assert v ->> 'empty' = 'empty' and v ->> 'wakeAt' = '2026-01-01T00:00:03.000000Z',
        format('both resting, the fast one first: %s', v);

    select result into v from regina.pop('[{"namespace":"wk","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000000f3"}]',
                                         t0 + interval '3 seconds');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'wk.fast-m1', format('fast one due: %s', v);

    select result into v from regina.pop('[{"namespace":"wk","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000000f4"}]',
                                         t0 + interval '4 seconds');
    assert v ->> 'empty' = 'empty' and v ->> 'wakeAt' = '2026-01-01T00:00:05.000000Z',
        format('the slow one rests, the fast one is leased: %s', v);
end $$;
