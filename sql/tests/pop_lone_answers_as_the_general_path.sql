-- A pop call of one request in the plain case is answered by regina._pop_lone in a few
-- statements; it must answer exactly as the general path (regina._pop_one) would: the same
-- result text, events and quiet, and the same cursors and ready rows after. Where it is not the
-- plain case it must decline before writing anything.
--
-- A random walk of pushes, pops (autoAck and leases, batches that cut partitions and ones that
-- drain them, quiet or not), acks that complete or fail, leases left to expire, and requeued
-- dead letters, over a few partitions and two groups. Each pop first runs the general path in a
-- subtransaction that is then undone, then _pop_lone for real, and compares the two; where
-- _pop_lone declines, the state must be as before and the general path runs for real. The walk
-- must have gone through every case that matters, on both paths. And regina.pop_text takes this
-- path for a call of one request.

-- regina.pop_text answers a call of one plain request, or of a run of alike ones, by _pop_lone
-- alone, and a call of requests that are not alike by the general path. (First in the file: a
-- PL/pgSQL call site decides once per transaction whether it counts its calls, as it first runs.)
set track_functions = 'pl';

do $$
declare
    t timestamptz := '2026-07-01T00:00:00Z';
begin
    perform regina.configure('{"queue":"lw"}');
    perform pg_temp.push_numbered('lw', 'p', 'w-', 1, 3, t);
    perform regina.pop('[{"queue":"lw","consumerGroup":"g","autoAck":true}]', t);
    perform regina.pop('[{"queue":"lw","consumerGroup":"g","autoAck":true}]', t);
    perform regina.pop('[{"queue":"lw","consumerGroup":"g","autoAck":true}]', t);
end
$$;
do $$
declare
    v_lone bigint := pg_temp.calls('_pop_lone');
    v_one bigint := pg_temp.calls('_pop_one');
    v_got jsonb;
begin
    -- The first call subscribed (the general path after a decline); the next two were plain.
    assert v_lone = 3 and v_one = 1, format('one-request calls: %s lone, %s general', v_lone, v_one);
    perform pg_temp.push_numbered('lw', 'p', 'x-', 1, 2, '2026-07-01T00:00:01Z');
    v_got := (select jsonb_agg(p.result) from regina.pop(
                  '[{"queue":"lw","consumerGroup":"g","autoAck":true,"batch":2},
                    {"queue":"lw","consumerGroup":"h","autoAck":true}]',
                  '2026-07-01T00:00:02Z') p);
    assert pg_temp.calls('_pop_lone') = 4 and pg_temp.calls('_pop_one') = 3,
        'a call of two requests not alike is declined and served one request at a time';
    assert v_got -> 0 -> 'messages' -> 1 ->> 'transactionId' = 'x-2', format('served: %s', v_got);
    perform pg_temp.push_numbered('lw', 'q', 'y-', 1, 1, '2026-07-01T00:00:03Z');
    perform pg_temp.push_numbered('lw', 'r', 'z-', 1, 1, '2026-07-01T00:00:03Z');
    -- (Cursors for the new partitions first: a missing one sends a call to the general path.)
    perform regina.pop('[{"queue":"lw","consumerGroup":"g","autoAck":true,"partitions":2,"batch":2}]',
                       '2026-07-01T00:00:04Z');
    perform pg_temp.push_numbered('lw', 'q', 'y-', 2, 2, '2026-07-01T00:00:05Z');
    perform pg_temp.push_numbered('lw', 'r', 'z-', 2, 2, '2026-07-01T00:00:05Z');
    v_got := (select jsonb_agg(p.result order by p.idx) from regina.pop(
                  '[{"queue":"lw","consumerGroup":"g","autoAck":true},
                    {"queue":"lw","consumerGroup":"g","autoAck":true}]',
                  '2026-07-01T00:00:06Z') p);
    assert pg_temp.calls('_pop_lone') = 6 and pg_temp.calls('_pop_one') = 4,
        'a run of two alike requests takes it';
    assert v_got -> 0 -> 'messages' -> 0 ->> 'transactionId' = 'y-2'
           and v_got -> 1 -> 'messages' -> 0 ->> 'transactionId' = 'z-2',
        format('each request of the run served a partition: %s', v_got);
    -- A push with the pop of a long-poll in its transaction: the same path, without pop_text.
    v_got := (select jsonb_agg(to_jsonb(p) order by p.pop, p.idx) from regina.push_pop_text(
                  '[{"queue":"lw","partition":"q","transactionId":"y-3",
                     "messageId":"0196a000-0000-7000-8000-00000000d003"}]', '[3]',
                  '[{"queue":"lw","consumerGroup":"g","autoAck":true,"quiet":true}]') p);
    assert pg_temp.calls('_pop_lone') = 7 and pg_temp.calls('pop_text') = 6,
        'push_pop_text answers its pop by _pop_lone alone';
    assert v_got -> 1 ->> 'pop' = 'true' and v_got -> 1 ->> 'idx' = '0'
           and (v_got -> 1 ->> 'result')::jsonb -> 'messages' -> 0 ->> 'transactionId' = 'y-3'
           and v_got -> 1 ->> 'quiet' = 'infinity',
        format('the pop delivered what the push stored: %s', v_got);
