-- The id of partition i_partition of queue i_queue (null when there is none).
create function pg_temp.partition_id(i_queue text, i_partition text) returns bigint
language sql as $$
    select p.id from regina.partitions p join regina.queues q on q.id = p.queue_id
    where q.name = i_queue and p.name = i_partition
$$;
