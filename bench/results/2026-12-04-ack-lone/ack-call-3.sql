\set i random(1, 5000)
begin;
select idx, result from regina.ack_text((select acks from public.stock3 where id = :i));
rollback;
