use std::time::Duration;

use tokio::time::Instant;

use super::*;

fn queue_key(partition: Option<&str>, group: &str) -> WaitKey {
    WaitKey::Queue {
        queue: "q".into(),
        partition: partition.map(Into::into),
        group: group.into(),
    }
}

/// Parks `guard` and reports whether an event woke it within 200 ms.
async fn woken_soon(guard: &WaiterGuard) -> bool {
    let resumed = guard
        .park_until(Instant::now() + Duration::from_millis(200))
        .await;
    matches!(resumed, Resumed::Event)
}

/// Parks every guard concurrently and counts those woken.
async fn count_woken(guards: &[WaiterGuard], event: impl FnOnce()) -> usize {
    let parked = futures::future::join_all(guards.iter().map(woken_soon));
    let trigger = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        event();
    };
    let (woken, ()) = tokio::join!(parked, trigger);
    woken.into_iter().filter(|w| *w).count()
}

#[tokio::test]
async fn a_push_wakes_one_parked_waiter_per_partition() {
    let waiters = Arc::new(Waiters::new(100));
    let guards: Vec<_> = (0..4)
        .map(|_| waiters.register(queue_key(None, "g")).expect("room"))
        .collect();
    assert_eq!(
        count_woken(&guards, || waiters.push_committed("q", &["p1", "p2"])).await,
        2
    );
}

#[tokio::test]
async fn a_single_partition_waiter_ignores_other_partitions() {
    let waiters = Arc::new(Waiters::new(100));
    let guard = [waiters.register(queue_key(Some("p1"), "g")).expect("room")];
    assert_eq!(
        count_woken(&guard, || waiters.push_committed("q", &["p2"])).await,
        0
    );
    assert_eq!(
        count_woken(&guard, || waiters.push_committed("q", &["p1"])).await,
        1
    );
    assert_eq!(
        count_woken(&guard, || waiters.push_committed("other", &["p1"])).await,
        0
    );
}

#[tokio::test]
async fn an_event_during_a_pop_attempt_is_not_lost() {
    let waiters = Arc::new(Waiters::new(100));
    let guard = waiters.register(queue_key(None, "g")).expect("room");
    // The waiter is "running its pop" (not parked) when the push commits.
    waiters.push_committed("q", &["p"]);
    let started = Instant::now();
    let resumed = guard.park_until(started + Duration::from_secs(5)).await;
    assert!(matches!(resumed, Resumed::Event));
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn a_woken_waiter_that_leaves_passes_the_wake_on() {
    let waiters = Arc::new(Waiters::new(100));
    let first = waiters.register(queue_key(None, "g")).expect("room");
    let second = waiters.register(queue_key(None, "g")).expect("room");
    let (first_woken, second_parked) = tokio::join!(woken_soon(&first), async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        waiters.push_committed("q", &["p"]);
        tokio::time::sleep(Duration::from_millis(20)).await;
        true
    });
    assert!(first_woken && second_parked);
    // `second` parks; `first` leaves without using its wake-up.
    let (second_woken, ()) = tokio::join!(woken_soon(&second), async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(first);
    });
    assert!(second_woken);
}

#[tokio::test]
async fn a_lease_end_wakes_only_its_group() {
    let waiters = Arc::new(Waiters::new(100));
    let other = [waiters.register(queue_key(None, "other")).expect("room")];
    assert_eq!(
        count_woken(&other, || waiters.lease_ended("q", "g")).await,
        0
    );
    let selector = [waiters
        .register(WaitKey::Selector { group: "g".into() })
        .expect("room")];
    assert_eq!(
        count_woken(&selector, || waiters.lease_ended("q", "g")).await,
        1
    );
    assert_eq!(
        count_woken(&selector, || waiters.push_committed("any", &["p"])).await,
        1
    );
}

#[tokio::test]
async fn registrations_beyond_the_limit_are_refused_and_drops_free_room() {
    let waiters = Arc::new(Waiters::new(2));
    let a = waiters.register(queue_key(None, "g")).expect("room");
    let _b = waiters
        .register(WaitKey::Selector { group: "g".into() })
        .expect("room");
    assert!(waiters.register(queue_key(None, "g")).is_err());
    drop(a);
    assert_eq!(waiters.len(), 1);
    assert!(waiters.register(queue_key(None, "g")).is_ok());
}

