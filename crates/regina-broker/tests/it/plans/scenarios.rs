//! The calls whose plans are measured: each builds its input with set-based SQL of the given
//! size, spread over as many partitions as it has items (the shape that made plans quadratic).

use super::{Scenario, ANALYZE_FILLED};

fn identity(n: usize) -> usize {
    n
}

/// `n` push items for `queue`, item i to partition `p<i % partitions>`, transaction ids
/// `<tag>-<i>`, as the JSON array `regina.push` takes.
fn push_items(queue: &str, n: usize, partitions: usize, tag: &str) -> String {
    format!(
        "(select jsonb_agg(jsonb_build_object(
             'queue', '{queue}', 'partition', 'p' || (i % {partitions}),
             'transactionId', '{tag}-' || i, 'messageId', gen_random_uuid(),
             'payload', jsonb_build_object('message', 'Hello World', 'n', i)) order by i)
          from generate_series(0, {n} - 1) i)"
    )
}

fn push_call(items: &str) -> String {
    format!("select count(*) from regina.push({items})")
}

/// Two named groups subscribed to `queue`: every push also adds their ready rows.
fn subscribe(queue: &str) -> String {
    format!(
        "insert into regina.subscriptions (queue_id, consumer_group, mode)
         select q.id, g, 'all' from regina.queues q, unnest(array['g1', 'g2']) g
         where q.name = '{queue}'"
    )
}

/// The push scenarios. Capped queues are not among them: a push to a queue with `maxSize`
/// counts the queue's depth, which visits every partition holding a backlog (ADR 0007), so its
/// cost follows the queue, not the push.
pub const PUSH: &[&Scenario] = &[
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "push creating every partition",
        setup: |_, _| String::new(),
        call: |queue, n| push_call(&push_items(queue, n, n, "new")),
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "push creating n partitions in a queue that has n already",
        setup: |queue, n| push_call(&push_items(queue, n, n, "old")),
        call: |queue, n| {
            push_call(&format!(
                "(select jsonb_agg(jsonb_build_object(
                     'queue', '{queue}', 'partition', 'new-' || i, 'transactionId', 'new-' || i,
                     'messageId', gen_random_uuid(), 'payload', i) order by i)
                  from generate_series(0, {n} - 1) i)"
            ))
        },
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "push over existing partitions with subscribed groups",
        setup: |queue, n| {
            format!(
                "{}; {}",
                push_call(&push_items(queue, n, n, "first")),
                subscribe(queue)
            )
        },
        call: |queue, n| push_call(&push_items(queue, n, n, "second")),
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "push of duplicates (stored keys, and keys repeated in the batch)",
        setup: |queue, n| push_call(&push_items(queue, n / 2, n, "dup")),
        // Items 0 … n/2-1 repeat stored keys; the rest repeat keys of each other in pairs.
        call: |queue, n| {
            push_call(&format!(
                "(select jsonb_agg(jsonb_build_object(
                     'queue', '{queue}', 'partition', 'p' || k, 'transactionId', 'dup-' || k,
                     'messageId', gen_random_uuid(), 'payload', k) order by i)
                  from generate_series(0, {n} - 1) i,
                       lateral (select case when i < {n} / 2 then i
                                            else {n} / 2 + (i - {n} / 2) / 2 end as k) x)"
            ))
        },
    },
];

/// Computes a call's input in the setup and keeps it in a temporary table, so that the measured
/// call reads it (`STAGED`) instead of building it (the building query is the test's, not the
/// product's, and its plan is none of this test's business).
fn stage(input: &str) -> String {
    format!(
        "drop table if exists plan_input; create temp table plan_input as select ({input}) as body"
    )
}

/// The staged input (see [`stage`]).
const STAGED: &str = "(select body from plan_input)";

/// The lease id of the pops of the call of size `n`.
fn lease(n: usize) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

/// `queue` with its named group `g` subscribed, then `n` messages over `n` partitions: every
/// partition holds one message, the shape where each delivered message is its own claim.
fn spread_backlog(queue: &str, n: usize, options: &str) -> String {
    format!(
        "select regina.configure('{{\"queue\": \"{queue}\", \"options\": {options}}}');
         insert into regina.subscriptions (queue_id, consumer_group, mode)
         select q.id, 'g', 'all' from regina.queues q where q.name = '{queue}';
         {}",
        push_call(&push_items(queue, n, n, "m"))
    )
}

