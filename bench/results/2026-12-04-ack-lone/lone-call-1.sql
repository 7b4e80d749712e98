\set i random(1, 20000)
begin;
select idx, result from regina._ack_lone((select acks from public.stock where id = :i), clock_timestamp());
rollback;