end
$$;
reset track_functions;

-- The cursors and ready rows of a queue.
create function pg_temp.lone_state(i_queue text) returns jsonb
language sql as $$
    select jsonb_build_object(
        'cursors', (select jsonb_agg(to_jsonb(c) order by c.partition_id, c.consumer_group)
                    from regina.cursors c join regina.queues q on q.id = c.queue_id
                    where q.name = i_queue),
        'ready', (select jsonb_agg(to_jsonb(r) order by r.partition_id, r.consumer_group)
                  from regina.ready r join regina.queues q on q.id = r.queue_id
                  where q.name = i_queue))
$$;

-- The general path's answer to a call of the requests i_reqs: _pop_one for one request, _pop_run
-- for a run of alike ones, as regina.pop_text calls them.
create function pg_temp.pop_general(i_reqs regina.pop_request[], i_now timestamptz,
                                    out o_results text[], out o_events json, out o_quiet text)
language plpgsql as $$
declare
    v record;
begin
    if cardinality(i_reqs) = 1 then
        v := regina._pop_one(i_reqs[1], i_now, '{}', null, null);
        o_results := array[v.o_result];
    else
        v := regina._pop_run(i_reqs, i_now, '{}', null, null);
        o_results := v.o_results;
    end if;
    o_events := v.o_events;
    o_quiet := v.o_quiet;
end
$$;

-- A call of the pop requests i_reqs (an array, or one request) at i_now, compared as said
-- above. o_path: 'lone' or 'general'; o_results: the answers, parsed.
create function pg_temp.pop_compared(i_reqs jsonb, i_now timestamptz,
                                     out o_path text, out o_results jsonb[], out o_quiet text)
language plpgsql as $$
declare
    v_reqs regina.pop_request[] := array(
        select r from jsonb_populate_recordset(
                          null::regina.pop_request,
                          case when jsonb_typeof(i_reqs) = 'array' then i_reqs
                               else jsonb_build_array(i_reqs) end) r);
    v_queue text := v_reqs[1].queue;
    v_before jsonb := pg_temp.lone_state(v_queue);
    v_general record;
    v_general_state jsonb;
    v_lone record;
    v_again record;