/// A pop of group `g` on `queue`: `batch` messages over at most `partitions` partitions.
fn pop_call(queue: &str, n: usize, batch: usize, partitions: usize, auto_ack: bool) -> String {
    format!(
        "select count(*) from regina.pop('[{{\"queue\": \"{queue}\", \"consumerGroup\": \"g\",
             \"batch\": {batch}, \"partitions\": {partitions}, \"autoAck\": {auto_ack},
             \"leaseId\": \"{}\"}}]')",
        lease(n)
    )
}

/// A lease pop of one message of group `g` by namespace: a queue's namespace is its name up to
/// its first dot, so that of `queue` (a name without one) is `queue` itself.
fn namespace_pop_call(queue: &str, n: usize) -> String {
    format!(
        "select count(*) from regina.pop('[{{\"namespace\": \"{queue}\", \"consumerGroup\": \"g\",
             \"batch\": 1, \"partitions\": 1, \"leaseId\": \"{}\"}}]')",
        lease(n)
    )
}

/// Acks (`status`) of every message delivered under the lease of size `n`, as `regina.ack`
/// takes them.
fn lease_acks(n: usize, status: &str) -> String {
    format!(
        "(select jsonb_agg(jsonb_build_object('transactionId', m.transaction_id,
             'partitionId', p.uuid, 'leaseId', c.lease_id, 'status', '{status}'))
          from regina.cursors c
          join regina.partitions p on p.id = c.partition_id
          join regina.messages m on m.partition_id = c.partition_id
                                and m.seq between c.next_seq and c.lease_end_seq
          where c.lease_id = '{}' and c.lease_active)",
        lease(n)
    )
}

/// `queue` with one message in `p0`, then `before_fill` (statements, or none), then `n` more
/// messages in `p0`, all leased by one pop, and the acks of the whole lease staged for the call.
fn one_lease_to_ack(queue: &str, n: usize, before_fill: &str) -> String {
    format!(
        "{}; {before_fill}; {}; {}; {}",
        spread_backlog(queue, 1, "{}"),
        push_call(&push_items(queue, n, 1, "deep")),
        pop_call(queue, n, n + 1, 1, false),
        stage(&lease_acks(n, "completed"))
    )
}

/// The pop, ack, transaction and lease scenarios.
pub const DELIVERY: &[&Scenario] = &[
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "pop claiming one message from each of n partitions",
        setup: |queue, n| spread_backlog(queue, n, "{}"),
        call: |queue, n| pop_call(queue, n, n, n, false),
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "pop with autoAck draining n partitions",
        setup: |queue, n| spread_backlog(queue, n, "{}"),
        call: |queue, n| pop_call(queue, n, n, n, true),
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "pop call of n autoAck requests of one partition each over n partitions",
        setup: |queue, n| spread_backlog(queue, n, "{}"),
        // Each request goes on where the one before it stopped: none reads again the ready
        // rows that the requests before it in the same transaction deleted.
        call: |queue, n| {
            format!(
                "select count(*) from regina.pop((select jsonb_agg(jsonb_build_object(
                     'queue', '{queue}', 'consumerGroup', 'g', 'batch', 1, 'partitions', 1,
                     'autoAck', true)) from generate_series(1, {n})))"
            )
        },
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "pop call of n lease requests of one partition each over n partitions",
        setup: |queue, n| spread_backlog(queue, n, "{}"),
        // The requests are alike: one claim serves them all, each slot under its own lease.
        call: |queue, n| {
            format!(
                "select count(*) from regina.pop((select jsonb_agg(jsonb_build_object(
                     'queue', '{queue}', 'consumerGroup', 'g', 'batch', 1, 'partitions', 1,
                     'leaseId', gen_random_uuid())) from generate_series(1, {n})))"
            )
        },
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "pop of n messages from one partition",
        setup: |queue, n| {
            format!(
                "{}; {}",
                spread_backlog(queue, 1, "{}"),
                push_call(&push_items(queue, n, 1, "deep"))
            )
        },
        call: |queue, n| pop_call(queue, n, n, 1, false),
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "ack/batch of one message on each of n leased partitions",
        setup: |queue, n| {
            format!(
                "{}; {}; {}",
                spread_backlog(queue, n, "{}"),
                pop_call(queue, n, n, n, false),
                stage(&lease_acks(n, "completed"))
            )
        },
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "ack/batch of n messages of one lease",
        setup: |queue, n| one_lease_to_ack(queue, n, ""),
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: identity,
        own_database: true,
        stale_statistics: true,
        name: "ack/batch of n messages of one lease, its partition filled after the statistics",
        setup: |queue, n| one_lease_to_ack(queue, n, ANALYZE_FILLED),
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "ack/batch failing n leases (retries and dead letters)",
        setup: |queue, n| {
            format!(
                "{}; {}; {}",
                spread_backlog(queue, n, "{\"retryLimit\": 0}"),
                pop_call(queue, n, n, n, false),
                stage(&lease_acks(n, "failed"))
            )
        },
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "transaction acking n/2 leased messages and pushing n/2 single-item operations",
        setup: |queue, n| {
            format!(
                "{}; {}; {}",
                spread_backlog(queue, n / 2, "{}"),
                pop_call(queue, n, n / 2, n / 2, false),
                stage(&format!(
                    "select jsonb_agg(o.op order by o.ord) from (
                         select jsonb_build_object('type', 'ack', 'ack', a.ack) as op, a.ord
                         from jsonb_array_elements({}) with ordinality a(ack, ord)
                         union all
                         select jsonb_build_object('type', 'push', 'items', jsonb_build_array(
                                    jsonb_build_object('queue', '{queue}-out',
                                        'partition', 'p' || i, 'transactionId', 'out-' || i,
                                        'messageId', gen_random_uuid(), 'payload', i))),
                                {n} + i
                         from generate_series(0, {n} / 2 - 1) i) o",
                    lease_acks(n, "completed")
                ))
            )
        },
        call: |_, _| format!("select count(*) from regina.transaction({STAGED})"),
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "lease sweep accounting n expired leases",
        setup: |queue, n| {
            format!(
                "{}; {}",
                spread_backlog(queue, n, "{}"),
                pop_call(queue, n, n, n, false)
            )
        },
        call: |_, n| {
            format!(
                "select count(*) from regina.lease_sweep({n}, clock_timestamp() + interval '1 day')"
            )
        },
    },
];

