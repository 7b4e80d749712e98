-- A pop request may ask for its group's quiet on the queue (regina._pop_one's o_quiet): only the
-- broker's long-polls of one named queue do, so other pops skip that lookup.
alter type regina.pop_request add attribute quiet boolean;
