-- Completing a later message inside a lease only marks it; if the lease then fails, the marked
-- message is delivered again (at-least-once), and nothing before the head is ever skipped.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v jsonb;
    pid text;
    l1 text := '0196a000-0000-7000-8000-0000000000f1';
begin
    perform regina.configure('{"queue":"o","options":{"retryLimit":9}}');
    perform regina.push('[{"queue":"o","partition":"p","payload":1,"transactionId":"a","messageId":"0196a000-0000-7000-8000-0000000000a1"},
                          {"queue":"o","partition":"p","payload":2,"transactionId":"b","messageId":"0196a000-0000-7000-8000-0000000000a2"},
                          {"queue":"o","partition":"p","payload":3,"transactionId":"c","messageId":"0196a000-0000-7000-8000-0000000000a3"}]',
                        i_now => t0);
    select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
        'queue','o','batch',3,'leaseId',l1)), t0);
    pid := v ->> 'partitionId';
    select result into v from regina.ack(jsonb_build_array(
        jsonb_build_object('transactionId','c','partitionId',pid,'leaseId',l1),
        jsonb_build_object('transactionId','a','partitionId',pid,'leaseId',l1,'status','failed')), t0);
    select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
        'queue','o','batch',3,'leaseId',gen_random_uuid())), t0 + interval '1 second');
    assert jsonb_array_length(v -> 'messages') = 3, format('a, b and c again: %s', v);
    assert v -> 'messages' -> 2 ->> 'transactionId' = 'c', format('c redelivered: %s', v);
    -- re-acking c with the failed lease is refused: that lease ended unsettled
    assert (select result ->> 'code' from regina.ack(jsonb_build_array(
        jsonb_build_object('transactionId','c','partitionId',pid,'leaseId',l1)), t0 + interval '2 seconds'))
        = 'lease_expired', 'failed lease is not an idempotent success';
end $$;