/// `queue` after a group drained `2n` partitions of one message each (so the group has `2n`
/// cursors), with one more message pushed to `p0`: a call on that message meets tables sized by
/// `n`, not by its input, and twice the bound of a call of one input row even at the small size.
fn one_new_message_among(queue: &str, n: usize) -> String {
    format!(
        "{}; {}; {}",
        spread_backlog(queue, 2 * n, "{}"),
        pop_call(queue, n, 2 * n, 2 * n, true),
        push_call(&push_items(queue, 1, 1, "next"))
    )
}

/// `queue` with one partition of one message when the statistics are taken (a group with about
/// one ready row, as when its consumers have caught up), and `2n` partitions of one message each
/// pushed since: the group's ready range holds `2n` rows due, of which a pop of one needs one.
fn ready_rows_after_the_statistics(queue: &str, n: usize) -> String {
    format!(
        "{}; {ANALYZE_FILLED}; {}",
        spread_backlog(queue, 1, "{}"),
        push_call(&push_items(queue, 2 * n, 2 * n, "later"))
    )
}

/// `queue` with `2n` partitions of one message each and `2n` more messages in `p0`, the
/// partition its group reads first: the statistics say a partition holds about two messages,
/// and the one read holds thousands at the large size.
fn one_deep_partition_among(queue: &str, n: usize) -> String {
    format!(
        "{}; {}",
        spread_backlog(queue, 2 * n, "{}"),
        push_call(&push_items(queue, 2 * n, 1, "deep"))
    )
}

/// After `setup`: a lease pop of one message, and the ack of what it leased staged for the call.
fn one_leased_to_ack(setup: String, queue: &str, n: usize) -> String {
    format!(
        "{setup}; {}; {}",
        pop_call(queue, n, 1, 1, false),
        stage(&lease_acks(n, "completed"))
    )
}

/// `queue` whose one partition `p0` held a message that its group `g` consumed, the statistics
/// taken then (the queue nearly empty, as a caught-up system is), and `2n` messages pushed to
/// `p0` since: plans made from those statistics meet a partition of thousands at the large size.
fn filled_after_the_statistics(queue: &str, n: usize) -> String {
    format!(
        "{}; {}; {ANALYZE_FILLED}; {}",
        spread_backlog(queue, 1, "{}"),
        pop_call(queue, 0, 1, 1, true),
        push_call(&push_items(queue, 2 * n, 1, "burst"))
    )
}

/// As [`filled_after_the_statistics`], but the 2n messages come one per push over two new
/// partitions (`l0`, `l1`), each at an instant of its own within the last hour, as a live queue
/// fills: the listings read newest first, and messages that share their instant (one push's
/// batch) are read as a group to be ordered among themselves, however many there are.
fn listed_after_the_statistics(queue: &str, n: usize) -> String {
    format!(
        "{}; {}; {ANALYZE_FILLED};
         do $$
         begin
             for i in 0 .. 2 * {n} - 1 loop
                 perform regina.push(jsonb_build_array(jsonb_build_object(
                             'queue', '{queue}', 'partition', 'l' || (i % 2),
                             'transactionId', 'listed-' || i, 'messageId', gen_random_uuid(),
                             'payload', i)),
                         i_now => clock_timestamp() - interval '30 minutes'
                                  + i * interval '1 millisecond');
             end loop;
         end $$",
        spread_backlog(queue, 1, "{}"),
        pop_call(queue, 0, 1, 1, true),
    )
}

