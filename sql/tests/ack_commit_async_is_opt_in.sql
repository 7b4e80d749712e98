-- ACK_COMMIT_ASYNC: an ack call commits without waiting for the WAL flush only when asked to,
-- and settles exactly as a synchronous one.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v json;
    pid text;
    lease text := '0196a000-0000-7000-8000-0000000009a1';
begin
    perform regina.push('[{"queue":"a","partition":"p","payload":1,"transactionId":"a1","messageId":"0196a000-0000-7000-8000-0000000009b1"},
                          {"queue":"a","partition":"p","payload":2,"transactionId":"a2","messageId":"0196a000-0000-7000-8000-0000000009b2"}]',
                        i_now => t0);
    select result into v from regina.pop(format('[{"queue":"a","batch":2,"leaseId":"%s"}]', lease)::jsonb, t0);
    pid := v ->> 'partitionId';
    -- (A pop that only claims commits without waiting: that setting lasts to the end of this
    -- test's transaction, so it is set back first.)
    perform set_config('synchronous_commit', 'on', true);

    perform regina.ack(format('[{"transactionId":"a1","partitionId":"%s","leaseId":"%s"}]', pid, lease)::jsonb, t0);
    assert current_setting('synchronous_commit') = 'on', 'an ack waits for the flush by default';

    select result into v from regina.ack(format('[{"transactionId":"a2","partitionId":"%s","leaseId":"%s"}]', pid, lease)::jsonb,
                                         t0, i_commit_async => true);
    assert current_setting('synchronous_commit') = 'off', 'asked to, it does not';
    assert (v ->> 'success')::boolean and (v ->> 'leaseReleased')::boolean, format('settled: %s', v);
    assert (select c.next_seq from regina.cursors c) = 2, 'the head moved past both';
end $$;
