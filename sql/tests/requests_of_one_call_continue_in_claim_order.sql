-- The requests of one pop call for the same queue and group go on from where the request before
-- them stopped in claim order, instead of reading again the ready rows it claimed: together
-- they deliver the group's partitions longest waiting first, each once, a partition that has
-- more comes back for a later request, and the last request still tells quiet right.
do $$
declare
    t0 timestamptz := '2026-03-01T00:00:00Z';
    got text[] := '{}';
    quiets text[] := '{}';
    req jsonb := '{"queue":"co","consumerGroup":"g","batch":2,"partitions":2,"autoAck":true,"quiet":true}';
    r record;
begin
    perform regina.configure('{"queue":"co","options":{}}');
    -- The group subscribes before anything is pushed, so each push adds its ready row then.
    perform regina.pop(jsonb_build_array(req), t0 - interval '1 second');
    -- Four partitions of one message, made due one second apart (p3 first), and p9 with three
    -- messages, due last.
    for i in 0 .. 3 loop
        perform regina.push(jsonb_build_array(jsonb_build_object(
                    'queue', 'co', 'partition', 'p' || (3 - i), 'payload', i,
                    'transactionId', 'one-' || i, 'messageId', gen_random_uuid())),
                i_now => t0 + i * interval '1 second');
    end loop;
    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', 'co', 'partition', 'p9', 'payload', i,
                             'transactionId', 'deep-' || i, 'messageId', gen_random_uuid())
                             order by i)
                         from generate_series(0, 2) i),
                        i_now => t0 + interval '5 seconds');
    for r in select * from regina.pop(jsonb_build_array(req, req, req, req, req),
                                      t0 + interval '10 seconds') loop
        if r.result -> 'messages' is not null then
            got := got || array(select m ->> 'partition' || ':' || (m ->> 'data')
                                from json_array_elements(r.result -> 'messages') m);
        end if;
        quiets := quiets || coalesce(r.quiet, 'null');
    end loop;
    -- Requests 1 and 2: the four single partitions, longest waiting first; 3: two messages of
    -- p9, which goes to the back of the line with one left; 4: that one; 5: nothing.
    assert got[1:4] = array['p3:0', 'p2:1', 'p1:2', 'p0:3'],
        format('single partitions in claim order, each once: %s', got);
    assert got[5:7] = array['p9:0', 'p9:1', 'p9:2'], format('then p9, in offset order: %s', got);
    assert cardinality(got) = 7, format('each message once: %s', got);
    assert quiets[5] = 'infinity', format('the last request finds nothing: quiet, got %s', quiets);
    assert not exists (select 1 from regina.ready where consumer_group = 'g'), 'all drained';
end $$;
