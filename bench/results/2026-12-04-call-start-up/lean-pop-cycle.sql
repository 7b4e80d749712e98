\set p random(0, 99)
select count(*) from regina.push_text(('[{"queue": "e2eq", "partition": "p' || :p || '", "transactionId": "' || gen_random_uuid() || '", "messageId": "' || gen_random_uuid() || '"}]')::jsonb, '[{"message":"Hello World"}]');
select count(*) from regina._x_lean_pop('e2eq', 'e2e', 10);