/// The uuid of partition `p0` of `queue`, as SQL.
fn p0_uuid(queue: &str) -> String {
    format!(
        "(select p.uuid::text from regina.partitions p join regina.queues q on q.id = p.queue_id
          where q.name = '{queue}' and p.name = 'p0')"
    )
}

/// The transaction id of the last message of the burst of [`filled_after_the_statistics`]: a
/// read of the partition in offset order meets it last.
fn last_of_burst(n: usize) -> String {
    format!("burst-{}", 2 * n - 1)
}

/// `call` on the last message of the burst of [`filled_after_the_statistics`]: `$partition` and
/// `$transaction` stand for its partition's uuid and its transaction id, as SQL.
fn on_last_of_burst(call: &str, queue: &str, n: usize) -> String {
    call.replace("$partition", &p0_uuid(queue))
        .replace("$transaction", &format!("'{}'", last_of_burst(n)))
}

/// Calls on one message in tables grown by `n`: a plan whose work follows a table, not the
/// input, handles thousands of rows for one (a join the planner hashes once a group has about
/// a thousand cursors would read them all; a keyed statement per cursor never does).
pub const SINGLES: &[&Scenario] = &[
    &Scenario {
        input: |_| 1,
        own_database: false,
        stale_statistics: false,
        name: "one-message push to a queue of 2n partitions with a group",
        setup: |queue, n| one_new_message_among(queue, n),
        call: |queue, _| push_call(&push_items(queue, 1, 1, "single")),
    },
    &Scenario {
        input: |_| 1,
        own_database: false,
        stale_statistics: false,
        name: "lease pop of one message in a group with 2n cursors",
        setup: |queue, n| one_new_message_among(queue, n),
        call: |queue, n| pop_call(queue, n + 1, 1, 1, false),
    },
    &Scenario {
        input: |_| 1,
        own_database: false,
        stale_statistics: false,
        name: "autoAck pop of one message in a group with 2n cursors",
        setup: |queue, n| one_new_message_among(queue, n),
        call: |queue, n| pop_call(queue, n + 1, 1, 1, true),
    },
    &Scenario {
        input: |_| 1,
        own_database: false,
        stale_statistics: false,
        name: "namespace pop of one message in a group with 2n cursors",
        setup: |queue, n| one_new_message_among(queue, n),
        call: |queue, n| namespace_pop_call(queue, n + 1),
    },
    &Scenario {
        input: |_| 1,
        own_database: false,
        stale_statistics: false,
        name: "ack of one message in a group with 2n cursors",
        setup: |queue, n| {
            format!(
                "{}; {}; {}",
                one_new_message_among(queue, n),
                pop_call(queue, n + 1, 1, 1, false),
                stage(&lease_acks(n + 1, "completed"))
            )
        },
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: |_| 2,
        own_database: false,
        stale_statistics: false,
        name: "ack of two one-message leases on two of 2n partitions holding a message each",
        setup: |queue, n| {
            format!(
                "{}; {}; {}; {}",
                spread_backlog(queue, 2 * n, "{}"),
                pop_call(queue, n, 1, 1, false),
                pop_call(queue, n + 1, 1, 1, false),
                stage(&format!(
                    "{} || {}",
                    lease_acks(n, "completed"),
                    lease_acks(n + 1, "completed")
                ))
            )
        },
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: |_| 1,
        own_database: false,
        stale_statistics: false,
        name: "lease pop of one message from a partition of 2n among 2n partitions",
        setup: |queue, n| one_deep_partition_among(queue, n),
        call: |queue, n| pop_call(queue, n, 1, 1, false),
    },
    &Scenario {
        input: |_| 1,
        own_database: false,
        stale_statistics: false,
        name: "ack of the first message of a partition of 2n among 2n partitions",
        setup: |queue, n| one_leased_to_ack(one_deep_partition_among(queue, n), queue, n),
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "one-message push to a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, _| push_call(&push_items(queue, 1, 1, "single")),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "one-message push of a stored key to a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, n| {
            push_call(&format!(
                "jsonb_build_array(jsonb_build_object(
                     'queue', '{queue}', 'partition', 'p0', 'transactionId', '{}',
                     'messageId', gen_random_uuid(), 'payload', 0))",
                last_of_burst(n)
            ))
        },
    },
    &Scenario {
        input: |_| 2,
        own_database: true,
        stale_statistics: true,
        name: "two-message push to a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, _| push_call(&push_items(queue, 2, 1, "pair")),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "lease pop of one message among 2n partitions made due after the statistics",
        setup: |queue, n| ready_rows_after_the_statistics(queue, n),
        call: |queue, n| pop_call(queue, n, 1, 1, false),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "autoAck pop of one message among 2n partitions made due after the statistics",
        setup: |queue, n| ready_rows_after_the_statistics(queue, n),
        call: |queue, n| pop_call(queue, n, 1, 1, true),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "lease pop of one message from a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, n| pop_call(queue, n, 1, 1, false),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "ack of one message from a partition filled with 2n after the statistics",
        setup: |queue, n| one_leased_to_ack(filled_after_the_statistics(queue, n), queue, n),
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "ack of a settled message in a partition filled with 2n after the statistics",
        setup: |queue, n| {
            format!(
                "{}; select count(*) from regina.ack({STAGED})",
                one_leased_to_ack(filled_after_the_statistics(queue, n), queue, n)
            )
        },
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "retention deleting one message of a partition filled with 2n after the statistics",
        setup: |queue, n| {
            format!(
                "{}; update regina.queues set retention_seconds = 60 where name = '{queue}'; {}",
                filled_after_the_statistics(queue, n),
                only_queue_deletes(queue)
            )
        },
        call: |_, _| {
            "select count(*) from regina.retention_run(1, clock_timestamp() + interval '1 hour')"
                .to_owned()
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "message detail of a message in a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, n| {
            on_last_of_burst(
                "select regina.message_detail($partition, $transaction) is not null",
                queue,
                n,
            )
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "delete of a message in a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, n| {
            on_last_of_burst(
                "select regina.message_delete($partition, $transaction) is not null",
                queue,
                n,
            )
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "dead-lettering of a message in a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, n| {
            on_last_of_burst(
                "select regina.message_dead_letter($partition, $transaction, 'g', 'by hand') is not null",
                queue,
                n,
            )
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "traces of a message in a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, n| {
            on_last_of_burst(
                "select regina.traces_by_message(jsonb_build_object(
                     'partitionId', $partition, 'transactionId', $transaction)) is not null",
                queue,
                n,
            )
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "trace of a message in a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, n| {
            on_last_of_burst(
                "select regina.trace_record(jsonb_build_object(
                     'id', gen_random_uuid(), 'partitionId', $partition, 'transactionId', $transaction,
                     'eventType', 'info', 'consumerGroup', 'g', 'traceNames', '[\"t\"]'::jsonb),
                     '{}')",
                queue,
                n,
            )
        },
    },
];

