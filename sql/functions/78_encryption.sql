-- Encrypted payloads (http-api.md §4.13, ADR 0006). The broker encrypts and decrypts; the database
-- only stores a payload with the id of the key that encrypted it (`payload_key_id`, null: as sent).

-- A wire object (pop message, DLQ entry) whose `data` is an encrypted payload, marked with the
-- key that encrypted it; the broker decrypts `data` and removes the mark. The object holds no
-- payload in clear, so its trip through jsonb changes nothing that matters.
create or replace function regina._sealed_mark(i_object json, i_key_id text) returns json
language sql stable parallel safe as $$
    select (i_object::jsonb || jsonb_build_object('payloadKeyId', i_key_id))::json
$$;
