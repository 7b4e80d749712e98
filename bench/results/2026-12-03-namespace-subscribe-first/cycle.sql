\set q random(0, 2)
select count(*) from regina.push_text(('[{"queue": "ns' || chr(97 + :q) || '", "partition": "p", "transactionId": "' || gen_random_uuid() || '", "messageId": "' || gen_random_uuid() || '"}]')::jsonb, '[1]');
select count(*) from regina.pop_text('[{"queue": null, "namespace": "ns", "consumerGroup": "g", "batch": 1, "partitions": 1, "autoAck": true}]');
