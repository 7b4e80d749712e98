\set i random(1, 20000)
begin;
select idx, result from regina.ack_text((select acks from public.stock where id = :i));
rollback;
