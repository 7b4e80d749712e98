-- A push and the pops of long-polls parked on its queues, in one transaction (http-api.md §4.9):
-- the broker hands a fused push call the pop requests of the long-polls that push would wake,
-- and each of them gets its answer at the push's commit instead of asking in a transaction of its
-- own after it. The pops run after the push, so they see its messages, and commit or fail with
-- it.
--
-- Rows: the push's rows (`pop` false, `idx` its item), then one row per pop request that ran
-- (`pop` true, `idx` its place in i_reqs). A request whose group has no subscription to its queue
-- yet does not run and has no row (the broker asks again on its own): subscribing takes the
-- partitions table in share mode, which waits for the pushes in flight, and this transaction
-- holds partition rows those pushes may be waiting for. Every other lock a pop takes is taken
-- `skip locked` or is one this transaction holds already.
--
-- The commit waits for the disk as a push does: regina.pop_text turns `synchronous_commit` off
-- for a call that only claims, so its setting is put back before returning.
create or replace function regina.push_pop_text(i_items jsonb, i_payloads json, i_reqs jsonb)
returns table (pop boolean, idx integer, result text, events json, quiet text)
language plpgsql set plan_cache_mode = force_generic_plan set enable_seqscan = off
    set jit = off as $$
declare
    v_commit text := current_setting('synchronous_commit');
    v_reqs jsonb;
    v_places integer[];
    v_typed regina.pop_request[];
    v_lone record;
begin
    return query select false, p.idx, p.result, null::json, null::text
                 from regina.push_text(i_items, i_payloads, false) p;
    -- Requests that are one, or one run of alike ones, in the plain case (which has the
    -- subscription): answered by _pop_lone here, without the sorting out below and the call
    -- of regina.pop_text (whose commit setting this transaction would not keep anyway).
    v_typed := array(select r from jsonb_populate_recordset(null::regina.pop_request, i_reqs) r);
    v_lone := regina._pop_lone(v_typed, clock_timestamp());
    if v_lone.o_results is not null then
        for k in 1 .. cardinality(v_typed) loop
            pop := true;
            idx := k - 1;
            result := v_lone.o_results[k];
            events := case when k = 1 then v_lone.o_events end;
            quiet := v_lone.o_quiet;
            return next;
        end loop;
        return;
    end if;
    select jsonb_agg(r.req order by r.ord), array_agg(r.ord::integer - 1 order by r.ord)
    into v_reqs, v_places
    from jsonb_array_elements(i_reqs) with ordinality r(req, ord)
    where (select 1 from regina.queues q
           join regina.subscriptions s on s.queue_id = q.id
           where q.name = r.req ->> 'queue'
             and s.consumer_group = coalesce(nullif(r.req ->> 'consumerGroup', ''),
                                             '__QUEUE_MODE__')) is not null;
    if v_reqs is not null then
        return query select true, v_places[p.idx + 1], p.result, p.events, p.quiet
                     from regina.pop_text(v_reqs) p;
        perform set_config('synchronous_commit', v_commit, true);
    end if;
end
$$;