#[tokio::test]
async fn shutdown_wakes_everyone() {
    let waiters = Arc::new(Waiters::new(10));
    let guards = [
        waiters.register(queue_key(None, "g")).expect("room"),
        waiters
            .register(WaitKey::Selector { group: "h".into() })
            .expect("room"),
    ];
    assert_eq!(count_woken(&guards, || waiters.shutdown()).await, 2);
    assert!(waiters.is_shutting_down());
}

#[tokio::test]
async fn a_push_during_pop_attempts_gives_a_permit_to_one_attempt_per_partition() {
    let waiters = Arc::new(Waiters::new(100));
    // Five waiters are all running pop attempts (none parked) when one partition is pushed:
    // one of them retries, not all five.
    let guards: Vec<_> = (0..5)
        .map(|_| waiters.register(queue_key(None, "g")).expect("room"))
        .collect();
    waiters.push_committed("q", &["p1"]);
    let woken = futures::future::join_all(guards.iter().map(woken_soon)).await;
    assert_eq!(woken.into_iter().filter(|w| *w).count(), 1);
}

#[tokio::test]
async fn a_group_move_wakes_every_waiter_of_that_group_only() {
    let waiters = Arc::new(Waiters::new(100));
    let mut guards: Vec<_> = (0..3)
        .map(|i| {
            let partition = (i == 2).then_some("p1");
            waiters.register(queue_key(partition, "g")).expect("room")
        })
        .collect();
    guards.push(waiters.register(queue_key(None, "other")).expect("room"));
    assert_eq!(
        count_woken(&guards, || waiters.group_moved("q", "g")).await,
        3
    );
}

