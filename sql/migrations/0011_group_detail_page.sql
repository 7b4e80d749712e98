-- The consumer-group detail takes a page request (functions/71_consumer_groups.sql): its former
-- signature would make a call with the group alone ambiguous.
drop function if exists regina.consumer_group_detail(text, timestamptz);
