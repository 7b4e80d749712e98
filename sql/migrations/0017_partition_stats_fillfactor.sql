-- Every pass of the stats refresh rewrites the counts of each partition it recounts. None of the
-- columns it changes is indexed, so with room on the page the rewrite is a HOT update (no new
-- entries in the table's two indexes); with full pages each one was a new version elsewhere and
-- two index inserts. Tables created before this take the setting for the pages written from now
-- on, so they converge as rows move; `vacuum full regina.partition_stats` applies it at once.
alter table regina.partition_stats set (fillfactor = 50);
