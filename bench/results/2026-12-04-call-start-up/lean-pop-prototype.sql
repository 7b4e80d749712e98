-- A measurement, not a part of Regina: the least a one-request autoAck pop of one named queue
-- could do, for the plain case only (a queue without delay, window or ttl; a cursor without a
-- lease, a retry or settled marks ahead; a group subscribed already; no quiet answer, no events).
-- Four statements in one PL/pgSQL function, against regina.pop_text's chain of functions. It
-- answers what regina.pop_text answers in that case (the same _pop_answer text), and null where
-- it would need more. Load it into a database that `regina migrate` set up.
create or replace function regina._x_lean_pop(i_queue text, i_group text, i_batch integer)
returns text
language plpgsql set plan_cache_mode = force_generic_plan set enable_seqscan = off set jit = off
as $$
declare
    v_now timestamptz := clock_timestamp();
    v_q regina.queues;
    v_c regina.cursors;
    v_read record;
begin
    select * into v_q from regina.queues q where q.name = i_queue;
    -- The first claimable partition whose cursor nobody holds, locked.
    select c.* into v_c
    from regina.ready r
    cross join lateral (select cc.* from regina.cursors cc
                        where cc.partition_id = r.partition_id and cc.consumer_group = i_group
                        for update skip locked) c
    where r.queue_id = v_q.id and r.consumer_group = i_group and r.eligible_at <= v_now
    order by r.eligible_at, r.partition_id
    limit 1;
    if not found or v_c.lease_active or v_c.retry_after > v_now or cardinality(v_c.marks) > 0 then
        return null;
    end if;
    select array_agg(regina._message_text(m.id, m.transaction_id, m.trace_id, m.payload,
                                          m.producer_sub, m.created_at, p.uuid, p.name, v_q.name,
                                          '', i_group,
                                          case when m.seq = v_c.next_seq then v_c.head_attempts
                                               else 0 end, m.payload_key_id)) as texts,
           max(m.seq) as last, min(p.name) as name, min(p.uuid::text) as uuid
    into v_read
    from regina.partitions p
    cross join lateral (select mm.* from regina.messages mm
                        where mm.partition_id = p.id and mm.seq >= v_c.next_seq
                          and mm.for_group is null
                        order by mm.seq limit i_batch) m
    where p.id = v_c.partition_id;
    if v_read.last is null then
        return null;
    end if;
    update regina.cursors c
    set next_seq = v_read.last + 1, head_attempts = 0, head_error = null,
        total_consumed = c.total_consumed + cardinality(v_read.texts),
        batches_consumed = c.batches_consumed + 1, last_consumed_at = v_now,
        last_claim_at = v_now
    where c.partition_id = v_c.partition_id and c.consumer_group = i_group;
    -- Drained: the ready row goes, under the partition's share lock; else to the back of the line.
    with drained as (select pp.id from regina.partitions pp
                     where pp.id = v_c.partition_id and pp.next_seq <= v_read.last + 1
                     for share skip locked),
         gone as (delete from regina.ready r using drained d
                  where r.partition_id = d.id and r.consumer_group = i_group returning 1)
    update regina.ready r set eligible_at = v_now
    where r.partition_id = v_c.partition_id and r.consumer_group = i_group
      and not exists (select 1 from drained);
    return regina._pop_answer(v_q.name, v_read.name, v_read.uuid::uuid, '', i_group, 1,
                              v_read.texts);
end
$$;
