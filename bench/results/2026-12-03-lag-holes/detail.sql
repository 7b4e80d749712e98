-- GET /api/v1/consumer-groups/analytics and /__QUEUE_MODE__ (65 000 and 80 000 cursors) on the
-- fixture of `regina-bench explain --keep-db`, three times each.
\timing on
select length(regina.consumer_group_detail('analytics', '{"limit": 10000, "offset": 0}')::text) > 0;
select length(regina.consumer_group_detail('analytics', '{"limit": 10000, "offset": 0}')::text) > 0;
select length(regina.consumer_group_detail('analytics', '{"limit": 10000, "offset": 0}')::text) > 0;
select length(regina.consumer_group_detail('__QUEUE_MODE__', '{"limit": 10000, "offset": 0}')::text) > 0;
select length(regina.consumer_group_detail('__QUEUE_MODE__', '{"limit": 10000, "offset": 0}')::text) > 0;
select length(regina.consumer_group_detail('__QUEUE_MODE__', '{"limit": 10000, "offset": 0}')::text) > 0;
