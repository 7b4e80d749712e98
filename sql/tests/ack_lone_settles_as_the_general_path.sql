-- An ack call whose every item completes the head message of its own lease is settled in a few
-- statements: a call of one item (what a consumer that takes a message at a time sends) by one
-- update of its cursor in regina.ack_text, a call of several on different partitions (what the
-- broker sends when it fuses such acks) by regina._ack_lone. Both must answer and write exactly
-- as the general path would, and decline anything else before they write.
--
-- A random walk over six partitions and two groups: pushes, leases of one or two messages, acks
-- of one to three items (completed, failed, retried or dead-lettered; in order or not; with the
-- group named, left out or wrong; twice; after the lease's end; of unknown messages), leases left
-- to expire, seeks back, and requeued dead letters. Each call first runs in a subtransaction that
-- is then undone, with an item of an unknown partition added, which sends it to the general path;
-- then the call itself runs. Answers, cursors, ready rows and dead letters must be the same. The
-- walk must have gone through every case on the path meant for it.

set track_functions = 'pl';

-- Every cursor, ready row and dead letter, as text.
create function pg_temp.state() returns text
language sql as $$
    select coalesce((select string_agg(format('%s/%s %s', c.partition_id, c.consumer_group,
                                              row(c.next_seq, c.marks, c.lease_marks,
                                                  c.head_attempts, c.head_error, c.retry_after,
                                                  c.lease_id, c.lease_active, c.lease_expires_at,
                                                  c.lease_end_seq, c.last_lease_id,
                                                  c.last_claim_at, c.total_consumed,
                                                  c.batches_consumed, c.last_consumed_at,
                                                  c.parked_lease_id)),
                                       ' ' order by c.partition_id, c.consumer_group)
                     from regina.cursors c), '')
           || ' | ' || coalesce((select string_agg(format('%s/%s %s', r.partition_id,
                                                          r.consumer_group, r.eligible_at),
                                                   ' ' order by r.partition_id, r.consumer_group)
                                 from regina.ready r), '')
           || ' | ' || coalesce((select string_agg(format('%s/%s %s %s', d.seq, d.consumer_group,
                                                          d.retry_count, d.error_message),
                                                   ' ' order by d.partition_id, d.seq,
                                                   d.consumer_group)
                                 from regina.dead_letters d), '')
$$;

-- Runs ack call i_items at i_now twice: first with an item of an unknown partition added (which
-- sends it to the general path) in a subtransaction that is then undone, then as it is. Asserts
-- that both answer alike and leave the same state, and that regina._ack_lone was tried exactly
-- when the call has several items and its first two on different partitions. Returns the path
-- that answered: 'served' (by the one-item update or regina._ack_lone: no resolution of the
-- general path ran), 'declined' (tried, then the general path) or 'not tried'.
create function pg_temp.ack_both(i_items jsonb, i_now timestamptz, i_what text,
                                 out o_path text, out o_answers text[])
language plpgsql as $$
declare
    v_n integer := jsonb_array_length(i_items);
    v_general text[];
    v_general_state text;
    v_state text;
    v_items bigint;
    v_one bigint;
    v_lone bigint;
begin
    begin
        select array_agg(concat_ws(' ', a.idx, a.result, a.wake_queue, a.wake_group, a.queue_name,
                                   a.acked, a.dead_lettered, a.leases_expired) order by a.idx)
        into v_general
        from regina.ack_text(i_items || jsonb_build_array(jsonb_build_object(
                                 'transactionId', 'junk', 'partitionId', gen_random_uuid(),
                                 'leaseId', gen_random_uuid())), i_now) a
        where a.idx < v_n;
        v_general_state := pg_temp.state();
        raise exception using errcode = 'P0099';
    exception when sqlstate 'P0099' then
        null;
    end;
    v_items := pg_temp.calls('_ack_items');
    v_one := pg_temp.calls('_ack_item_one');
    v_lone := pg_temp.calls('_ack_lone');
    select array_agg(concat_ws(' ', a.idx, a.result, a.wake_queue, a.wake_group, a.queue_name,
                               a.acked, a.dead_lettered, a.leases_expired) order by a.idx)
    into o_answers
    from regina.ack_text(i_items, i_now) a;
    v_state := pg_temp.state();
    o_path := case when pg_temp.calls('_ack_items') = v_items
                        and pg_temp.calls('_ack_item_one') = v_one then 'served'
                   when v_n = 1 or pg_temp.calls('_ack_lone') > v_lone then 'declined'
                   else 'not tried' end;
    assert o_answers = v_general,
        format('%s (%s, %s): answered %s, the general path %s', i_what, o_path, i_items, o_answers,
               v_general);
    assert v_state = v_general_state,
        format('%s (%s, %s): state %s, after the general path %s', i_what, o_path, i_items,
               v_state, v_general_state);
    assert v_n = 1 or (pg_temp.calls('_ack_lone') > v_lone)
                      = ((i_items -> 0 ->> 'partitionId')
                         is distinct from (i_items -> 1 ->> 'partitionId')),
        format('%s: %s, %s', i_what, i_items, o_path);
end
$$;

create temp table deliveries (
    dn serial primary key,
    grp text,
    part text,
    tid text,
    lease text,
    acked boolean not null default false
);

do $$
declare
    t timestamptz := '2026-08-01T00:00:00Z';
    parts text[] := array['a', 'b', 'c', 'd', 'e', 'f'];
    r double precision;
    k integer;
    n integer;
    grp text;
    lease text;
    batch integer;
    v_pop jsonb;
    v_items jsonb;
    v_kinds text[];
    d record;
    answered text[];
    served boolean;
    path text;
    requeued boolean;
    twice boolean;
    pushed integer := 0;
    -- What the walk went through: served calls by size and outcome, declined calls by cause.
    seen jsonb := '{}';
begin
    perform setseed(0.31);
    perform regina.configure('{"queue":"al","options":{"leaseTime":30,"retryLimit":1}}');
    for step in 1..3000 loop
        t := t + interval '1 second';
        r := random();
        if r < 0.25 then
            pushed := pushed + 1;
            k := 1 + floor(random() * 4)::integer;
            perform pg_temp.push_numbered('al', parts[1 + floor(random() * 6)::integer],
                                          format('s%s-', pushed), 1, k, t);
        elsif r < 0.54 then
            -- A lease for each group (of one message mostly, of two at times).
            foreach grp in array array['g', 'h'] loop
                lease := gen_random_uuid()::text;
                batch := case when random() < 0.3 then 2 else 1 end;
                v_pop := (select p.result from regina.pop(jsonb_build_array(jsonb_build_object(
                              'queue', 'al', 'consumerGroup', grp, 'batch', batch,
                              'leaseId', lease)), t) p);
                insert into deliveries (grp, part, tid, lease)
                select grp, m ->> 'partitionId', m ->> 'transactionId', lease
                from jsonb_array_elements(v_pop -> 'messages') m;
            end loop;
        elsif r < 0.56 then
            t := t + interval '40 seconds';   -- past every lease's end
        elsif r < 0.58 then
            -- A group sent back a minute: messages delivered again, requeued ones among them.
            perform regina.consumer_group_seek(jsonb_build_object(
                        'queue', 'al',
                        'consumerGroup', (array['g', 'h'])[1 + floor(random() * 2)::integer],
                        'timestamp', t - interval '60 seconds'), t);
        elsif r < 0.61 then
            select dl.transaction_id, p.uuid::text as part, dl.consumer_group into d
            from regina.dead_letters dl join regina.partitions p on p.id = dl.partition_id
            order by random() limit 1;
            if found then
                perform regina.message_requeue(d.part, d.transaction_id, d.consumer_group, t);
            end if;
        else
            -- An ack call of 1-3 items, most of them recent deliveries acked as a consumer would.
            n := 1 + floor(random() * 3)::integer;
            v_kinds := '{}';
            select jsonb_agg(x.item order by x.ord), array_agg(x.kind order by x.ord)
            into v_items, v_kinds
            from (select s.ord, s.kind,
                         jsonb_strip_nulls(jsonb_build_object(
                             'transactionId', case when s.kind = 'unknown' then 'nope'
                                                   else s.tid end,
                             'partitionId', s.part,
                             'leaseId', s.lease,
                             'consumerGroup', case s.kind when 'mismatch' then
                                                  case s.grp when 'g' then 'h' else 'g' end
                                              when 'no-group' then null
                                              else s.grp end,
                             'status', case s.kind when 'failed' then 'failed'
                                                   when 'retry' then 'retry'
                                                   when 'dlq' then 'dlq'
                                                   when 'success' then 'success'
                                                   else 'completed' end)) as item
                  from (select row_number() over () as ord, dd.*,
                               case when random() < 0.75 then 'plain'
                                    else (array['failed', 'retry', 'dlq', 'success', 'mismatch',
                                                'no-group', 'unknown'])
                                         [1 + floor(random() * 7)::integer] end as kind
                        from (select * from deliveries
                              where dn > (select coalesce(max(dn), 0) - 12 from deliveries)
                                and (not acked or random() < 0.15)
                              order by random()
                              limit n) dd) s) x;
            continue when v_items is null;
            -- At times the first item twice (a consumer that sends an ack again in the same call).
            twice := jsonb_array_length(v_items) > 1 and random() < 0.1;
            if twice then
                v_items := v_items || jsonb_build_array(v_items -> 0);
                v_kinds := v_kinds || v_kinds[1];
            end if;
            n := jsonb_array_length(v_items);
            -- An item whose group has a requeued delivery of its transaction id: the ack is that
            -- delivery's, whatever the lease holds.
            requeued := exists (
                select 1 from jsonb_array_elements(v_items) i
                join regina.partitions p on p.uuid::text = i ->> 'partitionId'
                join regina.messages m on m.partition_id = p.id
                    and m.transaction_id = i ->> 'transactionId' and m.for_group is not null
                join deliveries dd on dd.part = i ->> 'partitionId'
                    and dd.tid = i ->> 'transactionId' and dd.lease = i ->> 'leaseId'
                where m.for_group = dd.grp);
            select c.o_path, c.o_answers into path, answered
            from pg_temp.ack_both(v_items, t, format('step %s', step)) c;
            served := path = 'served';
            update deliveries set acked = true
            where (part, tid) in (select i ->> 'partitionId', i ->> 'transactionId'
                                  from jsonb_array_elements(v_items) i);
            if served then
                assert not twice, format('step %s: served %s', step, v_items);
                assert not ('{failed,retry,dlq,mismatch,unknown}' && v_kinds),
                    format('step %s: served %s (%s)', step, v_items, v_kinds);
                seen := seen || jsonb_build_object(
                    'served ' || n, coalesce((seen ->> ('served ' || n))::integer, 0) + 1);
                if exists (select 1 from unnest(answered) x
                           where x ~ '"leaseReleased":false') then
                    seen := seen || '{"served, a lease kept": 1}';
                end if;
                if exists (select 1 from unnest(answered) x where x ~ '"leaseReleased":true') then
                    seen := seen || '{"served, a lease ended": 1}';
                end if;
                if (select count(distinct i ->> 'partitionId') from jsonb_array_elements(v_items) i)
                   < n then
                    seen := seen || '{"served, two groups on one partition": 1}';
                end if;
                if array_to_string(v_kinds, ',') ~ 'success|no-group' then
                    seen := seen || '{"served, success or no group": 1}';
                end if;
            elsif path = 'declined' then
                if requeued then
                    seen := seen || '{"declined, requeued": 1}';
                end if;
                if twice then
                    seen := seen || '{"declined, an item twice": 1}';
                end if;
                seen := seen || jsonb_build_object('declined ' || (
                    select coalesce(min(k2), 'plain') from unnest(v_kinds) k2 where k2 <> 'plain'),
                    1);
                if array_to_string(answered, ',') ~ 'already_settled|lease_expired|not_leased' then
                    seen := seen || jsonb_build_object('declined, ' || (regexp_match(
                        array_to_string(answered, ','),
                        'already_settled|lease_expired|not_leased'))[1], 1);
                end if;
            end if;
        end if;
    end loop;
    raise notice 'walk: %', seen;
    assert (seen ->> 'served 1')::integer >= 50 and (seen ->> 'served 2')::integer >= 20
           and (seen ->> 'served 3')::integer >= 10,
        format('calls of one, two and three items served: %s', seen);
    assert seen ?& array['served, a lease kept', 'served, a lease ended',
                         'served, success or no group', 'served, two groups on one partition',
                         'declined failed', 'declined retry', 'declined dlq',
                         'declined mismatch', 'declined unknown', 'declined plain',
                         'declined, already_settled', 'declined, lease_expired',
                         'declined, requeued', 'declined, an item twice'],
        format('every case reached: %s', seen);
    assert (select count(*) from regina.dead_letters) > 0, 'dead letters written';
    assert (select count(*) from regina.messages where for_group is not null) > 0,
        'dead letters requeued';
end
$$;

-- A message dead-lettered, requeued for its group, then leased again at its own offset after a
-- seek: an ack of its transaction id is the requeued delivery's (http-api.md §4.6), outside the
-- lease, so the call must go to the general path although the lease holds the original.
do $$
declare
    t timestamptz := '2026-09-01T00:00:00Z';
    x text;
    y text;
    l1 text := gen_random_uuid();
    l2 text := gen_random_uuid();
    l3 text := gen_random_uuid();
    v_pop jsonb;
    v_path text;
    v_answers text[];
begin
    perform regina.configure('{"queue":"rq","options":{"leaseTime":30}}');
    perform pg_temp.push_numbered('rq', 'x', 'm', 1, 2, t);
    perform pg_temp.push_numbered('rq', 'y', 'n', 1, 1, t);
    x := (select p.uuid::text from regina.partitions p join regina.queues q on q.id = p.queue_id
          where q.name = 'rq' and p.name = 'x');
    y := (select p.uuid::text from regina.partitions p join regina.queues q on q.id = p.queue_id
          where q.name = 'rq' and p.name = 'y');
    perform regina.pop(jsonb_build_array(jsonb_build_object(
                'queue', 'rq', 'partition', 'x', 'consumerGroup', 'g', 'leaseId', l1)), t);
    perform regina.ack(jsonb_build_array(jsonb_build_object(
                'transactionId', 'm1', 'partitionId', x, 'leaseId', l1, 'status', 'dlq',
                'consumerGroup', 'g')), t);
    perform regina.message_requeue(x, 'm1', 'g', t + interval '1 second');
    perform regina.consumer_group_seek(jsonb_build_object(
                'queue', 'rq', 'consumerGroup', 'g', 'timestamp', t - interval '1 second'),
            t + interval '2 seconds');
    v_pop := (select p.result from regina.pop(jsonb_build_array(jsonb_build_object(
                  'queue', 'rq', 'partition', 'x', 'consumerGroup', 'g', 'leaseId', l2)),
              t + interval '3 seconds') p);
    assert v_pop -> 'messages' -> 0 ->> 'transactionId' = 'm1'
           and (select c.next_seq = m.seq and c.lease_end_seq = m.seq and c.lease_active
                from regina.cursors c
                join regina.partitions p on p.id = c.partition_id
                join regina.messages m on m.partition_id = p.id and m.transaction_id = 'm1'
                                      and m.for_group is null
                where p.uuid::text = x and c.consumer_group = 'g'),
        format('the lease holds the original m1: %s', v_pop);
    perform regina.pop(jsonb_build_array(jsonb_build_object(
                'queue', 'rq', 'partition', 'y', 'consumerGroup', 'g', 'leaseId', l3)),
            t + interval '3 seconds');
    select c.o_path, c.o_answers into v_path, v_answers
    from pg_temp.ack_both(jsonb_build_array(
             jsonb_build_object('transactionId', 'm1', 'partitionId', x, 'leaseId', l2,
                                'consumerGroup', 'g')),
         t + interval '4 seconds', 'requeued, alone') c;
    assert v_path = 'declined', format('alone, left to the general path: %s %s', v_path,
                                       v_answers);
    select c.o_path, c.o_answers into v_path, v_answers
    from pg_temp.ack_both(jsonb_build_array(
             jsonb_build_object('transactionId', 'm1', 'partitionId', x, 'leaseId', l2,
                                'consumerGroup', 'g'),
             jsonb_build_object('transactionId', 'n1', 'partitionId', y, 'leaseId', l3,
                                'consumerGroup', 'g')),
         t + interval '4 seconds', 'requeued') c;
    assert v_path = 'declined', format('left to the general path: %s %s', v_path, v_answers);
end
$$;

-- A lease of two messages whose second was settled first (dead-lettered: a mark the head keeps
-- ahead of it; completed: a mark of the lease): the head's ack moves past both and ends the
-- lease, which a path that only looks for the next stored message would miss. Alone and beside
-- an item of another partition, both must decline and leave it to the general path.
do $$
declare
    t timestamptz := '2026-10-01T00:00:00Z';
    x text;
    y text;
    v_lease text;
    v_other text;
    v_path text;
    v_answers text[];
    v_status text;
    v_items jsonb;
begin
    perform regina.configure('{"queue":"mk","options":{"leaseTime":30}}');
    for round in 1..4 loop
        v_status := (array['dlq', 'completed', 'dlq', 'completed'])[round];
        t := t + interval '1 minute';
        perform pg_temp.push_numbered('mk', 'x', 'x' || extract(epoch from t) || '-', 1, 2, t);
        if round > 2 then
            perform pg_temp.push_numbered('mk', 'y', 'y' || extract(epoch from t) || '-', 1, 1, t);
        end if;
        x := (select p.uuid::text from regina.partitions p join regina.queues q on q.id = p.queue_id
              where q.name = 'mk' and p.name = 'x');
        y := (select p.uuid::text from regina.partitions p join regina.queues q on q.id = p.queue_id
              where q.name = 'mk' and p.name = 'y');
        v_lease := gen_random_uuid()::text;
        v_other := gen_random_uuid()::text;
        perform regina.pop(jsonb_build_array(jsonb_build_object(
                    'queue', 'mk', 'partition', 'x', 'consumerGroup', 'g', 'batch', 2,
                    'leaseId', v_lease)), t);
        if round > 2 then
            perform regina.pop(jsonb_build_array(jsonb_build_object(
                        'queue', 'mk', 'partition', 'y', 'consumerGroup', 'g',
                        'leaseId', v_other)), t);
        end if;
        perform regina.ack(jsonb_build_array(jsonb_build_object(
                    'transactionId', 'x' || extract(epoch from t) || '-2', 'partitionId', x,
                    'leaseId', v_lease, 'status', v_status, 'consumerGroup', 'g')), t);
        assert (select cardinality(c.marks) + cardinality(c.lease_marks) from regina.cursors c
                join regina.partitions p on p.id = c.partition_id
                where p.uuid::text = x and c.consumer_group = 'g') = 1,
            format('%s: the second message settled ahead of the head', v_status);
        v_items := jsonb_build_array(jsonb_build_object(
                       'transactionId', 'x' || extract(epoch from t) || '-1', 'partitionId', x,
                       'leaseId', v_lease, 'consumerGroup', 'g'));
        -- Alone the first two rounds, beside an item of the other partition the last two.
        if round > 2 then
            v_items := v_items || jsonb_build_array(jsonb_build_object(
                           'transactionId', 'y' || extract(epoch from t) || '-1',
                           'partitionId', y, 'leaseId', v_other, 'consumerGroup', 'g'));
        end if;
        select c.o_path, c.o_answers into v_path, v_answers
        from pg_temp.ack_both(v_items, t + interval '1 second', 'marks ahead, ' || v_status) c;
        assert v_path = 'declined', format('%s: left to the general path: %s %s', v_status,
                                           v_path, v_answers);
        assert v_answers[1] ~ '"leaseReleased":true',
            format('%s: the head''s ack ended the lease: %s', v_status, v_answers);
    end loop;
end
$$;
