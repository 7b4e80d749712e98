-- Pushes messages i_from .. i_to to one partition in one call, at i_now: message i has payload i
-- and transactionId i_prefix || i.
create function pg_temp.push_numbered(i_queue text, i_partition text, i_prefix text,
                                      i_from integer, i_to integer, i_now timestamptz)
returns void
language plpgsql as $$
begin
    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', i_queue, 'partition', i_partition, 'payload', i,
                             'transactionId', i_prefix || i, 'messageId', gen_random_uuid())
                             order by i)
                         from generate_series(i_from, i_to) i), i_now => i_now);
end
$$;
