//! §4.10: where a named group starts — modes, `subscriptionFrom`, stickiness, queue mode.

use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;

use regina_testkit::TestBroker;

use crate::selector::queue;
use crate::support::{enc, start, start_with, ts, Api};

/// Drains everything `group` can get from `queue` (acking each batch), returning the payloads.
async fn drain(api: &Api, queue: &str, query: &str) -> Vec<Value> {
    let mut got = vec![];
    loop {
        let r = api
            .pop(queue, &format!("batch=100&partitions=10&{query}"))
            .await;
        if r.status == 204 {
            return got;
        }
        assert_eq!(r.status, 200, "{r:?}");
        got.extend(r.data());
        api.ack_all(&r).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_groups_start_at_their_first_pop_and_all_groups_from_the_beginning() {
    let (_b, api) = start().await;
    api.push_to("s", "A", &[json!(1), json!(2)]).await;
    for q in [
        "consumerGroup=gnew&subscriptionMode=new",
        "consumerGroup=gonly&subscriptionMode=new-only",
        "consumerGroup=gnow&subscriptionFrom=now",
    ] {
        api.pop("s", q).await.assert_empty("empty");
    }
    api.push_one("s", "A", json!(3)).await;
    assert_eq!(drain(&api, "s", "consumerGroup=gnew").await, vec![json!(3)]);
    assert_eq!(
        drain(&api, "s", "consumerGroup=gonly").await,
        vec![json!(3)],
        "new-only = new"
    );
    assert_eq!(drain(&api, "s", "consumerGroup=gnow").await, vec![json!(3)]);
    let all = vec![json!(1), json!(2), json!(3)];
    assert_eq!(
        drain(&api, "s", "consumerGroup=gall&subscriptionMode=all").await,
        all
    );
    assert_eq!(
        drain(&api, "s", "consumerGroup=gdefault").await,
        all,
        "default mode is all"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_is_sticky_until_deleted() {
    let (_b, api) = start().await;
    api.push_to("s", "A", &[json!(1), json!(2)]).await;
    api.pop("s", "consumerGroup=g&subscriptionMode=new")
        .await
        .assert_empty("empty");
    api.pop("s", "consumerGroup=g&subscriptionMode=all")
        .await
        .assert_empty("empty");
    api.pop("s", "consumerGroup=g&subscriptionFrom=2000-01-01")
        .await
        .assert_empty("empty");
    api.push_one("s", "A", json!(3)).await;
    assert_eq!(
        drain(&api, "s", "consumerGroup=g&subscriptionMode=all").await,
        vec![json!(3)]
    );
    // The reverse: a group that started from the beginning stays there.
    assert_eq!(drain(&api, "s", "consumerGroup=h").await.len(), 3);
    api.push_one("s", "B", json!(4)).await;
    let later = drain(&api, "s", "consumerGroup=h&subscriptionMode=new").await;
    assert_eq!(later, vec![json!(4)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_mode_ignores_subscription_settings() {
    let (_b, api) = start().await;
    api.push_to("s", "A", &[json!(1), json!(2)]).await;
    let got = drain(&api, "s", "subscriptionMode=new&subscriptionFrom=now").await;
    assert_eq!(got, vec![json!(1), json!(2)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_group_start_applies_to_partitions_it_had_not_touched() {
    let (_b, api) = start().await;
    api.push_one("s", "A", json!("old-a")).await;
    api.push_one("s", "B", json!("old-b")).await;
    api.pop("s", "consumerGroup=g&subscriptionMode=new")
        .await
        .assert_empty("empty");
    api.push_one("s", "B", json!("new-b")).await;
    assert_eq!(
        drain(&api, "s", "consumerGroup=g").await,
        vec![json!("new-b")]
    );
    api.push_one("s", "A", json!("new-a")).await;
    api.push_one("s", "C", json!("new-c")).await;
    let mut got = drain(&api, "s", "consumerGroup=g").await;
    got.sort_by_key(|v| v.to_string());
    assert_eq!(got, vec![json!("new-a"), json!("new-c")]);
}

/// Payload and `createdAt` of every message of `queue`, read by queue mode.
async fn created_at(api: &Api, queue: &str) -> Vec<(Value, String)> {
    let r = api.pop(queue, "batch=100&partitions=10&autoAck=true").await;
    r.messages()
        .iter()
        .map(|m| (m["data"].clone(), m["createdAt"].as_str().unwrap().into()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_from_timestamp_is_inclusive_and_accepts_offsets() {
    let (_b, api) = start().await;
    api.push_one("s", "A", json!(1)).await;
    api.push_one("s", "A", json!(2)).await;
    api.push_one("s", "A", json!(3)).await;
    let stamps = created_at(&api, "s").await;
    let (second, at) = stamps[1].clone();
    assert_eq!(second, json!(2));
    assert!(
        ts(&json!(stamps[0].1)) < ts(&json!(at)),
        "distinct push requests: {stamps:?}"
    );
    let got = drain(
        &api,
        "s",
        &format!("consumerGroup=g1&subscriptionFrom={}", enc(&at)),
    )
    .await;
    assert_eq!(got, vec![json!(2), json!(3)], "createdAt ≥ S is included");
    let offset = ts(&json!(at))
        .to_offset(time::macros::offset!(+02:00))
        .format(&Rfc3339)
        .unwrap();
    let got = drain(
        &api,
        "s",
        &format!("consumerGroup=g2&subscriptionFrom={}", enc(&offset)),
    )
    .await;
    assert_eq!(
        got,
        vec![json!(2), json!(3)],
        "same instant written with an offset ({offset})"
    );
    let no_offset = at.trim_end_matches('Z');
    let got = drain(
        &api,
        "s",
        &format!("consumerGroup=g3&subscriptionFrom={}", enc(no_offset)),
    )
    .await;
    assert_eq!(
        got,
        vec![json!(2), json!(3)],
        "a value without offset is UTC"
    );
    let got = drain(&api, "s", "consumerGroup=g4&subscriptionFrom=2020-01-01").await;
    assert_eq!(got.len(), 3, "date-only means midnight UTC");
    let got = drain(&api, "s", "consumerGroup=g5&subscriptionFrom=2999-01-01").await;
    assert!(got.is_empty(), "a future start excludes everything stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_from_wins_over_subscription_mode() {
    let (_b, api) = start().await;
    api.push_one("s", "A", json!(1)).await;
    api.push_one("s", "A", json!(2)).await;
    let at = created_at(&api, "s").await[1].1.clone();
    let q = format!(
        "consumerGroup=g1&subscriptionMode=all&subscriptionFrom={}",
        enc(&at)
    );
    assert_eq!(drain(&api, "s", &q).await, vec![json!(2)]);
    let q = "consumerGroup=g2&subscriptionMode=new&subscriptionFrom=2020-01-01";
    assert_eq!(drain(&api, "s", q).await, vec![json!(1), json!(2)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_is_fixed_only_once_the_queue_exists() {
    let (_b, api) = start().await;
    api.pop("late", "consumerGroup=g&subscriptionMode=new")
        .await
        .assert_empty("queue_not_found");
    api.push_one("late", "A", json!(1)).await;
    assert_eq!(drain(&api, "late", "consumerGroup=g").await, vec![json!(1)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_subscription_mode_applies_when_a_pop_names_none() {
    let (_b, api) =
        start_with(|c| c.default_subscription_mode = regina_broker::SubscriptionMode::New).await;
    api.push_one("s", "A", json!(1)).await;
    api.pop("s", "consumerGroup=g").await.assert_empty("empty");
    api.push_one("s", "A", json!(2)).await;
    assert_eq!(drain(&api, "s", "consumerGroup=g").await, vec![json!(2)]);
    assert_eq!(
        drain(&api, "s", "consumerGroup=h&subscriptionMode=all")
            .await
            .len(),
        2
    );
    assert_eq!(
        drain(&api, "s", "").await.len(),
        2,
        "queue mode starts from the beginning"
    );
}

/// Waits until a session running `regina.pop($1…)` waits for a lock (`what` says which); returns
/// the connection that watched, for the caller's checks.
async fn pop_waiting_on_a_lock(b: &TestBroker, what: &str) -> tokio_postgres::Client {
    waiting_on_a_lock(b, "%regina.pop($1%", what).await
}

/// Waits until a session whose statement is `like` the pattern waits for a lock; returns the
/// connection that watched.
async fn waiting_on_a_lock(b: &TestBroker, like: &str, what: &str) -> tokio_postgres::Client {
    let watcher = b.db().await;
    regina_testkit::wait_until(what, || async {
        let row = watcher
            .query_one(
                "select count(*) from pg_stat_activity \
                 where wait_event_type = 'Lock' and query like $1 \
                   and pid <> pg_backend_pid()",
                &[&like],
            )
            .await
            .expect("pg_stat_activity");
        row.get::<_, i64>(0) > 0
    })
    .await;
    watcher
}

/// Runs two pop calls that could deadlock if each took its rows in request order: a direct
/// connection holds `first` (one request) open; a call of `second_then_first` (two requests) is
/// seen waiting for it; the holder then runs `second` and commits. Both must end, and the holder
/// having taken every message (autoAck), the call answers empty to both requests. Returns a
/// connection for the caller's checks.
async fn opposite_orders(b: &TestBroker, first: Value, second: Value) -> tokio_postgres::Client {
    let holder = b.db().await;
    let pop = "select idx, result::text from regina.pop($1::text::jsonb)";
    holder.batch_execute("begin").await.expect("begin");
    holder
        .query(pop, &[&json!([first]).to_string()])
        .await
        .expect("first request, held open");
    let call = {
        let db = b.db().await;
        let reqs = json!([second, first]).to_string();
        tokio::spawn(async move { db.query(pop, &[&reqs]).await })
    };
    let watcher = pop_waiting_on_a_lock(b, "the call waits for the holder").await;
    holder
        .query(pop, &[&json!([second]).to_string()])
        .await
        .expect("second request by the holder, no deadlock");
    holder.batch_execute("commit").await.expect("commit");
    let rows = call
        .await
        .expect("call task")
        .expect("the call ends, no deadlock");
    let results: Vec<Value> = rows
        .iter()
        .map(|r| serde_json::from_str(r.get::<_, &str>(1)).expect("json"))
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    for r in &results {
        assert_eq!(r["empty"], "empty", "{results:?}");
    }
    watcher
}

/// Two pop calls that subscribe the same new groups, each carrying their requests in the opposite
/// order, never deadlock: a call creates its first contacts in (queue, group) order before it
/// claims anything. Created in request order, the call would hold `gb` while it waits for `ga`,
/// which the holder subscribed, and the holder's `gb` would close the cycle ("deadlock
/// detected").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_subscribing_groups_in_opposite_orders_do_not_deadlock() {
    let (b, api) = start().await;
    api.push_to("q", "Default", &[json!("m")]).await;
    let db = opposite_orders(
        &b,
        json!({"queue": "q", "consumerGroup": "ga", "autoAck": true}),
        json!({"queue": "q", "consumerGroup": "gb", "autoAck": true}),
    )
    .await;
    let subscribed = db
        .query_one(
            "select count(*) from regina.subscriptions s join regina.queues q on q.id = s.queue_id \
             where q.name = 'q' and s.consumer_group in ('ga', 'gb')",
            &[],
        )
        .await
        .expect("subscriptions");
    assert_eq!(subscribed.get::<_, i64>(0), 2);
}

/// The same for namespace pops of one group: each advances its selector's rotation counter, a
/// row held to commit, so calls take those rows in (selector, group) order too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_popping_namespaces_in_opposite_orders_do_not_deadlock() {
    let (b, api) = start().await;
    for (queue, ns) in [("a", "n1"), ("b", "n2")] {
        let r = api
            .post(
                "/api/v1/configure",
                &json!({"queue": queue, "namespace": ns}),
            )
            .await;
        assert!(r.status == 200 || r.status == 201, "{r:?}");
        api.push_to(queue, "Default", &[json!(queue)]).await;
    }
    let db = opposite_orders(
        &b,
        json!({"namespace": "n1", "consumerGroup": "g", "autoAck": true}),
        json!({"namespace": "n2", "consumerGroup": "g", "autoAck": true}),
    )
    .await;
    let turns = db
        .query_one(
            "select string_agg(selector || '=' || counter, ',' order by selector) \
             from regina.pop_rotation where consumer_group = 'g'",
            &[],
        )
        .await
        .expect("rotation");
    assert_eq!(turns.get::<_, &str>(0), "n1/=2,n2/=2");
}

/// A namespace pop whose walk reaches a queue the group has no subscription on yet must not hold
/// any partition while it subscribes: subscribing takes the partitions table in share mode, which
/// waits for a push in flight (row exclusive on the table), and that push waits for the row of the
/// partition the walk drained in an earlier queue (held in share mode until commit): a deadlock,
/// detected after `deadlock_timeout` and failing one of the two. The pop subscribes every queue it
/// covers before it claims anything, so the push gets its row and both end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_pop_subscribing_on_its_walk_does_not_deadlock_with_a_push() {
    let (b, api) = start().await;
    queue(&api, "first", "ns", "work", 10).await;
    queue(&api, "second", "ns", "work", 0).await;
    // The group knows `first` (an empty pop subscribes it), not `second`.
    api.pop("first", "consumerGroup=g")
        .await
        .assert_empty("empty");
    api.push_to("first", "x", &[json!("from first")]).await;
    api.push_to("second", "y", &[json!("from second")]).await;

    // A push in flight: the table lock taken, the partition's row not yet.
    let push = b.db().await;
    push.batch_execute("begin; lock table regina.partitions in row exclusive mode")
        .await
        .expect("push's table lock");
    let call = {
        let db = b.db().await;
        let reqs = json!([{"namespace": "ns", "consumerGroup": "g", "batch": 2,
                           "partitions": 2, "autoAck": true}])
        .to_string();
        tokio::spawn(async move {
            db.query(
                "select result::text from regina.pop($1::text::jsonb)",
                &[&reqs],
            )
            .await
        })
    };
    pop_waiting_on_a_lock(&b, "the pop waits for the push's table lock").await;
    push.query(
        "select 1 from regina.partitions p join regina.queues q on q.id = p.queue_id \
         where q.name = 'first' and p.name = 'x' for no key update of p",
        &[],
    )
    .await
    .expect("the push takes its partition's row, no deadlock");
    push.batch_execute("commit").await.expect("commit");
    let rows = call
        .await
        .expect("pop task")
        .expect("the pop ends, no deadlock");
    let answer: Value = serde_json::from_str(rows[0].get::<_, &str>(0)).expect("json");
    let mut got: Vec<Value> = answer["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["data"].clone())
        .collect();
    got.sort_by_key(|v| v.to_string());
    assert_eq!(
        got,
        vec![json!("from first"), json!("from second")],
        "{answer}"
    );
}

/// A namespace pop is a pop on every queue it covers (§4.10): it subscribes its group to each of
/// them when it runs, also to those its walk does not reach because an earlier queue filled it.
/// With `subscriptionMode=new`, a message pushed to such a queue afterwards is the group's; were
/// the queue subscribed only when a later walk reached it, that later instant would be the start
/// and the message would be skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_pop_subscribes_every_queue_it_covers_even_those_its_walk_skips() {
    let (_b, api) = start().await;
    let pop = "/api/v1/pop?namespace=ns&consumerGroup=g&subscriptionMode=new&autoAck=true";
    queue(&api, "high", "ns", "work", 10).await;
    assert_eq!(api.get(pop).await.status, 204, "subscribes `high` from now");
    api.push_to("high", "p", &[json!("h1")]).await;
    queue(&api, "low", "ns", "work", 0).await;
    // One partition per pop: `high` fills it, and the walk ends before `low`.
    assert_eq!(api.get(pop).await.data(), vec![json!("h1")]);
    api.push_to("low", "p", &[json!("l1")]).await;
    assert_eq!(
        api.get(pop).await.data(),
        vec![json!("l1")],
        "`low` was subscribed by the pop before the push"
    );
}

/// A group deleted with its metadata while a push that runs the group's pops is in flight
/// (http-api.md §4.9): the deletion takes the partitions table in share mode before it touches the
/// subscription, so it waits for the push; the push's pop, past its subscription check, finds the
/// group's cursor held by the deletion and passes it by (creating nothing), and neither waits for
/// the other. After both commit the group is gone: the pop subscribed nothing again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_group_while_a_push_runs_its_pops_neither_deadlocks_nor_resubscribes() {
    let (b, api) = start().await;
    api.push_to("q", "p", &[json!("first")]).await;
    assert_eq!(
        drain(&api, "q", "consumerGroup=g").await,
        vec![json!("first")]
    );

    // A push in flight that will run the group's pop: the table lock taken.
    let push = b.db().await;
    push.batch_execute("begin; lock table regina.partitions in row exclusive mode")
        .await
        .expect("push's table lock");
    let deletion = {
        let db = b.db().await;
        tokio::spawn(async move {
            db.query_one(
                "select regina.consumer_group_delete('g', 'q', true)::text",
                &[],
            )
            .await
        })
    };
    let watcher = waiting_on_a_lock(
        &b,
        "%consumer_group_delete%",
        "the deletion waits for the push",
    )
    .await;
    let rows = push
        .query(
            "select pop, result from regina.push_pop_text($1::text::jsonb, $2::text::json, \
                                                          $3::text::jsonb)",
            &[
                &json!([{"queue": "q", "partition": "p", "transactionId": "second",
                         "messageId": uuid::Uuid::now_v7().to_string()}])
                .to_string(),
                &json!(["second"]).to_string(),
                &json!([{"queue": "q", "consumerGroup": "g", "batch": 1, "autoAck": true}])
                    .to_string(),
            ],
        )
        .await
        .expect("the push and its pop run, no deadlock");
    let popped: Vec<Value> = rows
        .iter()
        .filter(|r| r.get::<_, bool>(0))
        .map(|r| serde_json::from_str(r.get::<_, &str>(1)).expect("json"))
        .collect();
    assert_eq!(popped.len(), 1, "the group was subscribed when the pop ran");
    assert_eq!(
        popped[0]["empty"],
        json!("empty"),
        "the cursor the deletion holds is passed by: {}",
        popped[0]
    );
    push.batch_execute("commit").await.expect("commit");
    let deleted = deletion
        .await
        .expect("deletion task")
        .expect("the deletion ends, no deadlock");
    let deleted: Value = serde_json::from_str(deleted.get::<_, &str>(0)).expect("json");
    assert_eq!(deleted["metadataDeleted"], json!(true), "{deleted}");
    let left = watcher
        .query_one(
            "select (select count(*) from regina.subscriptions where consumer_group = 'g') \
                  + (select count(*) from regina.cursors where consumer_group = 'g') \
                  + (select count(*) from regina.ready where consumer_group = 'g')",
            &[],
        )
        .await
        .expect("what is left of the group");
    assert_eq!(left.get::<_, i64>(0), 0, "nothing of the group is left");
    assert_eq!(
        drain(&api, "q", "consumerGroup=g").await,
        vec![json!("first"), json!("second")],
        "a new group of the name starts over"
    );
}
