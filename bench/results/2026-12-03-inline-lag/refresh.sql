-- One stats batch of the first 5 000 partitions with ready rows (11 804 ready rows: 3 571 with a
-- cursor behind the end, 8 233 of groups without a cursor there), rolled back; auto_explain logs
-- the durations of its statements over 50 ms.
load 'auto_explain'; set auto_explain.log_min_duration=50; set auto_explain.log_nested_statements=on; set auto_explain.log_level=notice; set client_min_messages=notice;
begin;
insert into regina.stats_dirty (partition_id)
select r.partition_id from regina.ready r group by r.partition_id order by r.partition_id limit 5000
on conflict do nothing;
select regina.stats_refresh_batch(5000);
rollback;
