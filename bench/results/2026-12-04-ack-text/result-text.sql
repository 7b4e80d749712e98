-- One ack result written two ways, 100 000 times: jsonb_build_object of its eight members and the
-- text of it (what the broker read before), against regina._ack_result_text. Run with psql
-- \timing on a database `regina migrate` set up.
create temp table it as
select row(0, 'tx-' || g, 'completed', null, null, null, 42, 'part-' || g, 7, 'queue-name', 12,
           'g', false)::regina.ack_item a
from generate_series(1, 100000) g;
create function pg_temp.old_result(i_item regina.ack_item, i_code text, i_released boolean,
                                   i_dlq boolean) returns jsonb
language sql stable as $$
    select jsonb_build_object('transactionId', i_item.transaction_id, 'success', i_code is null,
        'error', case i_code when 'message_not_found' then 'Message not found' end, 'code', i_code,
        'queueName', i_item.queue_name, 'partitionName', i_item.partition_name,
        'leaseReleased', i_released, 'dlq', i_dlq)
$$;
\timing on
select count(pg_temp.old_result(a, null, false, false)::text) from it;
select count(regina._ack_result_text(a, null, false, false)) from it;
select count(pg_temp.old_result(a, null, false, false)::text) from it;
select count(regina._ack_result_text(a, null, false, false)) from it;
