-- GET /api/v1/consumer-groups/analytics and /__QUEUE_MODE__ (50 105 and 79 996 cursors) on the
-- fixture of `regina-bench explain --keep-db`: the default page twice, the dashboard's page
-- (sort=lag, 200) twice, and the same for queue mode.
\timing on
select length(regina.consumer_group_detail('analytics', '{"limit": 10000, "offset": 0}')::text) > 0;
select length(regina.consumer_group_detail('analytics', '{"limit": 10000, "offset": 0}')::text) > 0;
select length(regina.consumer_group_detail('analytics', '{"limit": 200, "offset": 0, "sort": "lag"}')::text) > 0;
select length(regina.consumer_group_detail('analytics', '{"limit": 200, "offset": 0, "sort": "lag"}')::text) > 0;
select length(regina.consumer_group_detail('__QUEUE_MODE__', '{"limit": 10000, "offset": 0}')::text) > 0;
select length(regina.consumer_group_detail('__QUEUE_MODE__', '{"limit": 10000, "offset": 0}')::text) > 0;
select length(regina.consumer_group_detail('__QUEUE_MODE__', '{"limit": 200, "offset": 0, "sort": "lag"}')::text) > 0;
