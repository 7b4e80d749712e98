-- A push of a few items, each to a partition that exists, of a queue without maxSize whose
-- encryption it satisfies, is stored by regina._push_few in a few keyed statements; it must store
-- exactly what the batch path (regina._push_batch) stores: the same result texts, messages,
-- partition rows and ready rows. Anything else it must decline before writing anything.
--
-- A random walk of pushes of one to ten items over four partitions of two queues (one with a
-- delay), with keys repeated inside a push and across pushes, traces, producers, sealed payloads,
-- a clock that sometimes steps back, and pops that drain partitions (so pushes make ready rows
-- again). Each push first runs the batch path in a subtransaction that is then undone, then
-- _push_few, and compares the two. Then the cases it declines.

-- A push_text call of i_n items with keys i_prefix || k over partitions p1..p4 of queue fa.
create function pg_temp.push_spread(i_prefix text, i_n integer, i_now timestamptz) returns void
language plpgsql as $$
begin
    perform regina.push_text((select jsonb_agg(jsonb_build_object(
                                  'queue', 'fa', 'partition', 'p' || (1 + k % 4),
                                  'transactionId', i_prefix || k, 'messageId', gen_random_uuid()))
                              from generate_series(1, i_n) k), null, false, i_now);
end
$$;

-- regina.push_text takes _push_few for a call of two to eight items, the batch path for more and
-- for what _push_few declines. (First in the file: a PL/pgSQL call site decides once per session
-- whether it counts its calls, as it first runs.)
set track_functions = 'pl';
do $$
declare
    t timestamptz := '2026-08-01T00:00:00Z';
begin
    perform regina.configure('{"queue":"fa"}');
    perform pg_temp.push_spread('r0-', 8, t);
    assert pg_temp.calls('_push_few') = 1 and pg_temp.calls('_push_batch') = 1,
        format('eight items to partitions to create: %s few, %s batch', pg_temp.calls('_push_few'),
               pg_temp.calls('_push_batch'));
    assert pg_temp.partition_id('fa', 'p4') is not null, 'the batch path created them';
    perform pg_temp.push_spread('r8-', 8, t);
    assert pg_temp.calls('_push_few') = 2 and pg_temp.calls('_push_batch') = 1,
        format('eight items: %s few, %s batch', pg_temp.calls('_push_few'), pg_temp.calls('_push_batch'));
    perform pg_temp.push_spread('r9-', 9, t);
    assert pg_temp.calls('_push_few') = 2 and pg_temp.calls('_push_batch') = 2,
        format('nine items: %s few, %s batch', pg_temp.calls('_push_few'), pg_temp.calls('_push_batch'));
    assert (select count(*) from regina.messages) = 25, 'every item stored';
    assert not exists (select 1 from regina.push_text('[]', '[]', false, t)),
        'a push of no items answers nothing';
    assert pg_temp.calls('_push_few') = 2 and pg_temp.calls('_push_batch') = 3,
        format('no items: %s few, %s batch', pg_temp.calls('_push_few'), pg_temp.calls('_push_batch'));
end
$$;
reset track_functions;

-- The messages, partitions and ready rows of queues fa and fb.
create function pg_temp.few_state() returns jsonb
language sql as $$
    select jsonb_build_object(
        'messages', (select jsonb_agg(to_jsonb(m) order by m.partition_id, m.seq)
                     from regina.messages m join regina.partitions p on p.id = m.partition_id
                     join regina.queues q on q.id = p.queue_id where q.name in ('fa', 'fb')),
        'partitions', (select jsonb_agg(jsonb_build_array(p.id, p.next_seq, p.last_created_at,
                                                          p.last_push_at) order by p.id)
                       from regina.partitions p join regina.queues q on q.id = p.queue_id
                       where q.name in ('fa', 'fb')),
        'ready', (select jsonb_agg(to_jsonb(r) order by r.partition_id, r.consumer_group)
                  from regina.ready r join regina.queues q on q.id = r.queue_id
                  where q.name in ('fa', 'fb')))
$$;

-- The batch path's results for i_items, undone; then _push_few's, kept. o_few is null when
-- _push_few declined (and then nothing may have changed).
create function pg_temp.push_compared(i_items jsonb, i_payloads json, i_now timestamptz,
                                      out o_few text[], out o_batch text[])
language plpgsql as $$
declare
    v_before jsonb := pg_temp.few_state();
    v_batch_state jsonb;
