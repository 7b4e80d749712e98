-- A SQL function is inlined into the statement that calls it only when it is declared no stricter
-- than its body: an `immutable` one whose body calls a `stable` function (`jsonb_build_object`,
-- `to_char`, a cast of text to timestamptz) runs as a statement of its own at every call, with an
-- executor start each time (an ack built each item's result that way: 5.5 µs per item, about 7 %
-- of pop + ack/batch). Each immutable SQL function of the schema is compared with a stable copy of
-- itself, both called on columns of a table (constants would fold an immutable call away): when
-- the copy is inlined and the original is not, the original claims more than its body keeps.

create function pg_temp.plan_of(i_sql text) returns text
language plpgsql as $$
declare
    v_line text;
    v_plan text := '';
begin
    for v_line in execute 'explain (verbose, costs off) ' || i_sql loop
        v_plan := v_plan || v_line || E'\n';
    end loop;
    return v_plan;
end
$$;

do $$
declare
    f record;
    v_columns text;
    v_call text;
    v_plan text;
    v_declared text[] := '{}';
    v_checked integer := 0;
begin
    for f in
        select p.oid, p.proname, p.prosrc, pg_get_function_arguments(p.oid) as arguments,
               pg_get_function_result(p.oid) as result, p.proargtypes::oid[] as types
        from pg_proc p
        join pg_namespace n on n.oid = p.pronamespace
        join pg_language l on l.oid = p.prolang
        where n.nspname = 'regina' and l.lanname = 'sql' and p.provolatile = 'i'
          and p.prokind = 'f' and not p.proretset and p.proconfig is null
        order by p.proname
    loop
        select coalesce(string_agg(format('a%s %s', a.ord, format_type(a.t, null)), ', '
                                   order by a.ord), ''),
               coalesce(string_agg(format('a%s', a.ord), ', ' order by a.ord), '')
        into v_columns, v_call
        from unnest(f.types) with ordinality a(t, ord);
        execute format('create temp table args_%s (%s)', f.proname, v_columns);
        execute format('create function pg_temp.copy_%s(%s) returns %s language sql stable as %L',
                       f.proname, f.arguments, f.result, f.prosrc);

        v_plan := pg_temp.plan_of(format('select pg_temp.copy_%s(%s) from args_%s',
                                         f.proname, v_call, f.proname));
        if position('copy_' || f.proname || '(' in v_plan) = 0 then
            -- The stable copy is inlined: so must the original be.
            v_plan := pg_temp.plan_of(format('select regina.%I(%s) from args_%s',
                                             f.proname, v_call, f.proname));
            if position('regina.' || f.proname || '(' in v_plan) > 0 then
                v_declared := v_declared || f.proname::text;
            end if;
        end if;
        v_checked := v_checked + 1;
    end loop;
    assert v_checked >= 5, format('the immutable SQL functions were found: %s', v_checked);
    assert cardinality(v_declared) = 0,
        format('declared immutable, but their bodies are not (mark them stable): %s', v_declared);
end
$$;
