\set i random(1, 5000)
begin;
select idx, result from regina._ack_lone((select acks from public.stock3 where id = :i), clock_timestamp());
rollback;