mod quiet {
    use super::*;

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(600)
    }

    /// Asks and learns that `group` has nothing due on `queue` until `until`.
    fn learn(waiters: &Waiters, queue: &str, group: &str, until: Instant) {
        let ticket = waiters.quiet_ask(queue, group).expect("room");
        waiters.quiet_learn(queue, group, ticket, Some(until));
    }

    #[test]
    fn an_answer_is_kept_until_it_expires() {
        let waiters = Waiters::new(10);
        assert_eq!(waiters.quiet("q", "g"), None, "nothing known yet");
        let until = far();
        learn(&waiters, "q", "g", until);
        assert_eq!(waiters.quiet("q", "g"), Some(until));
        assert_eq!(waiters.quiet("q", "other"), None, "per group");
        assert_eq!(waiters.quiet("r", "g"), None, "per queue");
        learn(
            &waiters,
            "q",
            "g",
            Instant::now() - Duration::from_millis(1),
        );
        assert_eq!(waiters.quiet("q", "g"), None, "expired");
    }

    #[test]
    fn events_end_what_is_known() {
        let waiters = Waiters::new(10);
        for group in ["g", "h"] {
            learn(&waiters, "q", group, far());
        }
        learn(&waiters, "r", "g", far());
        waiters.lease_ended("q", "g");
        assert_eq!(waiters.quiet("q", "g"), None, "a lease end, for its group");
        assert!(waiters.quiet("q", "h").is_some());
        waiters.push_committed("q", &["p"]);
        assert_eq!(waiters.quiet("q", "h"), None, "a push, for every group");
        assert!(
            waiters.quiet("r", "g").is_some(),
            "other queues keep theirs"
        );
        waiters.group_moved("r", "g");
        assert_eq!(waiters.quiet("r", "g"), None, "a seek");
        learn(&waiters, "q", "g", far());
        waiters.wake_all();
        assert_eq!(waiters.quiet("q", "g"), None, "maintenance forgets all");
    }

    #[test]
    fn an_answer_read_before_an_event_is_not_kept() {
        let waiters = Waiters::new(10);
        let ticket = waiters.quiet_ask("q", "g").expect("room");
        waiters.push_committed("q", &["p"]);
        waiters.quiet_learn("q", "g", ticket, Some(far()));
        assert_eq!(waiters.quiet("q", "g"), None);
        // A later ask supersedes an earlier one: the earlier answer may predate an event.
        let first = waiters.quiet_ask("q", "g").expect("room");
        let second = waiters.quiet_ask("q", "g").expect("room");
        waiters.quiet_learn("q", "g", first, Some(far()));
        assert_eq!(waiters.quiet("q", "g"), None);
        waiters.quiet_learn("q", "g", second, Some(far()));
        assert!(waiters.quiet("q", "g").is_some());
        // Something may be due: whatever was known goes.
        let third = waiters.quiet_ask("q", "g").expect("room");
        waiters.quiet_learn("q", "g", third, None);
        assert_eq!(waiters.quiet("q", "g"), None);
    }

    /// Registers an any-partition waiter of `group` on `q` and marks it parked, as
    /// `park_until` does before it waits.
    fn parked(waiters: &Arc<Waiters>, group: &str) -> WaiterGuard {
        parked_on(waiters, None, group)
    }

    /// The same for a waiter of `partition` (none: any).
    fn parked_on(waiters: &Arc<Waiters>, partition: Option<&str>, group: &str) -> WaiterGuard {
        let guard = waiters.register(queue_key(partition, group)).expect("room");
        waiters.with_entry(guard.id, guard.queue.as_deref(), |e| e.parked = true);
        guard
    }

    /// Whether an event woke `guard` since it was marked parked.
    fn woken(waiters: &Waiters, guard: &WaiterGuard) -> bool {
        let mut parked = true;
        waiters.with_entry(guard.id, guard.queue.as_deref(), |e| parked = e.parked);
        !parked
    }

    #[test]
    fn a_push_to_a_quiet_group_is_handed_to_the_parked_waiters_it_wakes() {
        let waiters = Arc::new(Waiters::new(10));
        learn(&waiters, "q", "g", far());
        learn(&waiters, "q", "h", far());
        let a = parked(&waiters, "g");
        let b = parked(&waiters, "g");
        waiters.push_committed("q", &["p"]);
        assert!(
            woken(&waiters, &a) && !woken(&waiters, &b),
            "one per pushed partition"
        );
        assert!(
            waiters.quiet("q", "g").is_some(),
            "handed: another long-poll of g parks"
        );
        assert_eq!(
            waiters.quiet("q", "h"),
            None,
            "h has no waiter to hand it to"
        );
        // The woken waiter asks; the hand-off holds until it answers.
        let ticket = waiters.quiet_ask("q", "g").expect("room");
        assert!(waiters.quiet("q", "g").is_some());
        let until = Instant::now() + Duration::from_secs(60);
        waiters.quiet_learn("q", "g", ticket, Some(until));
        assert_eq!(
            waiters.quiet("q", "g"),
            Some(until),
            "its answer is what is known"
        );
        assert!(!woken(&waiters, &b));
    }

    #[test]
    fn a_handed_answer_that_something_is_due_ends_it_and_wakes_one_more() {
        let waiters = Arc::new(Waiters::new(10));
        learn(&waiters, "q", "g", far());
        let a = parked(&waiters, "g");
        let b = parked(&waiters, "g");
        let c = parked(&waiters, "g");
        waiters.push_committed("q", &["p"]);
        assert!(woken(&waiters, &a));
        let ticket = waiters.quiet_ask("q", "g").expect("room");
        waiters.quiet_learn("q", "g", ticket, None);
        assert_eq!(waiters.quiet("q", "g"), None);
        assert_eq!(
            [woken(&waiters, &b), woken(&waiters, &c)],
            [true, false],
            "the long-polls parked meanwhile would have asked: one of them does"
        );
    }

    #[test]
    fn an_answer_that_something_is_due_waits_for_the_other_handed_waiters() {
        let waiters = Arc::new(Waiters::new(10));
        learn(&waiters, "q", "g", far());
        let a = parked(&waiters, "g");
        let b = parked(&waiters, "g");
        let c = parked(&waiters, "g");
        waiters.push_committed("q", &["p1", "p2"]);
        assert!(woken(&waiters, &a) && woken(&waiters, &b) && !woken(&waiters, &c));
        let first = waiters.quiet_ask("q", "g").expect("room");
        let second = waiters.quiet_ask("q", "g").expect("room");
        // Read before `second` claimed p2's message: due. `second` will look anyway.
        waiters.quiet_learn("q", "g", first, None);
        assert!(waiters.quiet("q", "g").is_some(), "still handed");
        assert!(!woken(&waiters, &c), "no one else asks yet");
        // The last answer is quiet, but an earlier one was not: one more waiter looks.
        waiters.quiet_learn("q", "g", second, Some(far()));
        assert_eq!(waiters.quiet("q", "g"), None);
        assert!(woken(&waiters, &c));
    }

    #[test]
    fn a_push_not_every_partition_of_which_woke_a_parked_waiter_ends_what_is_known() {
        let waiters = Arc::new(Waiters::new(10));
        learn(&waiters, "q", "g", far());
        let a = parked(&waiters, "g");
        let _running = waiters.register(queue_key(None, "g")).expect("room");
        let _single = parked_on(&waiters, Some("p2"), "g");
        waiters.push_committed("q", &["p1", "p2"]);
        assert!(woken(&waiters, &a));
        assert_eq!(waiters.quiet("q", "g"), None);
    }

    #[test]
    fn a_handed_waiter_that_leaves_passes_it_on_or_ends_it() {
        let waiters = Arc::new(Waiters::new(10));
        learn(&waiters, "q", "g", far());
        let a = parked(&waiters, "g");
        let b = parked(&waiters, "g");
        waiters.push_committed("q", &["p"]);
        drop(a);
        assert!(woken(&waiters, &b), "the heir takes the wake-up");
        assert!(waiters.quiet("q", "g").is_some(), "and the hand-off");
        let ticket = waiters.quiet_ask("q", "g").expect("room");
        waiters.quiet_learn("q", "g", ticket, Some(far()));
        assert!(waiters.quiet("q", "g").is_some());

        waiters.with_entry(b.id, b.queue.as_deref(), |e| e.parked = true);
        waiters.push_committed("q", &["p"]);
        assert!(woken(&waiters, &b));
        drop(b);
        assert_eq!(
            waiters.quiet("q", "g"),
            None,
            "no heir: the next long-poll asks"
        );
    }

    #[test]
    fn an_answer_asked_before_the_hand_off_does_not_count() {
        let waiters = Arc::new(Waiters::new(10));
        let stale = waiters.quiet_ask("q", "g").expect("room");
        let until = far();
        learn(&waiters, "q", "g", until);
        let _a = parked(&waiters, "g");
        waiters.push_committed("q", &["p"]);
        waiters.quiet_learn(
            "q",
            "g",
            stale,
            Some(Instant::now() + Duration::from_secs(1)),
        );
        assert_eq!(
            waiters.quiet("q", "g"),
            Some(until),
            "still handed: that answer may predate the push"
        );
        // Two pushes handed to two waiters: known again only once both answered.
        let _b = parked(&waiters, "g");
        waiters.push_committed("q", &["p"]);
        let first = waiters.quiet_ask("q", "g").expect("room");
        let second = waiters.quiet_ask("q", "g").expect("room");
        let soon = Instant::now() + Duration::from_secs(5);
        waiters.quiet_learn("q", "g", second, Some(soon));
        assert_eq!(
            waiters.quiet("q", "g"),
            Some(until),
            "one answer is not all of them"
        );
        waiters.quiet_learn("q", "g", first, Some(far()));
        assert_eq!(waiters.quiet("q", "g"), Some(soon), "the earliest answer");
    }

    #[test]
    fn the_table_never_holds_more_than_its_limit() {
        let waiters = Waiters::new(2);
        learn(&waiters, "q1", "g", far());
        learn(&waiters, "q2", "g", far());
        assert_eq!(waiters.lock().quiet.len(), 2);
        learn(&waiters, "q3", "g", far());
        assert_eq!(waiters.lock().quiet.len(), 1, "full: started afresh");
        assert!(waiters.quiet("q3", "g").is_some());
        assert_eq!(waiters.quiet("q1", "g"), None);
        assert_eq!(Waiters::new(0).quiet_ask("q", "g"), None);
    }
}

