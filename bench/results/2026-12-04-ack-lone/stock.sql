-- public.ea_stock(table, queue, rows, items): leases, once, rows x items messages of queue (its
-- lease time two hours) through public.ea_prepare (prepare.sql, loaded first) and keeps each
-- row's ack items in public.<table> (id, acks). ack-call-N.sql and lone-call-N.sql ack one row and
-- roll back, so that the rows can be acked again and again:
--   select public.ea_stock('stock', 'eb', 20000, 1);
--   select public.ea_stock('stock3', 'ec', 5000, 3);
create or replace function public.ea_stock(i_table text, i_queue text, i_rows integer,
                                           i_items integer) returns void
language plpgsql as $f$
begin
  perform regina.configure(jsonb_build_object('queue', i_queue,
                                              'options', '{"leaseTime": 7200}'::jsonb));
  execute format('drop table if exists public.%I', i_table);
  execute format('create table public.%I (id bigint primary key, acks jsonb)', i_table);
  for k in 1..i_rows loop
    execute format('insert into public.%I values ($1, $2)', i_table)
      using k, public.ea_prepare(k, i_items, i_queue);
  end loop;
end $f$;
