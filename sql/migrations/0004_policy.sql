-- Queue policies: encrypted payloads, the records of background job passes, and the cursor's
-- link to its partition (partition cleanup deletes partitions; their cursors go with them).

-- The key that encrypted a payload (docs/adr/0006-encrypted-payloads.md); null: stored as sent.
-- A dead letter's copy follows its message.
alter table regina.messages add column payload_key_id text;
alter table regina.dead_letters add column payload_key_id text;

-- Push items carry it into regina.push, with what the push learned about the item's queue.
alter type regina.push_item add attribute payload_key_id text;
alter type regina.push_item add attribute queue_id bigint;
alter type regina.push_item add attribute max_size bigint;
alter type regina.push_item add attribute encrypting boolean;

-- Cursors of a deleted partition go with it. Inserting a cursor takes a key-share lock on its
-- partition row, so a job holding that row `for update` keeps new cursors out while it deletes.
delete from regina.cursors c
where not exists (select 1 from regina.partitions p where p.id = c.partition_id);
alter table regina.cursors add constraint cursors_partition_fk
    foreign key (partition_id) references regina.partitions (id) on delete cascade;

-- One row per pass of a background job (retention, eviction, partition cleanup), written by the
-- instance that ran it: when each job last ran, where, and what it removed. Each job keeps its
-- latest passes only.
create table regina.job_runs (
    id          bigint generated always as identity primary key,
    job         text not null,
    worker_id   text not null,
    started_at  timestamptz not null,
    finished_at timestamptz not null,
    removed     bigint not null default 0   -- messages (retention, eviction) or partitions
);

create index job_runs_job on regina.job_runs (job, id desc);

-- regina.push takes `i_ignore_capacity` (failover replay) and its resolver reports the capped
-- queues it locked: new signatures, created by functions/20_push.sql.
drop function if exists regina.push(jsonb, json, boolean, timestamptz);
drop function if exists regina._push_resolve(jsonb, json);

-- Partition cleanup keeps partitions that still have dead letters.
create index dead_letters_partition on regina.dead_letters (partition_id);