#[tokio::test]
async fn only_waiters_inside_park_count_as_parked() {
    let waiters = Arc::new(Waiters::new(100));
    let queued = waiters.register(queue_key(None, "g")).expect("room");
    let selector = waiters
        .register(WaitKey::Selector { group: "g".into() })
        .expect("room");
    // Registered, "running their first pop attempt": waiters, not parked.
    assert_eq!((waiters.len(), waiters.parked()), (2, 0));

    let far = Instant::now() + Duration::from_secs(3600);
    let park = tokio::spawn(async move {
        let woken = matches!(queued.park_until(far).await, Resumed::Event);
        (woken, queued)
    });
    while waiters.parked() < 1 {
        tokio::task::yield_now().await;
    }
    assert_eq!((waiters.len(), waiters.parked()), (2, 1));

    waiters.push_committed("q", &["p"]);
    let (woken, queued) = park.await.expect("the parked task ends");
    assert!(woken, "the push woke it, not its timer");
    // Woken, it runs an attempt again: still a waiter, no longer parked.
    assert_eq!((waiters.len(), waiters.parked()), (2, 0));
    drop((queued, selector));
    assert_eq!((waiters.len(), waiters.parked()), (0, 0));
}

/// Registers a queue waiter of group `g` that offers its pop, and parks it until `until` in a
/// task of its own; returns once it is parked.
async fn parked_offering(
    waiters: &Arc<Waiters>,
    partition: Option<&str>,
    until: Instant,
) -> tokio::task::JoinHandle<(Resumed, WaiterGuard)> {
    parked_offering_as(waiters, partition, until, false).await
}

