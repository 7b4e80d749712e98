-- Queue scopes of a token (http-api.md §1.6): an exact name, or a prefix ending in `*`; no scopes
-- allow every queue.
do $$
begin
    assert regina._queue_in_scopes('orders', null), 'no scopes allow every queue';
    assert regina._queue_in_scopes('orders', array['orders']), 'exact name';
    assert not regina._queue_in_scopes('orders.eu', array['orders']), 'an exact entry is not a prefix';
    assert regina._queue_in_scopes('orders.eu', array['audit', 'orders.*']), 'prefix entry';
    assert regina._queue_in_scopes('orders.', array['orders.*']), 'the prefix alone matches';
    assert not regina._queue_in_scopes('orders', array['orders.*']), 'shorter than the prefix';
    assert regina._queue_in_scopes('anything', array['*']), 'a lone * allows every queue';
    assert not regina._queue_in_scopes('orders', array[]::text[]), 'empty scopes allow nothing';
    assert not regina._queue_in_scopes('ORDERS', array['orders']), 'names are case-sensitive';
    assert regina._queue_in_scopes('a*b', array['a*b']), 'an inner * is literal';
    assert not regina._queue_in_scopes('axb', array['a*b']), 'an inner * is not a wildcard';
end
$$;