begin
    begin
        o_batch := array(select b.result
                         from regina._push_batch(i_items, i_payloads, false, i_now, false) b
                         order by b.idx);
        v_batch_state := pg_temp.few_state();
        raise exception 'undo the batch path';
    exception when raise_exception then
        if sqlerrm <> 'undo the batch path' then
            raise;
        end if;
    end;
    assert pg_temp.few_state() is not distinct from v_before, 'the undo undid it';
    o_few := regina._push_few(i_items, i_payloads, false, i_now);
    if o_few is null then
        assert pg_temp.few_state() is not distinct from v_before,
            format('a decline writes nothing: %s', i_items);
        return;
    end if;
    assert o_few = o_batch,
        format('%s at %s: the same results: few %s, batch %s', i_items, i_now, o_few, o_batch);
    assert pg_temp.few_state() is not distinct from v_batch_state,
        format('%s at %s: the same rows: few %s, batch %s', i_items, i_now, pg_temp.few_state(),
               v_batch_state);
end
$$;

do $$
declare
    t timestamptz := '2026-08-01T00:00:00Z';
    v_step integer;
    v_n integer;
    v_items jsonb;
    v_payloads jsonb;
    v_item jsonb;
    v_got record;
    v_keys text[];
    v_parts text[];
    v_pushes integer := 0;
    v_in_batch_dups integer := 0;
    v_stored_dups integer := 0;
    v_shared_partition integer := 0;
    v_two_queues integer := 0;
    v_readied integer := 0;
    v_back integer := 0;
    v_ready_before bigint;
begin
    perform setseed(0.61);
    perform regina.configure('{"queue":"fa"}');
    perform regina.configure('{"queue":"fb","options":{"delayedProcessing":5}}');
    -- The partitions exist (a push of the batch path creates them), and group g subscribes.
    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', q, 'partition', 'p' || k, 'transactionId', q || '-0-' || k,
                             'messageId', gen_random_uuid(), 'payload', k))
                         from unnest(array['fa', 'fb']) q, generate_series(1, 4) k),
                        i_now => t);
    perform regina.pop('[{"queue":"fa","consumerGroup":"g","autoAck":true,"partitions":4,"batch":10}]', t);
    perform regina.pop('[{"queue":"fb","consumerGroup":"g","autoAck":true,"partitions":4,"batch":10}]',
                       t + interval '10 seconds');

    for v_step in 1 .. 400 loop
        if random() < 0.1 then
            t := t - (random() * 3000)::integer * interval '1 ms';   -- a clock stepping back
            v_back := v_back + 1;
        else
            t := t + (random() * 2000)::integer * interval '1 ms';
        end if;
        if random() < 0.25 then
            perform regina.pop(jsonb_build_array(jsonb_build_object(
                         'queue', case when random() < 0.5 then 'fa' else 'fb' end,
                         'consumerGroup', 'g', 'autoAck', true, 'partitions', 4, 'batch', 20)),
                     t + interval '10 seconds');
        end if;
        v_n := 1 + (random() * 9)::integer;
        v_items := '[]';
        v_payloads := '[]';
        for k in 1 .. v_n loop
            v_item := jsonb_build_object(
                'queue', case when random() < 0.7 then 'fa' else 'fb' end,
                'partition', 'p' || (1 + (random() * 3)::integer),
                -- Keys from a small pool: some repeat inside a push, some were stored before.
                'transactionId', 'k' || (random() * 600)::integer,
                'messageId', gen_random_uuid());
            if k > 1 and random() < 0.15 then   -- an earlier item's key again
                v_item := v_item || (select jsonb_build_object(
                                                'queue', e ->> 'queue', 'partition', e ->> 'partition',
                                                'transactionId', e ->> 'transactionId')
                                     from jsonb_array_elements(v_items) e
                                     order by random() limit 1);
            end if;
            if random() < 0.3 then
                v_item := v_item || jsonb_build_object('traceId',
                                                       case when random() < 0.3 then '' else 'tr-' || k end);
            end if;
            if random() < 0.3 then
                v_item := v_item || '{"producerSub":"alice"}';
            end if;
            if random() < 0.2 then
                v_item := v_item || '{"payloadKeyId":"key-1"}';
            end if;
            v_items := v_items || jsonb_build_array(v_item);
            v_payloads := v_payloads || jsonb_build_array(
                case when random() < 0.5 then to_jsonb(v_step * 100 + k)
                     else jsonb_build_object('s', 'x' || k, 'n', k) end);
        end loop;
        v_keys := array(select (e ->> 'queue') || '/' || (e ->> 'partition') || '/' || (e ->> 'transactionId')
                        from jsonb_array_elements(v_items) e);
        v_parts := array(select (e ->> 'queue') || '/' || (e ->> 'partition')
                         from jsonb_array_elements(v_items) e);
        if (select count(distinct k) from unnest(v_keys) k) < v_n then
            v_in_batch_dups := v_in_batch_dups + 1;
        end if;
        if (select count(distinct k) from unnest(v_parts) k) < v_n then
            v_shared_partition := v_shared_partition + 1;
        end if;
        if (select count(distinct e ->> 'queue') from jsonb_array_elements(v_items) e) = 2 then
            v_two_queues := v_two_queues + 1;
        end if;
        if exists (select 1 from jsonb_array_elements(v_items) e
                   join regina.queues q on q.name = e ->> 'queue'
                   join regina.partitions p on p.queue_id = q.id and p.name = e ->> 'partition'
                   join regina.messages m on m.partition_id = p.id
                                         and m.transaction_id = e ->> 'transactionId') then
            v_stored_dups := v_stored_dups + 1;
        end if;
        v_ready_before := (select count(*) from regina.ready);
        v_got := pg_temp.push_compared(v_items, v_payloads::json, t);
        assert v_got.o_few is not null, format('a plain push of existing partitions: %s', v_items);
        if (select count(*) from regina.ready) > v_ready_before then
            v_readied := v_readied + 1;
        end if;
        v_pushes := v_pushes + 1;
    end loop;
    -- The walk went through every case.
    assert v_pushes = 400 and v_in_batch_dups > 20 and v_stored_dups > 50
           and v_shared_partition > 50 and v_two_queues > 50 and v_readied > 20 and v_back > 10,
        format('cases: %s pushes, %s with a key twice, %s with a stored key, %s with a partition twice, '
               '%s over two queues, %s that made ready rows, %s steps back',
               v_pushes, v_in_batch_dups, v_stored_dups, v_shared_partition, v_two_queues,
               v_readied, v_back);
