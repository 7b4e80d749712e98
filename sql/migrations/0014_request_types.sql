-- The shapes of the requests the hot functions take as JSON arrays (sql/README.md), declared once:
-- each function reads its array into these records in one place (jsonb_populate_recordset)
-- instead of picking keys out of JSON wherever it needs them. Field names are the JSON keys.

-- One pushed item (regina.push, regina.partitions_ensure, failover replay, transactions).
create type regina.push_request as (
    queue           text,
    partition       text,
    "transactionId" text,
    "messageId"     uuid,
    "traceId"       text,
    "producerSub"   text,
    "payloadKeyId"  text,
    payload         json    -- used only when the payloads do not travel beside the items
);

-- One pop request (regina.pop).
create type regina.pop_request as (
    queue              text,
    partition          text,
    namespace          text,
    task               text,
    "consumerGroup"    text,
    batch              integer,
    partitions         integer,
    "autoAck"          boolean,
    "subscriptionMode" text,
    "subscriptionFrom" text,
    "leaseId"          uuid,
    scopes             text[]
);

-- One acknowledgement (regina.ack, transactions, streams cycles). Ids stay text: an invalid one
-- is an answer (message_not_found, lease_expired), not an error.
create type regina.ack_request as (
    "transactionId" text,
    "partitionId"   text,
    status          text,
    "leaseId"       text,
    "consumerGroup" text,
    error           text
);
