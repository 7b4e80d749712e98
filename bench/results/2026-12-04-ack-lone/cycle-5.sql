\set p random(1, 1000)
select public.ea_prepare(:p, 5) as acks \gset
select idx, result from regina.ack_text(:acks::text::jsonb);
