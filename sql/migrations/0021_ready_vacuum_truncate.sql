-- A vacuum that finds empty pages at the end of a table truncates them, and for that takes an
-- ACCESS EXCLUSIVE lock on the table. On the ready set, which every push and pop reads or writes
-- and whose rows come and go all the time, autovacuum kept asking for that lock (wait event
-- `VacuumTruncate`), and while it held it every push and pop waited. The ready set keeps its
-- pages instead: its rows' churn fills them again.
alter table regina.ready set (vacuum_truncate = off);