begin
    begin
        v_general := pg_temp.pop_general(v_reqs, i_now);
        v_general_state := pg_temp.lone_state(v_queue);
        raise exception 'undo the general path';
    exception when raise_exception then
        if sqlerrm <> 'undo the general path' then
            raise;
        end if;
    end;
    assert pg_temp.lone_state(v_queue) is not distinct from v_before, 'the undo undid it';
    v_lone := regina._pop_lone(v_reqs, i_now);
    if v_lone.o_results is null then
        assert v_lone.o_events is null and v_lone.o_quiet is null,
            format('a decline answers nothing: %s', v_lone);
        assert pg_temp.lone_state(v_queue) is not distinct from v_before,
            format('a decline writes nothing: %s', i_reqs);
        v_again := pg_temp.pop_general(v_reqs, i_now);
        assert v_again.o_results = v_general.o_results
               and v_again.o_events::text is not distinct from v_general.o_events::text
               and v_again.o_quiet is not distinct from v_general.o_quiet,
            format('the general path answers the same again: %s then %s', v_general, v_again);
        o_path := 'general';
        o_results := v_again.o_results::jsonb[];
        o_quiet := v_again.o_quiet;
        return;
    end if;
    assert v_lone.o_results = v_general.o_results,
        format('%s at %s: the same result texts: lone %s, general %s', i_reqs, i_now,
               v_lone.o_results, v_general.o_results);
    assert v_lone.o_events::text is not distinct from v_general.o_events::text,
        format('%s: the same events: lone %s, general %s', i_reqs, v_lone.o_events,
               v_general.o_events);
    assert v_lone.o_quiet is not distinct from v_general.o_quiet,
        format('%s at %s: the same quiet: lone %s, general %s', i_reqs, i_now, v_lone.o_quiet,
               v_general.o_quiet);
    assert pg_temp.lone_state(v_queue) is not distinct from v_general_state,
        format('%s at %s: the same cursors and ready rows: lone %s, general %s', i_reqs, i_now,
               pg_temp.lone_state(v_queue), v_general_state);
    o_path := 'lone';
    o_results := v_lone.o_results::jsonb[];
    o_quiet := v_lone.o_quiet;
end
$$;

do $$
declare
    t timestamptz := '2026-05-01T00:00:00Z';
    v_step integer;
    v_group text;
    v_auto boolean;
    v_req jsonb;
    v_reqs jsonb;
    v_size integer;
    v_k integer;
    v_got record;
    v_m jsonb;
    v_seen text[] := '{}';
    v_dead record;
    v_mark record;
    v_n integer := 0;
