-- Failover replay and the maintenance switches (http-api.md §4.14).

-- Replays items the broker had buffered while PostgreSQL was unreachable (or during push
-- maintenance), in buffer order and in one transaction. The items carry the ids given at the
-- edge, so an item that reached the database before comes back `duplicate`. This is the one
-- place where replay differs from a push: replayed items were acknowledged already, so they are
-- never refused for capacity (`maxSize`, http-api.md §4.13).
create or replace function regina.failover_replay(i_items jsonb, i_payloads json)
returns table (idx integer, result jsonb)
language sql as $$
    select p.idx, p.result
    from regina.push(i_items => i_items, i_payloads => i_payloads, i_notify => false,
                     i_ignore_capacity => true) p
$$;

-- Sets a maintenance switch (`push` or `pop`) and announces it to every instance, which applies
-- it when the notification arrives (at commit).
create or replace function regina.maintenance_set(i_kind text, i_enabled boolean)
returns boolean
language plpgsql as $$
begin
    if i_kind is null or i_kind not in ('push', 'pop') then
        raise exception 'unknown maintenance switch %', i_kind using errcode = '22023';
    end if;
    insert into regina.maintenance (kind, enabled, changed_at)
    values (i_kind, i_enabled, clock_timestamp())
    on conflict (kind) do update set enabled = excluded.enabled, changed_at = excluded.changed_at;
    perform pg_notify('regina_maintenance',
                      jsonb_build_object('kind', i_kind, 'enabled', i_enabled)::text);
    return i_enabled;
end
$$;

-- The stored switches.
create or replace function regina.maintenance_get()
returns table (kind text, enabled boolean)
language sql stable as $$
    select m.kind, m.enabled from regina.maintenance m order by m.kind
$$;