/// [`parked_offering`], its answers telling the group's quiet or not.
async fn parked_offering_as(
    waiters: &Arc<Waiters>,
    partition: Option<&str>,
    until: Instant,
    tells_quiet: bool,
) -> tokio::task::JoinHandle<(Resumed, WaiterGuard)> {
    let guard = waiters.register(queue_key(partition, "g")).expect("room");
    guard.offer(
        Arc::from(format!("{{\"partition\":{partition:?}}}")),
        tells_quiet,
    );
    let before = waiters.parked();
    let task = tokio::spawn(async move { (guard.park_until(until).await, guard) });
    while waiters.parked() == before {
        tokio::task::yield_now().await;
    }
    task
}

/// How long the tests' quiet answers are trusted.
const TTL: Duration = Duration::from_secs(3600);

fn empty() -> Handed {
    Handed::Ran(PopOutcome::Empty {
        reason: "empty".into(),
        wake_at: None,
        quiet: None,
    })
}

#[tokio::test]
async fn a_push_takes_one_offered_pop_per_partition_and_wakes_no_one_else_for_them() {
    let waiters = Arc::new(Waiters::new(100));
    let far = Instant::now() + Duration::from_secs(3600);
    let mut tasks = Vec::new();
    for _ in 0..3 {
        tasks.push(parked_offering(&waiters, None, far).await);
    }
    // Waiters that offer nothing (a namespace pop; a queue pop that did not offer) are woken as
    // before, never taken.
    let plain = waiters.register(queue_key(None, "g")).expect("room");
    let selector = waiters
        .register(WaitKey::Selector { group: "g".into() })
        .expect("room");

    let taken = waiters.take_for_push(&[("q", vec!["p1", "p2"]), ("other", vec!["p1"])]);
    assert_eq!(taken.len(), 2, "one per pushed partition of the queue");
    assert_eq!(
        waiters.parked(),
        1,
        "the third offering waiter stays parked"
    );
    // The push committed: its two wake-ups went to the pops it took.
    waiters.push_committed_serving("q", &["p1", "p2"], &taken);
    assert_eq!(
        waiters.parked(),
        1,
        "no parked waiter was woken for those partitions"
    );

    for taken in taken {
        assert!(waiters.hand(taken, Handed::NotRun, TTL).is_none());
    }
    // The two handed waiters finish; the third stays parked.
    while tasks.iter().filter(|t| t.is_finished()).count() < 2 {
        tokio::task::yield_now().await;
    }
    let (finished, parked): (Vec<_>, Vec<_>) = tasks.into_iter().partition(|t| t.is_finished());
    // (Kept: a waiter that leaves without asking passes its wake-up on.)
    let mut kept = Vec::new();
    for task in finished {
        let (resumed, guard) = task.await.expect("parked task");
        kept.push(guard);
        assert!(matches!(resumed, Resumed::Handed(Handed::NotRun)));
    }
    assert_eq!((parked.len(), waiters.parked()), (1, 1));
    drop((plain, selector));
}

