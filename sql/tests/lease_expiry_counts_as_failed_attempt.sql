-- A consumer that never acks: each expiry charges the head; after retryLimit + 1 deliveries the
-- head is dead-lettered with a copy of its payload, and the next message becomes deliverable.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    i integer;
begin
    perform regina.configure('{"queue":"q","options":{"leaseTime":10,"retryLimit":2}}');
    perform regina.push(jsonb_build_array(
        jsonb_build_object('queue','q','partition','p','payload',jsonb_build_object('k',1),
                           'transactionId','a','messageId',gen_random_uuid()),
        jsonb_build_object('queue','q','partition','p','payload',2,
                           'transactionId','b','messageId',gen_random_uuid())), i_now => t0);
    for i in 0..2 loop
        select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
            'queue','q','batch',1,'leaseId',gen_random_uuid())), t0 + (i * 11) * interval '1 second');
        assert v -> 'messages' -> 0 ->> 'transactionId' = 'a', format('delivery %s: %s', i, v);
        assert (v -> 'messages' -> 0 ->> 'retryCount')::int = i, format('retryCount %s: %s', i, v);
    end loop;
    -- third expiry: attempts 3 > retryLimit 2 → dead letter; "b" is next
    select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
        'queue','q','batch',1,'leaseId',gen_random_uuid())), t0 + 33 * interval '1 second');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'b', format('after dlq: %s', v);
    assert (select count(*) from regina.dead_letters d
            where d.transaction_id = 'a' and d.retry_count = 2 and d.error_message = 'Lease expired'
              and d.payload::jsonb = '{"k":1}'::jsonb) = 1, 'dead letter with payload copy';
end $$;
