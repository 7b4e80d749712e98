-- A function that turns a plan method off (`set enable_seqscan = off`, …) makes PostgreSQL count
-- every plan node of that method at 10^10. Where the method is unavoidable (a one-row table such
-- as `stats_state`, the sort of a window function) the statement's cost lands far over
-- `jit_above_cost` (100 000 by default), and PostgreSQL compiles it with LLVM at every execution:
-- the stats pass paid about 190 ms of CPU per pass that way, a namespace pop 130-160 ms per call,
-- a page of the message listing 80 ms. So each such function also sets `jit = off`.
--
-- This checks the rule over the catalogue; the plan tests (`tests/it/plans`) check that no
-- statement their calls execute is compiled, with JIT on at the server's default thresholds.

do $$
declare
    v_missing text;
    v_checked integer;
begin
    select string_agg(p.proname, ', ' order by p.proname),
           (select count(*) from pg_proc p2
            join pg_namespace n2 on n2.oid = p2.pronamespace
            where n2.nspname = 'regina'
              and exists (select from unnest(p2.proconfig) c where c like 'enable\_%=off'))
    into v_missing, v_checked
    from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'regina'
      and exists (select from unnest(p.proconfig) c where c like 'enable\_%=off')
      and not 'jit=off' = any(p.proconfig);
    assert v_checked >= 25, format('only %s functions turn a plan method off', v_checked);
    assert v_missing is null,
        format('functions that turn a plan method off but leave JIT on: %s', v_missing);
end
$$;
