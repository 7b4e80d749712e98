select to_char(clock_timestamp(), 'HH24:MI:SS.MS') t, pid, backend_type b, wait_event_type w,
       wait_event e, round(extract(epoch from clock_timestamp() - query_start) * 1000) ms,
       left(regexp_replace(coalesce(query, ''), '\s+', ' ', 'g'), 40) q
from pg_stat_activity
where pid <> pg_backend_pid()
  and (backend_type = 'autovacuum worker'
       or (state = 'active' and backend_type = 'client backend'
           and clock_timestamp() - query_start > interval '8 ms'))
\watch 0.02
