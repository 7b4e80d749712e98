-- GET /api/v1/messages of given queues (88_messages.sql, regina.messages_list): a queue of few
-- partitions is read by merging the newest messages of each partition, not by walking every
-- queue's messages. Pages, offsets, `hasMore` and status filters give what ordering the queue's
-- messages in the window by (createdAt, partition, offset), newest first, and filtering them
-- gives: also when a status filter needs older messages of one partition than the merge read
-- (it starts again with more), and when it then falls back to the index of every message.

-- The transactionIds of the page of i_query as ordering and filtering the stored messages gives
-- it, and whether more match.
create function pg_temp.expected(i_query jsonb, i_now timestamptz,
                                 out o_ids text[], out o_more boolean)
language plpgsql as $$
declare
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 200);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_all text[];
begin
    v_all := array(
        select m.transaction_id
        from regina.messages m
        join regina.partitions p on p.id = m.partition_id
        join regina.queues q on q.id = p.queue_id
        where m.for_group is null
          and (i_query ->> 'queue' is null or q.name = i_query ->> 'queue')
          and (i_query ->> 'namespace' is null or q.namespace = i_query ->> 'namespace')
          and (i_query ->> 'partition' is null or p.name = i_query ->> 'partition')
          and m.created_at >= coalesce((i_query ->> 'from')::timestamptz, i_now - interval '1 hour')
          and m.created_at <= coalesce((i_query ->> 'to')::timestamptz, i_now)
          and (i_query ->> 'status' is null
               or regina._message_summary(m, i_query ->> 'consumerGroup', i_now) ->> 'status'
                  = i_query ->> 'status')
        order by m.created_at desc, m.partition_id desc, m.seq desc);
    o_ids := coalesce(v_all[v_offset + 1 : v_offset + v_limit], '{}');
    o_more := cardinality(v_all) > v_offset + v_limit;
end
$$;

-- The page regina.messages_list gives, as the expected one is.
create function pg_temp.listed(i_query jsonb, i_now timestamptz,
                               out o_ids text[], out o_more boolean)
language plpgsql as $$
declare
    v jsonb := regina.messages_list(i_query, i_now)::jsonb;
begin
    o_ids := array(select e ->> 'transactionId' from jsonb_array_elements(v -> 'messages') e);
    o_more := (v -> 'pagination' ->> 'hasMore')::boolean;
end
$$;

create function pg_temp.check(i_query jsonb, i_now timestamptz, i_expected_count integer)
returns void
language plpgsql as $$
declare
    e record := pg_temp.expected(i_query, i_now);
    l record := pg_temp.listed(i_query, i_now);
begin
    assert cardinality(e.o_ids) = i_expected_count,
           format('%s: the expected page has %s, not %s', i_query, cardinality(e.o_ids),
                  i_expected_count);
    assert l.o_ids = e.o_ids and l.o_more = e.o_more,
           format('%s: listed %s (more: %s), expected %s (more: %s)', i_query, l.o_ids, l.o_more,
                  e.o_ids, e.o_more);
end
$$;

do $$
declare
    t0 timestamptz := '2026-03-01T10:00:00Z';
    t1 timestamptz := t0 + interval '10 minutes';
    i integer;
