-- regina.push_pop_text stores the push, then runs the pops of groups that subscribe to their
-- queue already, which see the pushed messages; a request whose group has not subscribed yet
-- does not run (no row, no subscription made). Its commit waits for the disk as a push's does,
-- even when every pop only claims (regina.pop_text turns that off for claims alone).
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v_rows integer;
    v_pushed text;
    v_leased json;
    v_auto json;
begin
    perform regina.configure('{"queue":"pp"}');
    -- Groups `leased` and `auto` subscribe (their first pops find nothing).
    perform regina.pop('[{"queue":"pp","consumerGroup":"leased","batch":1,"leaseId":"0196a000-0000-7000-8000-000000000a01"},
                         {"queue":"pp","consumerGroup":"auto","batch":1,"autoAck":true}]', t0);
    perform set_config('synchronous_commit', 'on', true);

    select count(*)::integer,
           max(r.result) filter (where not r.pop),
           max(r.result) filter (where r.pop and r.idx = 0)::json,
           max(r.result) filter (where r.pop and r.idx = 2)::json
    into v_rows, v_pushed, v_leased, v_auto
    from regina.push_pop_text(
        '[{"queue":"pp","partition":"p","transactionId":"t1","messageId":"0196a000-0000-7000-8000-000000000a11"}]',
        '[{"n":1}]',
        '[{"queue":"pp","consumerGroup":"leased","batch":5,"leaseId":"0196a000-0000-7000-8000-000000000a02"},
          {"queue":"pp","consumerGroup":"newcomer","batch":5,"leaseId":"0196a000-0000-7000-8000-000000000a03"},
          {"queue":"pp","consumerGroup":"auto","batch":5,"autoAck":true}]') r;

    assert v_rows = 3, format('one push row and two pop rows, none for the newcomer: %s', v_rows);
    assert v_pushed::json ->> 'status' = 'queued', format('pushed: %s', v_pushed);
    assert v_leased -> 'messages' -> 0 ->> 'transactionId' = 't1'
           and v_leased ->> 'leaseId' = '0196a000-0000-7000-8000-000000000a02',
        format('the leased pop saw the push: %s', v_leased);
    assert v_auto -> 'messages' -> 0 -> 'data' ->> 'n' = '1',
        format('the autoAck pop saw the push: %s', v_auto);
    assert not exists (select 1 from regina.subscriptions s where s.consumer_group = 'newcomer'),
        'a pop that did not run subscribed nothing';
    assert current_setting('synchronous_commit') = 'on',
        'the push''s commit waits for the disk whatever the pops are';

    -- No pop subscribed: the push alone.
    select count(*)::integer into v_rows
    from regina.push_pop_text(
        '[{"queue":"pp","partition":"p","transactionId":"t2","messageId":"0196a000-0000-7000-8000-000000000a12"}]',
        '[{"n":2}]',
        '[{"queue":"pp","consumerGroup":"newcomer","batch":5,"autoAck":true}]') r;
    assert v_rows = 1, format('the push''s row only: %s', v_rows);
end $$;
