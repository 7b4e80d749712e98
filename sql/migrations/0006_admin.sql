-- Administration of queues and messages (http-api.md §3.8, §3.9): requeued deliveries, and the
-- indexes the admin listings need.

-- A requeued delivery (POST /messages/…/retry, http-api.md §4.7) is a row of `messages` at the tail
-- of its partition, with the original message's id, transactionId, payload and createdAt, meant for
-- one consumer group only: `for_group` names it. Every other group treats it as settled. Ordinary
-- messages have `for_group` null. See docs/adr/0006-requeued-deliveries.md.
alter table regina.messages add column for_group text;

-- Deduplication keys belong to ordinary messages only: a requeued delivery repeats its message's
-- transactionId in the same partition.
drop index regina.messages_dedup;
create unique index messages_dedup on regina.messages (partition_id, transaction_id)
    where for_group is null;

-- Requeued deliveries of a partition (few: an admin action creates each one). Acks and admin
-- calls find a group's delivery of a transactionId here; counts subtract them.
create index messages_requeued on regina.messages (partition_id, seq)
    where for_group is not null;

-- GET /api/v1/messages lists stored messages newest first within a time window, across queues.
-- Without this index that listing reads every message; with it, it reads one page. Costs each
-- pushed message one more index entry (mostly on the rightmost leaf, where PostgreSQL inserts
-- monotonically increasing keys without a descent).
create index messages_created_at on regina.messages (created_at);

-- A dead letter found by its partition and transactionId (message detail, requeue and delete
-- after the original was removed by retention), and counted per partition.
create index dead_letters_message on regina.dead_letters (partition_id, transaction_id);

-- The head search now knows the group (requeued deliveries of other groups are not its work):
-- the three-argument versions go, so a caller that was not updated fails loudly.
drop function if exists regina._head_seq(bigint, bigint, bigint[]);
drop function if exists regina._advance(bigint, bigint, bigint[]);
