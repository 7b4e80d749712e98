-- Queue scopes of the caller's token (http-api.md §1.6) as listings receive them: an optional
-- `scopes` array in their query JSON. Absent or null: every queue (regina._queue_in_scopes,
-- 00_util.sql).
create or replace function regina._query_scopes(i_query jsonb) returns text[]
language sql immutable parallel safe as $$
    select case when jsonb_typeof(i_query -> 'scopes') = 'array'
                then array(select jsonb_array_elements_text(i_query -> 'scopes')) end
$$;
