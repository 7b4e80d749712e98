-- An autoAck pop waits for the WAL flush unless its caller turned `synchronous_commit` off for
-- the transaction (the broker does with AUTO_ACK_COMMIT_ASYNC), and delivers and settles exactly
-- as it would otherwise. A pop that only claims never waits.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v json;
begin
    perform regina.push('[{"queue":"a","partition":"p","payload":1,"transactionId":"a1","messageId":"0196a000-0000-7000-8000-0000000009c1"},
                          {"queue":"a","partition":"p","payload":2,"transactionId":"a2","messageId":"0196a000-0000-7000-8000-0000000009c2"},
                          {"queue":"a","partition":"p","payload":3,"transactionId":"a3","messageId":"0196a000-0000-7000-8000-0000000009c3"}]',
                        i_now => t0);
    perform set_config('synchronous_commit', 'on', true);

    select result into v from regina.pop('[{"queue":"a","batch":1,"autoAck":true}]', t0);
    assert current_setting('synchronous_commit') = 'on', 'an autoAck pop waits for the flush by default';
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'a1', format('first delivery: %s', v);

    perform set_config('synchronous_commit', 'off', true);
    select result into v from regina.pop('[{"queue":"a","batch":1,"autoAck":true}]', t0);
    assert current_setting('synchronous_commit') = 'off', 'the caller''s choice stands';
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'a2', format('second delivery: %s', v);
    assert (select c.next_seq from regina.cursors c) = 2, 'both settled: the head moved past both';

    perform set_config('synchronous_commit', 'on', true);
    select result into v from regina.pop('[{"queue":"a","batch":1,"consumerGroup":"claims"}]', t0);
    assert current_setting('synchronous_commit') = 'off', 'a pop that only claims does not wait';
    assert v -> 'messages' -> 0 ->> 'transactionId' = 'a1', format('claimed: %s', v);
end $$;
