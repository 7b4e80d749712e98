\set p random(0, 99)
select count(*) from regina.push_text(('[{"queue": "e2eq", "partition": "p' || :p || '", "transactionId": "' || gen_random_uuid() || '", "messageId": "' || gen_random_uuid() || '"}]')::jsonb, '[{"message":"Hello World"}]');
select count(*) from regina.pop_text('[{"queue": "e2eq", "partition": null, "namespace": null, "task": null, "consumerGroup": "e2e", "batch": 10, "partitions": 1, "autoAck": true, "subscriptionMode": null, "subscriptionFrom": null, "leaseId": "0190b6c2-0000-7000-8000-000000000001", "quiet": true}]');
