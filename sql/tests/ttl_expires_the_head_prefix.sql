-- Messages past their ttl are settled as expired when a claim meets them at the head, and
-- never delivered; newer messages behind them are.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v json;
begin
    perform regina.configure('{"queue":"e","options":{"ttl":10}}');
    perform regina.push('[{"queue":"e","partition":"p","payload":1,"transactionId":"old1","messageId":"0196a000-0000-7000-8000-0000000000c1"},
                          {"queue":"e","partition":"p","payload":2,"transactionId":"old2","messageId":"0196a000-0000-7000-8000-0000000000c2"}]',
                        i_now => t0);
    perform regina.push('[{"queue":"e","partition":"p","payload":3,"transactionId":"new","messageId":"0196a000-0000-7000-8000-0000000000c3"}]',
                        i_now => t0 + interval '5 seconds');
    select result into v from regina.pop('[{"queue":"e","batch":10,"leaseId":"0196a000-0000-7000-8000-0000000000c4"}]',
                                         t0 + interval '12 seconds');
    assert json_array_length(v -> 'messages') = 1 and v -> 'messages' -> 0 ->> 'transactionId' = 'new',
        format('only the unexpired message: %s', v);
    select result into v from regina.pop('[{"queue":"e","consumerGroup":"g","batch":10,"leaseId":"0196a000-0000-7000-8000-0000000000c5"}]',
                                         t0 + interval '20 seconds');
    assert v ->> 'empty' = 'empty', format('everything expired for a late group: %s', v);
    assert (select count(*) from regina.messages) = 3, 'expired messages stay stored';
end $$;
