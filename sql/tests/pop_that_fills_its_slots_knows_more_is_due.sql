-- A pop request that runs out of slots or budget while more is due answers its group's quiet as
-- "something may be due" (null) from the row its last read found past its candidates, without a
-- second read of the ready set from its front; one that took the last due rows tells the group
-- quiet, from the same read.
do $$
declare
    t0 timestamptz := '2026-04-01T00:00:00Z';
    r record;
begin
    perform regina.configure('{"queue":"fs","options":{"leaseTime":60}}');
    -- The group exists before the pushes, so that they ready its rows.
    perform regina.pop('[{"queue":"fs","consumerGroup":"g","autoAck":true}]',
                       t0 - interval '1 second');
    for i in 0 .. 4 loop
        perform pg_temp.push_numbered('fs', 'p' || i, 'm-', i, i, t0 + i * interval '1 second');
    end loop;
    perform set_config('track_functions', 'pl', true);

    -- Five partitions due, two slots: two delivered, three left due.
    select * into r from regina.pop(
        '[{"queue":"fs","consumerGroup":"g","batch":10,"partitions":2,"autoAck":true,"quiet":true}]',
        t0 + interval '10 seconds');
    assert (r.result ->> 'partitionsClaimed')::int = 2, format('two partitions: %s', r.result);
    assert r.quiet is null, format('more is due: not quiet, got %s', r.quiet);
    assert not exists (select 1 from pg_stat_xact_user_functions
                       where schemaname = 'regina' and funcname = '_ready_next'),
        'known without reading the ready set again';

    -- Ten slots, a budget of one message: one delivered, two left due.
    select * into r from regina.pop(
        '[{"queue":"fs","consumerGroup":"g","batch":1,"partitions":10,"autoAck":true,"quiet":true}]',
        t0 + interval '11 seconds');
    assert json_array_length(r.result -> 'messages') = 1, format('one message: %s', r.result);
    assert r.quiet is null, format('more is due: not quiet, got %s', r.quiet);
    assert not exists (select 1 from pg_stat_xact_user_functions
                       where schemaname = 'regina' and funcname = '_ready_next'),
        'known without reading the ready set again, at the budget too';

    -- The last two, with two slots: everything due is taken in one round, and the group is
    -- quiet until a push.
    select * into r from regina.pop(
        '[{"queue":"fs","consumerGroup":"g","batch":10,"partitions":2,"autoAck":true,"quiet":true}]',
        t0 + interval '12 seconds');
    assert (r.result ->> 'partitionsClaimed')::int = 2, format('two partitions: %s', r.result);
    assert r.quiet = 'infinity', format('all settled: quiet until a push, got %s', r.quiet);
    assert (select calls from pg_stat_xact_user_functions
            where schemaname = 'regina' and funcname = '_ready_candidates') = 3,
        'one read of the ready rows per request';
    assert not exists (select 1 from regina.ready where consumer_group = 'g'), 'all drained';
end
$$;
