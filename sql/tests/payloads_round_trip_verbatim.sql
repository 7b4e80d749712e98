-- Payloads are stored as sent: U+0000, number spelling, key order and duplicate keys survive,
-- and the dead-letter copy keeps the same text.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v_sent text := '{"s":"a\u0000b","n":1.50,"z":1,"a":[true,null]}';
    v json;
begin
    perform regina.configure('{"queue":"v","options":{"retryLimit":0}}');
    perform regina.push('[{"queue":"v","partition":"p","transactionId":"x",
                           "messageId":"0196a000-0000-7000-8000-0000000000b1"}]',
                        json_build_array(v_sent::json), i_now => t0);
    select result into v from regina.pop('[{"queue":"v","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000000b2"}]', t0);
    assert position(v_sent in v::text) > 0, format('verbatim payload in %s', v);
    perform regina.ack(json_build_array(json_build_object('transactionId','x',
        'partitionId', (select p.uuid from regina.partitions p where p.name = 'p'),
        'leaseId','0196a000-0000-7000-8000-0000000000b2','status','failed'))::jsonb, t0);
    assert (select payload::text from regina.dead_letters) = v_sent, 'dead letter keeps the text';
end $$;
