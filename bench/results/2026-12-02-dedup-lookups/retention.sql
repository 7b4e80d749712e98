\timing on
begin;
select sum(removed) from regina.retention_run(1000, clock_timestamp() + interval '1 hour');
rollback;
begin;
select sum(removed) from regina.retention_run(1000, clock_timestamp() + interval '1 hour');
rollback;
