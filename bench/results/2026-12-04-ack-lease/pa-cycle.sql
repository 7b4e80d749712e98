create or replace function public.pa_cycle(i_p integer, i_parts integer default 1) returns integer language plpgsql as $f$
declare v_pop json; v_acks jsonb; v_lease text := gen_random_uuid()::text; n integer;
begin
  perform regina.push_text((select jsonb_agg(jsonb_build_object('queue','pa','partition','p'||(i_p * 10 + g % i_parts),'transactionId',gen_random_uuid()::text,'messageId',gen_random_uuid()::text)) from generate_series(1,100) g),
                           (select json_agg(json_build_object('n',g)) from generate_series(1,100) g));
  select json_agg(p.result::json) into v_pop from regina.pop_text(jsonb_build_array(jsonb_build_object('queue','pa','consumerGroup','w','batch',100,'partitions',i_parts,'leaseId',v_lease))) p;
  select jsonb_agg(jsonb_build_object('transactionId', m.tid, 'partitionId', m.pid, 'leaseId', v_lease, 'consumerGroup', 'w', 'status', 'completed'))
  into v_acks
  from (select x ->> 'transactionId' as tid, x ->> 'partitionId' as pid
        from json_array_elements(v_pop) e, json_array_elements(e -> 'messages') x) m;
  select count(*) into n from regina.ack(v_acks);
  return n;
end $f$;