#[tokio::test]
async fn a_waiter_whose_pop_was_taken_waits_for_the_answer_past_its_time() {
    let waiters = Arc::new(Waiters::new(100));
    let soon = Instant::now() + Duration::from_millis(20);
    let task = parked_offering(&waiters, Some("p1"), soon).await;
    let taken = waiters.take_for_push(&[("q", vec!["p1"])]);
    assert_eq!(taken.len(), 1);
    // Its time passes while the push runs.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!task.is_finished(), "it waits for the pop the push took");
    for taken in taken {
        assert!(waiters.hand(taken, empty(), TTL).is_none());
    }
    let (resumed, _guard) = task.await.expect("parked task");
    assert!(
        matches!(
            resumed,
            Resumed::Handed(Handed::Ran(PopOutcome::Empty { .. }))
        ),
        "{resumed:?}"
    );
}

#[tokio::test]
async fn a_pop_taken_for_a_waiter_that_left_comes_back_and_its_wake_up_passes_on() {
    let waiters = Arc::new(Waiters::new(100));
    let far = Instant::now() + Duration::from_secs(3600);
    let first = parked_offering(&waiters, None, far).await;
    let taken = waiters.take_for_push(&[("q", vec!["p1"])]);
    assert_eq!(taken.len(), 1);
    let second = parked_offering(&waiters, None, far).await;
    // The first one's client leaves while the push runs.
    first.abort();
    let _ = first.await;
    let (resumed, _guard) = second.await.expect("parked task");
    assert!(
        matches!(resumed, Resumed::Event),
        "the departed waiter's wake-up passed on"
    );
    for taken in taken {
        assert!(matches!(
            waiters.hand(taken, empty(), TTL),
            Some(Handed::Ran(_))
        ));
    }
}

#[tokio::test]
async fn a_partition_waiter_is_taken_only_by_a_push_to_its_partition() {
    let waiters = Arc::new(Waiters::new(100));
    let far = Instant::now() + Duration::from_secs(3600);
    let _task = parked_offering(&waiters, Some("p1"), far).await;
    assert!(waiters.take_for_push(&[("q", vec!["p2"])]).is_empty());
    waiters.shutting_down.store(true, Ordering::SeqCst);
    assert!(
        waiters.take_for_push(&[("q", vec!["p1"])]).is_empty(),
        "nothing is taken once shutdown started"
    );
    waiters.shutting_down.store(false, Ordering::SeqCst);
    assert_eq!(waiters.take_for_push(&[("q", vec!["p1"])]).len(), 1);
}

#[tokio::test]
async fn another_push_wakes_a_parked_waiter_not_one_whose_pop_a_push_took() {
    let waiters = Arc::new(Waiters::new(100));
    let far = Instant::now() + Duration::from_secs(3600);
    let task = parked_offering(&waiters, None, far).await;
    let taken = waiters.take_for_push(&[("q", vec!["p1"])]);
    assert_eq!(taken.len(), 1);
    // A push on another lane commits while the first one's pops run, which may not see it: its
    // wake-up goes to a parked waiter.
    let parked = [waiters.register(queue_key(None, "g")).expect("room")];
    assert_eq!(
        count_woken(&parked, || waiters.push_committed("q", &["p2"])).await,
        1
    );
    for taken in taken {
        assert!(waiters.hand(taken, empty(), TTL).is_none());
    }
    drop(task.await.expect("parked task"));
}

