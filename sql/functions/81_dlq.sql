-- Dead-letter listing (GET /api/v1/dlq): newest failure first, filtered (queue, consumerGroup,
-- partition, from, to, and the caller's `scopes`), paged, with the total.
-- Encrypted copies carry `payloadKeyId`, as pop results do (ADR 0006).

create or replace function regina.dlq_list(i_query jsonb, i_now timestamptz default null)
returns json
language plpgsql stable as $$
declare
    v_limit integer := coalesce((i_query ->> 'limit')::integer, 100);
    v_offset integer := coalesce((i_query ->> 'offset')::integer, 0);
    v_total bigint;
    v_rows json;
begin
    -- Narrow rows to count and sort; whole entries only for the page.
    with matching as (
        select d.id, d.failed_at from regina.dead_letters d
        join regina.queues q on q.id = d.queue_id
        where (i_query ->> 'queue' is null or q.name = i_query ->> 'queue')
          and (i_query ->> 'consumerGroup' is null or d.consumer_group = i_query ->> 'consumerGroup')
          and (i_query ->> 'partition' is null
               or exists (select 1 from regina.partitions p
                          where p.id = d.partition_id and p.name = i_query ->> 'partition'))
          and (i_query ->> 'from' is null or d.failed_at >= (i_query ->> 'from')::timestamptz)
          and (i_query ->> 'to' is null or d.failed_at <= (i_query ->> 'to')::timestamptz)
          and regina._queue_in_scopes(q.name, regina._query_scopes(i_query)))
    select (select count(*) from matching),
           (select coalesce(json_agg(case when x.payload_key_id is null then o.entry
                                          else regina._sealed_mark(o.entry, x.payload_key_id) end
                                     order by x.failed_at desc, x.id desc), '[]'::json)
            from (select m.id from matching m order by m.failed_at desc, m.id desc
                  limit v_limit offset v_offset) k
            join regina.dead_letters x on x.id = k.id
            join regina.queues q on q.id = x.queue_id
            left join regina.partitions p on p.id = x.partition_id
            cross join lateral (select json_build_object(
                        'id', x.message_id, 'transactionId', x.transaction_id,
                        'partitionId', p.uuid, 'queue', q.name,
                        'partition', p.name, 'consumerGroup', x.consumer_group,
                        'errorMessage', x.error_message, 'retryCount', x.retry_count,
                        'data', x.payload, 'traceId', x.trace_id, 'producerSub', x.producer_sub,
                        'createdAt', regina._ts_us(x.created_at),
                        'failedAt', regina._ts(x.failed_at)) as entry) o)
    into v_total, v_rows;
    return json_build_object(
        'messages', v_rows, 'total', v_total,
        'pagination', json_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total));
end
$$;
