-- public.ea_prepare(p, n, queue): pushes n messages to partitions p*10+1 .. p*10+n of queue (one
-- each), leases them for group w by n pops of one message, and returns the ack items of those
-- leases, as a consumer taking a message at a time would send them (cycle-N.sql acks them).
create or replace function public.ea_prepare(i_p integer, i_n integer default 3,
                                             i_queue text default 'ea') returns jsonb
language plpgsql as $f$
declare v_acks jsonb := '[]'; v_pop json; v_lease text; g integer;
begin
  perform regina.push_text((select jsonb_agg(jsonb_build_object('queue', i_queue,
                                'partition', 'p' || (i_p * 10 + s.k),
                                'transactionId', gen_random_uuid()::text,
                                'messageId', gen_random_uuid()::text))
                            from generate_series(1, i_n) s(k)),
                           (select json_agg(json_build_object('n', s.k))
                            from generate_series(1, i_n) s(k)));
  for g in 1..i_n loop
    v_lease := gen_random_uuid()::text;
    select p.result::json into v_pop from regina.pop_text(jsonb_build_array(jsonb_build_object(
        'queue', i_queue, 'consumerGroup', 'w', 'batch', 1, 'partitions', 1,
        'leaseId', v_lease))) p;
    v_acks := v_acks || (select coalesce(jsonb_agg(jsonb_build_object(
                                    'transactionId', x ->> 'transactionId',
                                    'partitionId', x ->> 'partitionId', 'leaseId', v_lease,
                                    'consumerGroup', 'w', 'status', 'completed')), '[]')
                         from json_array_elements(v_pop -> 'messages') x);
  end loop;
  return v_acks;
end $f$;
