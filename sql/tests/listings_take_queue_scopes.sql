-- Listings receive a token's queue scopes as `scopes` in their query JSON (http-api.md §1.6) and
-- leave out the queues the scopes forbid; absent or null scopes allow every queue.
do $$
declare
    v_all json;
    v_scoped json;
begin
    assert regina._query_scopes('{}') is null, 'absent scopes';
    assert regina._query_scopes('{"scopes": null}') is null, 'null scopes';
    assert regina._query_scopes('{"scopes": ["a", "b*"]}') = array['a', 'b*'], 'scopes array';
    assert regina._query_scopes('{"scopes": []}') = array[]::text[], 'empty scopes allow nothing';

    perform regina.configure('{"queue": "team-a.orders", "namespace": "ns"}');
    perform regina.configure('{"queue": "team-b.orders", "namespace": "ns"}');

    v_all := regina.queues_list('{"limit": 10, "offset": 0}');
    v_scoped := regina.queues_list('{"limit": 10, "offset": 0, "scopes": ["team-a.*"]}');
    assert (v_all -> 'pagination' ->> 'total')::int = 2, 'unscoped: both queues';
    assert (v_scoped -> 'pagination' ->> 'total')::int = 1, 'scoped: one queue';
    assert v_scoped -> 'queues' -> 0 ->> 'name' = 'team-a.orders', 'the allowed one';

    v_scoped := regina.partitions_list('{"limit": 10, "offset": 0, "scopes": ["team-b.orders"]}');
    assert json_array_length(v_scoped -> 'partitions') = 1
       and v_scoped -> 'partitions' -> 0 ->> 'queue' = 'team-b.orders', 'partitions of allowed queues';

    v_scoped := regina.labels_list('namespace', null, array['team-a.*']);
    assert (v_scoped -> 'namespaces' -> 0 ->> 'queues')::int = 1, 'labels count allowed queues';
    assert (regina.labels_list('namespace') -> 'namespaces' -> 0 ->> 'queues')::int = 2,
        'labels without scopes';

    v_scoped := regina.messages_list('{"limit": 10, "offset": 0, "scopes": []}');
    assert json_array_length(v_scoped -> 'messages') = 0, 'messages: nothing allowed';
end
$$;
