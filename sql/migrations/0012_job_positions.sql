-- Where each deletion job stands in its scan of the partitions. A call of retention, eviction or
-- partition cleanup examines a bounded window of partitions and the next call resumes after it,
-- so every statement stays short however many partitions exist; a pass is the calls from the
-- first queue (partition) to the last.
create table regina.job_positions (
    job        text primary key,
    queue_id   bigint,   -- retention, eviction: the queue being scanned (null: the first)
    after_name text,     -- retention, eviction: the last partition examined in it, by name
    after_id   bigint    -- partition cleanup: the last partition examined, by id
);
