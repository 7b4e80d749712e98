create or replace function public.ea_stock3(i_rows integer, i_items integer) returns void language plpgsql as $f$
declare v_acks jsonb; v_pop json; v_lease text; k integer; g integer;
begin
  perform regina.configure('{"queue":"ec","options":{"leaseTime":7200}}');
  drop table if exists public.stock3; create table public.stock3 (id bigint primary key, acks jsonb);
  drop sequence if exists public.stock3_seq; create sequence public.stock3_seq;
  for k in 1..i_rows loop
    v_acks := '[]';
    perform regina.push_text((select jsonb_agg(jsonb_build_object('queue','ec','partition','p'||(k * 10 + s.g),'transactionId',gen_random_uuid()::text,'messageId',gen_random_uuid()::text)) from generate_series(1,i_items) s(g)),
                             (select json_agg(s.g) from generate_series(1,i_items) s(g)));
    for g in 1..i_items loop
      v_lease := gen_random_uuid()::text;
      select p.result::json into v_pop from regina.pop_text(jsonb_build_array(jsonb_build_object('queue','ec','consumerGroup','w','batch',1,'partitions',1,'leaseId',v_lease))) p;
      v_acks := v_acks || (select coalesce(jsonb_agg(jsonb_build_object('transactionId', x ->> 'transactionId', 'partitionId', x ->> 'partitionId', 'leaseId', v_lease, 'consumerGroup', 'w', 'status', 'completed')), '[]')
                           from json_array_elements(v_pop -> 'messages') x);
    end loop;
    insert into public.stock3 values (k, v_acks);
  end loop;
end $f$;