begin
    perform regina.configure('{"queue":"lq","namespace":"ns","options":{}}');
    perform regina.configure('{"queue":"lq2","namespace":"ns","options":{}}');
    -- Partition a: 30 messages a push each, one second apart; b: 5 in one push (one instant);
    -- c: 20, interleaved with a. Queue noise: 60 messages in between, which the index walks past.
    for i in 0 .. 29 loop
        perform pg_temp.push_numbered('lq', 'a', 'a', i, i, t0 + i * interval '1 second');
        perform pg_temp.push_numbered('noise', 'n', 'n' || i || '-', 0, 1,
                                      t0 + i * interval '1 second');
    end loop;
    perform pg_temp.push_numbered('lq', 'b', 'b', 0, 4, t0 + interval '12 seconds');
    for i in 0 .. 19 loop
        perform pg_temp.push_numbered('lq', 'c', 'c', i, i, t0 + (2 * i + 1) * interval '500 ms');
    end loop;
    perform pg_temp.push_numbered('lq2', 'a', 'd', 0, 3, t0 + interval '3 seconds');
    -- Group g takes the oldest 8 of a and completes them; the rest of the queue is pending for it.
    perform regina.pop('[{"queue":"lq","partition":"a","consumerGroup":"g","batch":8,
                          "autoAck":true,"subscriptionMode":"all"}]', t1);

    perform pg_temp.check('{"queue":"lq","limit":10}', t1, 10);
    perform pg_temp.check('{"queue":"lq","limit":10,"offset":25}', t1, 10);
    perform pg_temp.check('{"queue":"lq","limit":10,"offset":50}', t1, 5);
    perform pg_temp.check('{"queue":"lq","limit":100}', t1, 55);
    perform pg_temp.check('{"queue":"lq","limit":55}', t1, 55);
    perform pg_temp.check('{"queue":"lq","limit":54}', t1, 54);
    perform pg_temp.check('{"namespace":"ns","limit":7,"offset":3}', t1, 7);
    -- A window that leaves out the newest and the oldest.
    perform pg_temp.check(jsonb_build_object('queue', 'lq', 'limit', 6, 'offset', 2,
                                             'from', t0 + interval '5 seconds',
                                             'to', t0 + interval '20 seconds'), t1, 6);
    -- One partition: its window is a range of offsets, found by binary search.
    perform pg_temp.check(jsonb_build_object('queue', 'lq', 'partition', 'a', 'limit', 100,
                                             'from', t0 + interval '5 seconds',
                                             'to', t0 + interval '20 seconds'), t1, 16);
    perform pg_temp.check(jsonb_build_object('queue', 'lq', 'partition', 'c', 'limit', 2,
                                             'offset', 1, 'to', t0 + interval '3 seconds'), t1, 2);
    perform pg_temp.check(jsonb_build_object('queue', 'lq', 'partition', 'a', 'limit', 10,
                                             'from', t0 + interval '29 seconds'), t1, 1);
    perform pg_temp.check(jsonb_build_object('queue', 'lq', 'partition', 'a', 'limit', 10,
                                             'from', t0 - interval '1 hour',
                                             'to', t0 - interval '1 second'), t1, 0);
    -- The completed ones are the oldest of a: the merge's first reads (four messages of each
    -- partition, then sixteen) stop short of them, and it reads again with more.
    perform pg_temp.check('{"queue":"lq","consumerGroup":"g","status":"completed","limit":3}',
                          t1, 3);
    perform pg_temp.check('{"queue":"lq","consumerGroup":"g","status":"completed","limit":3,
                            "offset":4}', t1, 3);
    perform pg_temp.check('{"queue":"lq","consumerGroup":"g","status":"completed","limit":3,
                            "offset":6}', t1, 2);
    perform pg_temp.check('{"queue":"lq","consumerGroup":"g","status":"pending","limit":40,
                            "offset":5}', t1, 40);
    -- A queue of one partition: the merge's first read ends on its k-th message.
    perform pg_temp.push_numbered('lq3', 'a', 'e', 0, 9, t0);
    perform regina.pop('[{"queue":"lq3","consumerGroup":"g","batch":2,"autoAck":true,
                          "subscriptionMode":"all"}]', t1);
    perform pg_temp.check('{"queue":"lq3","consumerGroup":"g","status":"completed","limit":1}',
                          t1, 1);
    -- A page of 20 000 (3 x 20 001 messages may be merged; 3 x 80 004 may not): a status filter
    -- that reads past the first 20 001 of a partition goes on along the index.
    perform pg_temp.push_numbered('lq', 'b', 'bulk', 0, 20004, t0 + interval '13 seconds');
    perform pg_temp.check('{"queue":"lq","consumerGroup":"g","status":"completed",
                            "limit":20000}', t1, 8);
    perform pg_temp.check('{"queue":"lq","limit":20000,"offset":20}', t1, 20000);
end $$;
