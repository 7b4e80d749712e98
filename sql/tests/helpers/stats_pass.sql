-- One pass of the stats refresh at i_now in batches of i_batch partitions, as the leader runs
-- it; returns the partitions recounted.
create function pg_temp.stats_pass(i_now timestamptz, i_batch integer) returns bigint
language plpgsql as $$
declare
    v_n integer;
    v_total bigint := 0;
begin
    perform regina.stats_refresh_begin(i_now);
    loop
        v_n := regina.stats_refresh_batch(i_batch, i_now);
        v_total := v_total + abs(v_n);
        exit when v_n >= 0 and v_n < i_batch;
    end loop;
    perform regina.stats_refresh_end(v_total, i_now);
    return v_total;
end
$$;
