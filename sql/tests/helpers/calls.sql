-- How many times this transaction called function regina.<i_name> (0: never). Calls are counted
-- with track_functions on ('pl' counts PL/pgSQL functions; SQL functions that are inlined are
-- never calls).
create function pg_temp.calls(i_name text) returns bigint
language sql as $$
    select coalesce((select f.calls from pg_stat_xact_user_functions f
                     where f.schemaname = 'regina' and f.funcname = i_name), 0)
$$;