fn quiet_answer() -> Handed {
    // Messages delivered, and nothing due after them until an event.
    let outcome = PopOutcome::from_result("{}".into(), Some("infinity")).expect("readable");
    assert!(outcome.quiet().is_some());
    Handed::Ran(outcome)
}

/// Registers a queue waiter of group `g` over every partition whose answers tell the group's
/// quiet, and parks it for an hour in a task of its own; returns once it is parked.
async fn parked_telling_quiet(
    waiters: &Arc<Waiters>,
) -> tokio::task::JoinHandle<(Resumed, WaiterGuard)> {
    let far = Instant::now() + Duration::from_secs(3600);
    parked_offering_as(waiters, None, far, true).await
}

#[tokio::test]
async fn what_a_pop_run_by_a_push_says_of_its_group_is_learnt_unless_an_event_came_since() {
    let waiters = Arc::new(Waiters::new(100));
    let task = parked_telling_quiet(&waiters).await;
    let taken = waiters.take_for_push(&[("q", vec!["p1"])]);
    // The push's own commit does not end what its pop answers.
    waiters.push_committed_serving("q", &["p1"], &taken);
    for taken in taken {
        assert!(waiters.hand(taken, quiet_answer(), TTL).is_none());
    }
    assert!(waiters.quiet("q", "g").is_some(), "learnt");
    let (_, guard) = task.await.expect("parked task");
    drop(guard);

    // Another push commits while the pop runs: its answer may not count that push's messages.
    let waiters = Arc::new(Waiters::new(100));
    let task = parked_telling_quiet(&waiters).await;
    let taken = waiters.take_for_push(&[("q", vec!["p1"])]);
    waiters.push_committed("q", &["p2"]);
    waiters.push_committed_serving("q", &["p1"], &taken);
    for taken in taken {
        assert!(waiters.hand(taken, quiet_answer(), TTL).is_none());
    }
    assert!(waiters.quiet("q", "g").is_none(), "not learnt");
    drop(task.await.expect("parked task"));
}

#[tokio::test]
async fn a_quiet_group_is_handed_to_the_pop_a_push_takes_and_its_answer_decides() {
    let waiters = Arc::new(Waiters::new(100));
    let known = |waiters: &Waiters| waiters.quiet("q", "g").is_some();
    let make_quiet = |waiters: &Waiters| {
        let ticket = waiters.quiet_ask("q", "g").expect("room");
        waiters.quiet_learn("q", "g", ticket, Some(Instant::now() + TTL));
        assert!(known(waiters));
    };
    make_quiet(&waiters);
    let task = parked_telling_quiet(&waiters).await;
    let taken = waiters.take_for_push(&[("q", vec!["p1"])]);
    assert!(
        known(&waiters),
        "long-polls coming back while the push runs park as before"
    );
    waiters.push_committed_serving("q", &["p1"], &taken);
    assert!(
        known(&waiters),
        "the push's own commit leaves it to its pop"
    );
    for taken in taken {
        assert!(waiters.hand(taken, quiet_answer(), TTL).is_none());
    }
    assert!(known(&waiters), "its pop said nothing more is due");
    drop(task.await.expect("parked task"));

    // Its pop says something may still be due: what was known ends, and a parked waiter of the
    // group is woken to ask.
    make_quiet(&waiters);
    let task = parked_telling_quiet(&waiters).await;
    let taken = waiters.take_for_push(&[("q", vec!["p1"])]);
    let other = waiters.register(queue_key(None, "g")).expect("room");
    waiters.push_committed_serving("q", &["p1"], &taken);
    let due = || Handed::Ran(PopOutcome::from_result("{}".into(), None).expect("readable"));
    let woken = count_woken(std::slice::from_ref(&other), || {
        for taken in taken {
            assert!(waiters.hand(taken, due(), TTL).is_none());
        }
    });
    assert_eq!(woken.await, 1, "the other waiter asks");
    assert!(!known(&waiters));
    drop(task.await.expect("parked task"));
}
