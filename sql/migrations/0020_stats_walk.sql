-- The stats refresh's batches compare the partitions of a pass's window with their counts as they
-- go (functions/91_stats_refresh.sql), instead of the pass's start listing every partition whose
-- offsets moved in `stats_dirty`: where that comparison stands in the current pass, the window
-- being (walk_after_id, walk_last_id].
alter table regina.stats_state add column walk_after_id bigint not null default 0;
alter table regina.stats_state add column walk_last_id bigint not null default 0;
