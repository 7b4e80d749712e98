-- A group subscribed from a timestamp starts at the first message created at or after it,
-- found by binary search over offsets (createdAt never decreases along a partition).
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    i integer;
    v jsonb;
begin
    for i in 0..99 loop
        perform regina.push(jsonb_build_array(jsonb_build_object('queue','t','partition','p',
            'payload',i,'transactionId','m' || i,'messageId',gen_random_uuid())),
            i_now => t0 + i * interval '1 second');
    end loop;
    select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
        'queue','t','consumerGroup','late','subscriptionFrom','2026-01-01T00:00:37Z',
        'batch',2,'leaseId',gen_random_uuid())), t0 + interval '200 seconds');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'm37', format('from 37: %s', v);
    assert v -> 'messages' -> 1 ->> 'transactionId' = 'm38', format('then 38: %s', v);
    select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
        'queue','t','consumerGroup','fresh','subscriptionMode','new',
        'batch',1,'leaseId',gen_random_uuid())), t0 + interval '200 seconds');
    assert v ->> 'empty' = 'empty', format('new mode skips history: %s', v);
    select result into v from regina.pop(jsonb_build_array(jsonb_build_object(
        'queue','t','consumerGroup','all','batch',1,'leaseId',gen_random_uuid())),
        t0 + interval '200 seconds');
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'm0', format('all from the start: %s', v);
end $$;