begin
    perform setseed(0.27);
    perform regina.configure('{"queue":"lq","options":{"leaseTime":20,"retryLimit":1}}');
    -- Both groups subscribe on the first pop, which the general path serves.
    foreach v_group in array array['auto', 'lease'] loop
        v_got := pg_temp.pop_compared(jsonb_build_object('queue', 'lq', 'consumerGroup', v_group,
                                                         'autoAck', v_group = 'auto'), t);
        assert v_got.o_path = 'general', format('a first contact takes the general path: %s', v_got);
    end loop;

    for v_step in 1 .. 600 loop
        t := t + (random() * 1500)::integer * interval '1 ms';
        if random() < 0.35 then
            perform pg_temp.push_numbered('lq', 'p' || (1 + (random() * 4)::integer), 's' || v_step || '-',
                                          1, 1 + (random() * 2)::integer, t);
            continue;
        end if;
        if v_step % 60 = 0 then
            -- A dead letter requeued for its group: a delivery for that group only.
            select d.* into v_dead from regina.dead_letters d order by d.id limit 1;
            if found then
                perform regina.message_requeue(
                    (select p.uuid::text from regina.partitions p where p.id = v_dead.partition_id),
                    v_dead.transaction_id, v_dead.consumer_group, t);
                v_seen := v_seen || 'requeued'::text;
            end if;
        end if;
        if v_step % 25 = 0 then
            -- A message behind the head dead-lettered by hand: a settled mark ahead of the head.
            select p.uuid::text as pid, m.transaction_id into v_mark
            from regina.cursors c
            join regina.partitions p on p.id = c.partition_id
            join regina.messages m on m.partition_id = c.partition_id and m.seq > c.next_seq
            where c.consumer_group = 'auto' and not c.lease_active
            order by m.seq desc limit 1;
            if found then
                perform regina.message_dead_letter(v_mark.pid, v_mark.transaction_id, 'auto',
                                                   'by hand', t);
                if exists (select 1 from regina.cursors c
                           where c.consumer_group = 'auto' and cardinality(c.marks) > 0) then
                    v_seen := v_seen || 'marked'::text;
                end if;
            end if;
        end if;
        -- One request, or a run of two or three alike ones (each with its lease).
        v_auto := random() < 0.5;
        v_group := case when v_auto then 'auto' else 'lease' end;
        v_size := case when random() < 0.3 then 2 + (random())::integer else 1 end;
        v_req := jsonb_build_object('queue', 'lq', 'consumerGroup', v_group, 'autoAck', v_auto,
                                    'batch', 1 + (random() * 3)::integer, 'partitions', 1,
                                    'quiet', random() < 0.7);
        v_reqs := (select jsonb_agg(v_req || jsonb_build_object('leaseId', gen_random_uuid()))
                   from generate_series(1, v_size));
        v_got := pg_temp.pop_compared(v_reqs, t);
        v_n := v_n + 1;
        v_seen := v_seen || (v_got.o_path
                             || case when v_size > 1 then '-run' else '' end
                             || case when v_got.o_results[1] ? 'messages'
                                     then '-delivered' else '-empty' end
                             || case when v_auto then '-auto' else '-lease' end);
        if v_got.o_path = 'lone' and (v_req ->> 'quiet')::boolean then
            v_seen := v_seen || ('lone-quiet-' || case when v_got.o_quiet is null then 'null'
                                                       when v_got.o_quiet = 'infinity'
                                                       then 'infinity' else 'at' end);
        end if;
        for v_k in 1 .. v_size loop
            if v_got.o_path = 'lone' and v_size > 1 and not (v_got.o_results[v_k] ? 'messages') then
                v_seen := v_seen || 'lone-run-short'::text;
            end if;
            continue when not (v_got.o_results[v_k] ? 'messages');
            for v_m in select * from jsonb_array_elements(v_got.o_results[v_k] -> 'messages') loop
                if v_got.o_path = 'lone' and (v_m ->> 'retryCount')::integer > 0 then
                    v_seen := v_seen || 'lone-retry'::text;
                end if;
                if v_got.o_path = 'lone'
                   and exists (select 1 from regina.messages x
                               where x.transaction_id = v_m ->> 'transactionId'
                                 and x.for_group is not null) then
                    v_seen := v_seen || 'lone-requeued'::text;
                end if;
                -- A lease: acked whole, acked in part (the rest waits for the lease's end),
                -- failed, or left to expire.
                continue when v_auto or random() < 0.25;
                perform regina.ack(jsonb_build_array(jsonb_build_object(
                            'transactionId', v_m ->> 'transactionId',
                            'partitionId', v_m ->> 'partitionId',
                            'leaseId', v_reqs -> (v_k - 1) ->> 'leaseId',
                            'status', case when random() < 0.3 then 'failed' else 'completed' end)),
                        t);
            end loop;
        end loop;
    end loop;

    -- Every case that matters came up, on the path meant for it.
    assert array['lone-delivered-auto', 'lone-delivered-lease', 'lone-empty-auto',
                 'lone-empty-lease', 'general-delivered-lease', 'lone-quiet-null',
                 'lone-quiet-infinity', 'lone-quiet-at', 'lone-retry', 'lone-requeued',
                 'requeued', 'marked', 'general-delivered-auto', 'lone-run-delivered-auto',
                 'lone-run-delivered-lease', 'lone-run-empty-auto', 'lone-run-short',
                 'general-run-delivered-lease'] <@ v_seen,
        format('the walk went through every case: %s',
               (select jsonb_object_agg(s, n) from (select s, count(*) as n from unnest(v_seen) s
                                                     group by s) x));
    assert (select count(*) from unnest(v_seen) s where s ~ '^lone-.*(auto|lease)$') > v_n / 2,
        format('most pops are plain: %s of %s',
               (select count(*) from unnest(v_seen) s where s ~ '^lone-.*(auto|lease)$'), v_n);
end
$$;

-- A lease in flight past its end, a ttl queue, a missing cursor: the general path, whose answer
-- pop_compared checks is the same as before _pop_lone declined.
do $$
declare
    t timestamptz := '2026-06-01T00:00:00Z';
    v_got record;
begin
    perform regina.configure('{"queue":"lt","options":{"leaseTime":10,"ttl":3600}}');
    perform regina.configure('{"queue":"ll","options":{"leaseTime":10}}');
    perform regina.pop('[{"queue":"lt","consumerGroup":"g"},{"queue":"ll","consumerGroup":"g"}]', t);
    perform pg_temp.push_numbered('lt', 'p', 'lt-', 1, 2, t);
    perform pg_temp.push_numbered('ll', 'p', 'll-', 1, 2, t);
    v_got := pg_temp.pop_compared('{"queue":"lt","consumerGroup":"g","autoAck":true}', t);
    assert v_got.o_path = 'general' and v_got.o_results[1] ? 'messages',
        format('a ttl queue takes the general path: %s', v_got);
    v_got := pg_temp.pop_compared('{"queue":"ll","consumerGroup":"g","autoAck":true}', t);
    assert v_got.o_path = 'general' and v_got.o_results[1] ? 'messages',
        format('a new cursor is made by the general path: %s', v_got);
    v_got := pg_temp.pop_compared(
        '{"queue":"ll","consumerGroup":"g","leaseId":"0196a000-0000-7000-8000-00000000c001"}', t);
    assert v_got.o_path = 'lone' and v_got.o_results[1] ? 'messages', format('a lease: %s', v_got);
    v_got := pg_temp.pop_compared(
        '{"queue":"ll","consumerGroup":"g","leaseId":"0196a000-0000-7000-8000-00000000c002","quiet":true}',
        t + interval '11 seconds');
    assert v_got.o_path = 'general' and (v_got.o_results[1] -> 'messages' -> 0 ->> 'retryCount') = '1',
        format('an expired lease is accounted by the general path: %s', v_got);
    -- Requests not alike (another batch): not a run, declined.
    assert (regina._pop_lone(array(select r from jsonb_populate_recordset(null::regina.pop_request,
                '[{"queue":"ll","consumerGroup":"g","autoAck":true,"batch":1},
                  {"queue":"ll","consumerGroup":"g","autoAck":true,"batch":2}]') r), t)).o_results
           is null, 'requests not alike are declined';
    -- A batch cut just before another group's requeued delivery: the head passes over it.
    perform regina.configure('{"queue":"la","options":{"retryLimit":0}}');
    perform regina.pop('[{"queue":"la","consumerGroup":"g1","autoAck":true},
                         {"queue":"la","consumerGroup":"g2","autoAck":true}]', t);
    perform pg_temp.push_numbered('la', 'p', 'a-', 1, 1, t);
    perform regina.pop('[{"queue":"la","consumerGroup":"g1","autoAck":true}]', t);
    v_got := pg_temp.pop_compared(
        '{"queue":"la","consumerGroup":"g2","leaseId":"0196a000-0000-7000-8000-00000000c003"}', t);
    perform regina.ack(jsonb_build_array(jsonb_build_object(
                'transactionId', 'a-1', 'partitionId', v_got.o_results[1] ->> 'partitionId',
                'leaseId', '0196a000-0000-7000-8000-00000000c003', 'status', 'failed')), t);
    perform pg_temp.push_numbered('la', 'p', 'a-', 2, 3, t);
    perform regina.message_requeue(v_got.o_results[1] ->> 'partitionId', 'a-1', 'g2', t);
    perform pg_temp.push_numbered('la', 'p', 'a-', 4, 4, t);
    v_got := pg_temp.pop_compared('{"queue":"la","consumerGroup":"g1","autoAck":true,"batch":2}', t);
    assert v_got.o_path = 'lone' and jsonb_array_length(v_got.o_results[1] -> 'messages') = 2
           and (select c.next_seq from regina.cursors c
                where c.partition_id = pg_temp.partition_id('la', 'p') and c.consumer_group = 'g1') = 4,
        format('the head passed over the requeued delivery of g2: %s', v_got);
    v_got := pg_temp.pop_compared(
        '{"queue":"nope","consumerGroup":"g","autoAck":true}', t);
    assert v_got.o_path = 'general' and v_got.o_results[1] ->> 'empty' = 'queue_not_found',
        format('an unknown queue: %s', v_got);
end
$$;
