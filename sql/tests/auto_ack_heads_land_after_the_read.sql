-- An autoAck pop moves the head just past what it delivered: when it read fewer messages than its
-- batch (the partition was read to its end), without looking the head up again; when the batch
-- was taken whole, at the next message. Either way the next pop starts at the next offset,
-- skipping and repeating nothing.
do $$
declare
    t0 timestamptz := '2026-01-01T00:00:00Z';
    v json;
    v_ns bigint[];
begin
    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', 'a', 'partition', 'p', 'payload', n, 'transactionId', 't' || n,
                             'messageId', gen_random_uuid()))
                         from generate_series(0, 2) n), i_now => t0);
    select result into v from regina.pop('[{"queue":"a","batch":5,"autoAck":true}]', t0);
    assert json_array_length(v -> 'messages') = 3, format('the three: %s', v);
    assert (select c.next_seq from regina.cursors c) = 3, 'read to its end: the head is past offset 2';
    assert not exists (select 1 from regina.ready), 'a drained partition has no ready row';

    perform regina.push((select jsonb_agg(jsonb_build_object(
                             'queue', 'a', 'partition', 'p', 'payload', n, 'transactionId', 't' || n,
                             'messageId', gen_random_uuid()))
                         from generate_series(3, 5) n), i_now => t0);
    select result into v from regina.pop('[{"queue":"a","batch":2,"autoAck":true}]', t0);
    select array_agg((m ->> 'data')::bigint) into v_ns from json_array_elements(v -> 'messages') m;
    assert v_ns = '{3,4}', format('the next two, in order: %s', v_ns);
    assert (select c.next_seq from regina.cursors c) = 5, 'the batch taken whole: the head is at offset 5';
    assert exists (select 1 from regina.ready), 'work is left: the ready row stays';

    select result into v from regina.pop('[{"queue":"a","batch":5,"autoAck":true}]', t0);
    select array_agg((m ->> 'data')::bigint) into v_ns from json_array_elements(v -> 'messages') m;
    assert v_ns = '{5}', format('the last one: %s', v_ns);
    assert (select c.next_seq from regina.cursors c) = 6, 'past the end again';
    select result into v from regina.pop('[{"queue":"a","batch":5,"autoAck":true}]', t0);
    assert v ->> 'empty' = 'empty', format('nothing is delivered twice: %s', v);
end $$;
