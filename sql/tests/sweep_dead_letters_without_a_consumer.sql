-- The leader's sweep accounts expiries even when no consumer returns.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    r record;
    n integer := 0;
begin
    perform regina.configure('{"queue":"s","options":{"leaseTime":5,"retryLimit":0}}');
    perform regina.push('[{"queue":"s","partition":"p","payload":1,"transactionId":"x",
                           "messageId":"0196a000-0000-7000-8000-0000000000c1"}]', i_now => t0);
    perform regina.pop('[{"queue":"s","batch":1,"leaseId":"0196a000-0000-7000-8000-0000000000c2"}]', t0);
    for r in select * from regina.lease_sweep(10, t0 + interval '4 seconds') loop n := n + 1; end loop;
    assert n = 0, 'no expiry before the lease ends';
    for r in select * from regina.lease_sweep(10, t0 + interval '6 seconds') loop
        assert r.queue_name = 's' and r.consumer_group = '__QUEUE_MODE__', format('%s', r);
        n := n + 1;
    end loop;
    assert n = 1, 'one lease swept';
    assert (select count(*) from regina.dead_letters) = 1, 'retryLimit 0 dead-letters at once';
    assert (select result ->> 'code' from regina.lease_extend(
            '[{"leaseId":"0196a000-0000-7000-8000-0000000000c2"}]', t0 + interval '7 seconds'))
           = 'lease_expired', 'an ended lease cannot be revived';
end $$;