end
$$;

-- What _push_few declines, before writing anything: a partition or queue to create, a capped
-- queue, plaintext to a queue that encrypts, in any item of the push.
do $$
declare
    t timestamptz := '2026-08-02T00:00:00Z';
    v_ok jsonb := '{"queue":"fa","partition":"p1","transactionId":"d-ok","messageId":"0196a000-0000-7000-8000-0000000000e0"}';
    v_bad jsonb;
    v_before jsonb;
begin
    perform regina.configure('{"queue":"fc","options":{"maxSize":100}}');
    perform regina.configure('{"queue":"fe","options":{"encryptionEnabled":true}}');
    perform regina.push('[{"queue":"fc","partition":"p1","transactionId":"c0","messageId":"0196a000-0000-7000-8000-0000000000e1"},
                          {"queue":"fe","partition":"p1","transactionId":"e0","payloadKeyId":"key-1","messageId":"0196a000-0000-7000-8000-0000000000e2"}]',
                        '[0, 0]', i_now => t);
    foreach v_bad in array array[
        '{"queue":"fa","partition":"new","transactionId":"d1","messageId":"0196a000-0000-7000-8000-0000000000e3"}',
        '{"queue":"nope","partition":"p1","transactionId":"d2","messageId":"0196a000-0000-7000-8000-0000000000e4"}',
        '{"queue":"fc","partition":"p1","transactionId":"d3","messageId":"0196a000-0000-7000-8000-0000000000e5"}',
        '{"queue":"fe","partition":"p1","transactionId":"d4","messageId":"0196a000-0000-7000-8000-0000000000e6"}']::jsonb[] loop
        v_before := pg_temp.few_state();
        assert regina._push_few(jsonb_build_array(v_ok, v_bad), '[0, 0]', false, t) is null,
            format('declined: %s', v_bad);
        assert regina._push_few(jsonb_build_array(v_bad, v_ok), '[0, 0]', false, t) is null,
            format('declined, second: %s', v_bad);
        assert pg_temp.few_state() is not distinct from v_before
               and not exists (select 1 from regina.messages where transaction_id like 'd%'),
            format('nothing written for %s', v_bad);
    end loop;
    assert regina._push_few(jsonb_build_array(v_ok,
               '{"queue":"fe","partition":"p1","transactionId":"d5","payloadKeyId":"key-1","messageId":"0196a000-0000-7000-8000-0000000000e7"}'::jsonb),
               '[0, 0]', false, t) is not null,
        'a sealed payload to a queue that encrypts is stored';
end
$$;