/// Every other queue's deletion option off: the call works on the scenario's queue only.
fn only_queue_deletes(queue: &str) -> String {
    format!(
        "update regina.queues set retention_seconds = 0, completed_retention_seconds = 0,
                                  max_wait_time_seconds = 0
         where name <> '{queue}'"
    )
}

/// The deletion jobs, the requeue of a dead letter and the stats refresh.
pub const JOBS: &[&Scenario] = &[
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "retention deleting one message from each of n partitions",
        setup: |queue, n| {
            format!(
                "{}; {}",
                spread_backlog(queue, n, "{\"retentionSeconds\": 60}"),
                only_queue_deletes(queue)
            )
        },
        call: |_, n| {
            format!(
                "select count(*) from regina.retention_run({n}, clock_timestamp() + interval '1 hour')"
            )
        },
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "eviction of one unsettled message from each of n partitions",
        setup: |queue, n| {
            format!(
                "{}; {}",
                spread_backlog(queue, n, "{\"maxWaitTimeSeconds\": 60}"),
                only_queue_deletes(queue)
            )
        },
        call: |_, n| {
            format!(
                "select count(*) from regina.eviction_run({n}, clock_timestamp() + interval '1 hour')"
            )
        },
    },
    &Scenario {
        input: identity,
        own_database: false,
        stale_statistics: false,
        name: "partition cleanup of n empty partitions",
        setup: |queue, n| {
            format!(
                "{}; delete from regina.messages m using regina.partitions p, regina.queues q
                      where p.id = m.partition_id and q.id = p.queue_id and q.name = '{queue}'",
                spread_backlog(queue, n, "{}")
            )
        },
        call: |_, n| {
            format!(
                "select count(*) from regina.partition_cleanup(1, {n}, clock_timestamp() + interval '2 days')"
            )
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: false,
        stale_statistics: false,
        name: "requeue of one dead letter among n",
        setup: |queue, n| {
            format!(
                "{}; {}; select count(*) from regina.ack({})",
                spread_backlog(queue, n, "{\"retryLimit\": 0}"),
                pop_call(queue, n, n, n, false),
                lease_acks(n, "failed")
            )
        },
        call: |queue, _| {
            format!(
                "select count(*) from regina.message_requeue(
                     (select p.uuid::text from regina.partitions p join regina.queues q
                      on q.id = p.queue_id where q.name = '{queue}' and p.name = 'p0'),
                     'm-0', 'g')"
            )
        },
    },
    &Scenario {
        input: identity,
        own_database: true,
        stale_statistics: false,
        name: "a stats pass over n changed partitions",
        setup: |queue, n| spread_backlog(queue, n, "{}"),
        call: |_, n| {
            format!(
                "select regina.stats_refresh_begin(clock_timestamp(), {n});
                 select regina.stats_refresh_batch({n});
                 select regina.stats_refresh_end({n})"
            )
        },
    },
];

