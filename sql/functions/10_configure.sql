-- Queue creation and configuration (merge semantics: absent options keep their stored value).

create or replace function regina.configure(i_req jsonb) returns jsonb
language plpgsql as $$
declare
    v_name text := i_req ->> 'queue';
    v_opts jsonb := coalesce(i_req -> 'options', '{}');
    v_q regina.queues;
    v_created boolean;
    v_lease integer := (v_opts ->> 'leaseTime')::integer;
    v_partition_uuid uuid;
begin
    insert into regina.queues (name, namespace, task)
    values (v_name,
            coalesce(i_req ->> 'namespace', split_part(v_name, '.', 1)),
            coalesce(i_req ->> 'task', split_part(v_name, '.', 2)))
    on conflict (name) do nothing;
    v_created := found;

    update regina.queues q set
        namespace = coalesce(i_req ->> 'namespace', q.namespace),
        task = coalesce(i_req ->> 'task', q.task),
        lease_time = coalesce(case when v_lease = 0 then 60 else v_lease end, q.lease_time),
        retry_limit = coalesce((v_opts ->> 'retryLimit')::integer, q.retry_limit),
        retry_delay_ms = coalesce((v_opts ->> 'retryDelay')::bigint, q.retry_delay_ms),
        max_size = coalesce((v_opts ->> 'maxSize')::bigint, q.max_size),
        ttl_seconds = coalesce((v_opts ->> 'ttl')::bigint, q.ttl_seconds),
        priority = coalesce((v_opts ->> 'priority')::integer, q.priority),
        delayed_processing_seconds =
            coalesce((v_opts ->> 'delayedProcessing')::integer, q.delayed_processing_seconds),
        window_buffer_seconds = coalesce((v_opts ->> 'windowBuffer')::integer, q.window_buffer_seconds),
        dead_letter_queue = coalesce((v_opts ->> 'deadLetterQueue')::boolean, q.dead_letter_queue),
        dlq_after_max_retries =
            coalesce((v_opts ->> 'dlqAfterMaxRetries')::boolean, q.dlq_after_max_retries),
        retention_enabled = coalesce((v_opts ->> 'retentionEnabled')::boolean, q.retention_enabled),
        retention_seconds = coalesce((v_opts ->> 'retentionSeconds')::bigint, q.retention_seconds),
        completed_retention_seconds =
            coalesce((v_opts ->> 'completedRetentionSeconds')::bigint, q.completed_retention_seconds),
        max_wait_time_seconds =
            coalesce((v_opts ->> 'maxWaitTimeSeconds')::bigint, q.max_wait_time_seconds),
        encryption_enabled = coalesce((v_opts ->> 'encryptionEnabled')::boolean, q.encryption_enabled)
    where q.name = v_name
    returning * into v_q;

    insert into regina.partitions (queue_id, name) values (v_q.id, 'Default')
    on conflict (queue_id, name) do nothing;
    select p.uuid into v_partition_uuid
    from regina.partitions p where p.queue_id = v_q.id and p.name = 'Default';

    return jsonb_build_object(
        'configured', true,
        'created', v_created,
        'queueId', v_q.uuid,
        'partitionId', v_partition_uuid,
        'queue', v_q.name,
        'namespace', v_q.namespace,
        'task', v_q.task,
        'options', regina._queue_options(v_q));
end
$$;