/// The query id of the stream of [`ADMIN`]'s cycle scenario.
const STREAM_QUERY: &str = "0196a000-0000-7000-8000-00000000cafe";

/// After [`filled_after_the_statistics`]: `created_at` of the message the group consumed before
/// the burst, staged as ISO text: a seek to it moves the group to the burst's first message.
fn instant_before_the_burst(queue: &str) -> String {
    stage(&format!(
        "select to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')
         from regina.messages m join regina.partitions p on p.id = m.partition_id
         join regina.queues q on q.id = p.queue_id
         where q.name = '{queue}' and p.name = 'p0' and m.transaction_id = 'm-0'"
    ))
}

/// A pass of the stats refresh that finds one partition changed.
const ONE_PARTITION_STATS_PASS: &str = "select regina.stats_refresh_begin(clock_timestamp());
     select regina.stats_refresh_batch(1000);
     select regina.stats_refresh_end(1)";

/// Group, queue, stream and transaction calls on one message (or one partition) in tables grown
/// after their statistics were taken: keyed work only, whatever the partition holds.
pub const ADMIN: &[&Scenario] = &[
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "a stats pass recounting a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |_, _| ONE_PARTITION_STATS_PASS.to_owned(),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "a stats pass recounting a partition with 2n dead letters after the statistics",
        setup: |queue, n| {
            format!(
                "{}; insert into regina.dead_letters (queue_id, partition_id, consumer_group,
                                                     message_id, seq, transaction_id, payload,
                                                     created_at, error_message, failed_at)
                 select p.queue_id, m.partition_id, 'g', m.id, m.seq, m.transaction_id, m.payload,
                        m.created_at, 'failed', m.created_at
                 from regina.messages m join regina.partitions p on p.id = m.partition_id
                 join regina.queues q on q.id = p.queue_id
                 where q.name = '{queue}' and p.name = 'p0' and m.transaction_id like 'burst%'",
                filled_after_the_statistics(queue, n)
            )
        },
        call: |_, _| ONE_PARTITION_STATS_PASS.to_owned(),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "requeue of a dead letter in a partition filled with 2n after the statistics",
        setup: |queue, n| {
            format!(
                "{}; {}",
                filled_after_the_statistics(queue, n),
                on_last_of_burst(
                    "select regina.message_dead_letter($partition, $transaction, 'g', 'by hand')",
                    queue,
                    n
                )
            )
        },
        call: |queue, n| {
            on_last_of_burst(
                "select count(*) from regina.message_requeue($partition, $transaction, 'g')",
                queue,
                n,
            )
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "seek of a group to an instant in a partition filled with 2n after the statistics",
        setup: |queue, n| {
            format!(
                "{}; {}",
                filled_after_the_statistics(queue, n),
                instant_before_the_burst(queue)
            )
        },
        call: |queue, _| {
            format!(
                "select regina.consumer_group_seek(jsonb_build_object(
                     'queue', '{queue}', 'partition', 'p0', 'consumerGroup', 'g',
                     'timestamp', {STAGED}))"
            )
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "seek of a group to the end of a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, _| {
            format!(
                "select regina.consumer_group_seek(jsonb_build_object(
                     'queue', '{queue}', 'partition', 'p0', 'consumerGroup', 'g', 'toEnd', true))"
            )
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "delete of a group's cursor on a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, _| format!("select regina.consumer_group_delete('g', '{queue}', false)"),
    },
    &Scenario {
        input: |n| 2 * n,
        own_database: true,
        stale_statistics: true,
        name: "clear of a partition filled with 2n after the statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, _| format!("select count(*) from regina.queue_clear('{queue}', 'p0')"),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "clear of a partition of one message next to one filled with 2n after the statistics",
        setup: |queue, n| {
            format!(
                "{}; {}",
                filled_after_the_statistics(queue, n),
                push_call(&format!(
                    "jsonb_build_array(jsonb_build_object('queue', '{queue}', 'partition', 'p1',
                         'transactionId', 'alone', 'messageId', gen_random_uuid(), 'payload', 1))"
                ))
            )
        },
        call: |queue, _| format!("select count(*) from regina.queue_clear('{queue}', 'p1')"),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "delete of a queue of one message next to one filled with 2n after the statistics",
        setup: |queue, n| {
            format!(
                "{}; {}",
                filled_after_the_statistics(queue, n),
                push_call(&format!(
                    "jsonb_build_array(jsonb_build_object('queue', '{queue}-small', 'partition',
                         'p', 'transactionId', 'alone', 'messageId', gen_random_uuid(),
                         'payload', 1))"
                ))
            )
        },
        call: |queue, _| format!("select regina.queue_delete('{queue}-small')"),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "ack failing a message of a partition filled with 2n after the statistics into the \
               dead-letter queue",
        setup: |queue, n| {
            format!(
                "{}; update regina.queues set retry_limit = 0 where name = '{queue}'; {}; {}",
                filled_after_the_statistics(queue, n),
                pop_call(queue, n, 1, 1, false),
                stage(&lease_acks(n, "failed"))
            )
        },
        call: |_, _| format!("select count(*) from regina.ack({STAGED})"),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "lease sweep of one lease on a partition filled with 2n after the statistics",
        setup: |queue, n| {
            format!(
                "{}; {}",
                filled_after_the_statistics(queue, n),
                pop_call(queue, n, 1, 1, false)
            )
        },
        call: |_, _| {
            "select count(*) from regina.lease_sweep(1, clock_timestamp() + interval '1 day')"
                .to_owned()
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "eviction of one message of a partition filled with 2n after the statistics",
        setup: |queue, n| {
            format!(
                "{}; update regina.queues set max_wait_time_seconds = 60 where name = '{queue}'; {}",
                filled_after_the_statistics(queue, n),
                only_queue_deletes(queue)
            )
        },
        call: |_, _| {
            "select count(*) from regina.eviction_run(1, clock_timestamp() + interval '1 hour')"
                .to_owned()
        },
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "delete of a group with its subscriptions on a partition filled with 2n after the \
               statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |queue, _| format!("select regina.consumer_group_delete('g', '{queue}', true)"),
    },
    &Scenario {
        input: |_| 1,
        own_database: true,
        stale_statistics: true,
        name: "subscription start moved for a group on a partition filled with 2n after the \
               statistics",
        setup: |queue, n| filled_after_the_statistics(queue, n),
        call: |_, _| {
            "select regina.consumer_group_subscription('g', clock_timestamp() - interval '1 day')"
                .to_owned()
        },
    },
    &Scenario {
        input: |_| 2,
        own_database: true,
        stale_statistics: true,
        name: "transaction acking a message of a partition filled with 2n after the statistics \
               and pushing one to it",
        setup: |queue, n| {
            format!(
                "{}; {}; {}",
                filled_after_the_statistics(queue, n),
                pop_call(queue, n, 1, 1, false),
                stage(&format!(
                    "select jsonb_build_array(
                         jsonb_build_object('type', 'ack', 'ack', {} -> 0),
                         jsonb_build_object('type', 'push', 'items', jsonb_build_array(
                             jsonb_build_object('queue', '{queue}', 'partition', 'p0',
                                 'transactionId', 'after', 'messageId', gen_random_uuid(),
                                 'payload', 1))))",
                    lease_acks(n, "completed")
                ))
            )
        },
        call: |_, _| format!("select count(*) from regina.transaction({STAGED})"),
    },
    &Scenario {
        input: |_| 2,
        own_database: true,
        stale_statistics: true,
        name: "stream cycle acking a message of a partition filled with 2n after the statistics \
               and pushing one to it",
        setup: |queue, n| {
            format!(
                "{}; {}; select regina.stream_register(jsonb_build_object(
                     'name', 'plans', 'source_queue', '{queue}', 'config_hash', 'h',
                     'query_id', '{STREAM_QUERY}'))",
                filled_after_the_statistics(queue, n),
                pop_call(queue, n, 1, 1, false)
            )
        },
        call: |queue, n| {
            format!(
                "select count(*) from regina.stream_cycle(jsonb_build_object(
                     'query_id', '{STREAM_QUERY}', 'partition_id', {p0},
                     'state_ops', '[{{\"type\": \"upsert\", \"key\": \"k\", \"value\": 1}}]'::jsonb,
                     'push_items', jsonb_build_array(jsonb_build_object(
                         'queue', '{queue}', 'partition', 'p0', 'transactionId', 'after',
                         'messageId', gen_random_uuid(), 'payload', 1)),
                     'ack', jsonb_build_object('transactionId', 'burst-0', 'partitionId', {p0},
                         'leaseId', '{lease}', 'consumerGroup', 'g')))",
                p0 = p0_uuid(queue),
                lease = lease(n),
            )
        },
    },
    &Scenario {
        input: |_| 10,
        own_database: true,
        stale_statistics: true,
        name: "message listing of a page of 10 of a queue filled with 2n after the statistics",
        setup: |queue, n| listed_after_the_statistics(queue, n),
        call: |queue, _| {
            format!(
                "select regina.messages_list(jsonb_build_object('queue', '{queue}', 'limit', 10))
                 is not null"
            )
        },
    },
    &Scenario {
        input: |_| 10,
        own_database: true,
        stale_statistics: true,
        name: "message listing of a page of 10 of a small queue next to 2n newer messages of \
               another queue",
        setup: |queue, n| {
            format!(
                "select count(*) from regina.push((select jsonb_agg(jsonb_build_object(
                     'queue', '{queue}-small', 'partition', 'p' || (i % 3),
                     'transactionId', 'small-' || i, 'messageId', gen_random_uuid(),
                     'payload', i) order by i) from generate_series(0, 11) i),
                     i_now => clock_timestamp() - interval '50 minutes');
                 {}",
                listed_after_the_statistics(queue, n)
            )
        },
        call: |queue, _| {
            format!(
                "select regina.messages_list(jsonb_build_object('queue', '{queue}-small',
                                                                'limit', 10)) is not null"
            )
        },
    },
    &Scenario {
        input: |_| 10,
        own_database: true,
        stale_statistics: true,
        name: "message listing of a page of 10 of a window of a partition between 2n older and \
               2n newer messages",
        setup: |queue, n| {
            format!(
                "select regina.configure('{{\"queue\": \"{queue}\", \"options\": {{}}}}');
                 {ANALYZE_FILLED};
                 select count(*) from regina.push({}, i_now => clock_timestamp() - interval '3 hours');
                 select count(*) from regina.push({}, i_now => clock_timestamp() - interval '2 hours');
                 {}",
                push_items(queue, 2 * n, 1, "old"),
                push_items(queue, 5, 1, "window"),
                push_call(&push_items(queue, 2 * n, 1, "new")),
            )
        },
        call: |queue, _| {
            format!(
                "select regina.messages_list(jsonb_build_object(
                     'queue', '{queue}', 'partition', 'p0', 'limit', 10,
                     'from', clock_timestamp() - interval '150 minutes',
                     'to', clock_timestamp() - interval '90 minutes')) is not null"
            )
        },
    },
    &Scenario {
        input: |_| 10,
        own_database: true,
        stale_statistics: true,
        name: "message listing of a page of 10 of a group's messages in a partition filled with \
               2n after the statistics",
        setup: |queue, n| listed_after_the_statistics(queue, n),
        call: |queue, _| {
            format!(
                "select regina.messages_list(jsonb_build_object(
                     'queue', '{queue}', 'partition', 'l0', 'consumerGroup', 'g', 'limit', 10))
                 is not null"
            )
        },
    },
    &Scenario {
        input: |_| 10,
        own_database: true,
        stale_statistics: true,
        name: "status page of 10 of a queue's messages older than 2n of another queue",
        setup: |queue, n| {
            format!(
                "select regina.configure('{{\"queue\": \"{queue}-old\", \"options\": {{}}}}');
                 select count(*) from regina.push((select jsonb_agg(jsonb_build_object(
                     'queue', '{queue}-old', 'partition', 'p' || (i % 3),
                     'transactionId', 'old-' || i, 'messageId', gen_random_uuid(),
                     'payload', i) order by i) from generate_series(0, 11) i),
                     i_now => clock_timestamp() - interval '2 hours');
                 {}",
                listed_after_the_statistics(queue, n)
            )
        },
        call: |queue, _| {
            format!(
                "select count(*) from regina.status_queue_messages(
                     jsonb_build_object('queue', '{queue}-old', 'limit', 10))"
            )
        },
    },
    &Scenario {
        input: |_| 10,
        own_database: true,
        stale_statistics: true,
        name: "status page of 10 of a queue's messages, filled with 2n after the statistics",
        setup: |queue, n| listed_after_the_statistics(queue, n),
        call: |queue, _| {
            format!(
                "select count(*) from regina.status_queue_messages(
                     jsonb_build_object('queue', '{queue}', 'limit', 10))"
            )
        },
    },
];
