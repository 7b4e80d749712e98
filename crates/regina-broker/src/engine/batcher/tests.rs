//! The batcher against a fake executor: how waiting requests are cut into calls, how many calls
//! run at once, and what a failed call does to its requests.
//!
//! Nothing here depends on how long anything takes. Calls of the fake wait at a gate that the
//! test opens; time is paused, so the runtime's clock only moves when every task is idle, and a
//! wait that "times out" means that nothing else could happen (a hang becomes a failure).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Context;
use std::time::{Duration, Instant};

use futures::task::noop_waker_ref;
use tokio::sync::{mpsc, Semaphore};

use super::{BatchOp, BatchSettings, Batcher, Company, HoldRule, Pace, Turns};
use crate::db::DbError;
use crate::engine::repeat::CONFLICT_RETRIES_MAX;
use crate::metrics::Metrics;

/// Longer than anything in these tests waits for; with time paused it elapses only when every
/// task is idle.
const IDLE: Duration = Duration::from_secs(3600);

/// One request of the fake operation: answered with `id * 10`.
#[derive(Clone, Copy, Debug)]
struct Req {
    id: u32,
    /// Its share of `items_max`.
    weight: usize,
    /// Its share of `bytes_max`.
    bytes: usize,
    /// The statement fails whenever this request is part of the call.
    bad: bool,
}

fn req(id: u32) -> Req {
    Req {
        id,
        weight: 1,
        bytes: 1,
        bad: false,
    }
}

/// How the fake database answers the calls that start from now on.
#[derive(Default)]
struct Script {
    /// Calls wait at the gate before answering.
    gated: bool,
    /// This many calls fail with a conflict (deadlock, serialization failure) first.
    conflicts: usize,
    /// Every call fails: the database cannot be reached.
    unavailable: bool,
    /// Calls of more than one request answer one row short.
    short_when_fused: bool,
}

/// The fake executor: records every call, holds it at the gate when told to, and answers as
/// the script says.
#[derive(Clone)]
struct FakeDb(Arc<FakeState>);

struct FakeState {
    script: Mutex<Script>,
    /// Each gated call takes one permit to finish.
    gate: Semaphore,
    /// The ids of every call, in the order calls started.
    calls: Mutex<Vec<Vec<u32>>>,
    /// The ids of each call, sent when it starts.
    started: mpsc::UnboundedSender<Vec<u32>>,
    in_flight: AtomicUsize,
    in_flight_max: AtomicUsize,
    /// Answers handed to [`BatchOp::abandoned`].
    abandoned: Mutex<Vec<u32>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .expect("no test thread panicked holding the lock")
}

impl FakeDb {
    /// One call: decides its outcome when it starts, waits at the gate if gated, then answers.
    async fn run(&self, requests: Vec<Req>) -> Result<Vec<u32>, DbError> {
        let state = &self.0;
        let ids: Vec<u32> = requests.iter().map(|r| r.id).collect();
        lock(&state.calls).push(ids.clone());
        let in_flight = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.in_flight_max.fetch_max(in_flight, Ordering::SeqCst);
        let (gated, outcome) = {
            let mut script = lock(&state.script);
            (script.gated, Self::outcome(&mut script, &requests))
        };
        let _ = state.started.send(ids);
        if gated {
            state.gate.acquire().await.expect("gate open").forget();
        }
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        outcome
    }

    fn outcome(script: &mut Script, requests: &[Req]) -> Result<Vec<u32>, DbError> {
        if script.unavailable {
            return Err(DbError::Unavailable("connection refused".to_owned()));
        }
        if script.conflicts > 0 {
            script.conflicts -= 1;
            return Err(DbError::Conflict("deadlock detected".to_owned()));
        }
        if requests.iter().any(|r| r.bad) {
            return Err(DbError::Statement {
                code: "22P02".to_owned(),
                message: "invalid input syntax".to_owned(),
            });
        }
        let mut answers: Vec<u32> = requests.iter().map(|r| r.id * 10).collect();
        if script.short_when_fused && requests.len() > 1 {
            answers.pop();
        }
        Ok(answers)
    }

    fn script(&self) -> MutexGuard<'_, Script> {
        lock(&self.0.script)
    }

    /// Lets `calls` gated calls finish.
    fn open(&self, calls: usize) {
        self.0.gate.add_permits(calls);
    }

    fn calls(&self) -> Vec<Vec<u32>> {
        lock(&self.0.calls).clone()
    }
}

struct FakeOp;

impl BatchOp for FakeOp {
    type Executor = FakeDb;
    type Request = Req;
    type Response = u32;
    const NAME: &'static str = "fake";

    fn weight(request: &Req) -> usize {
        request.weight
    }

    fn bytes(request: &Req) -> usize {
        request.bytes
    }

    async fn call(&self, db: &FakeDb, requests: &[&Req]) -> Result<Vec<u32>, DbError> {
        db.run(requests.iter().map(|r| **r).collect()).await
    }

    async fn abandoned(&self, db: &FakeDb, responses: Vec<u32>) {
        lock(&db.0.abandoned).extend(responses);
    }
}

/// Settings of a batcher in these tests: no byte cap, no hold, no company.
fn settings(slots: usize, requests_max: usize, items_max: usize) -> BatchSettings {
    BatchSettings {
        slots,
        requests_max,
        items_max,
        bytes_max: usize::MAX,
        hold: Duration::ZERO,
        hold_rule: HoldRule::Every,
        company: None,
    }
}

/// A batcher on a fake database, and the feed of calls as they start.
struct Harness {
    batcher: Arc<Batcher<FakeOp>>,
    db: FakeDb,
    started: mpsc::UnboundedReceiver<Vec<u32>>,
}

impl Harness {
    fn start(slots: usize, requests_max: usize, items_max: usize, script: Script) -> Harness {
        Harness::start_with(settings(slots, requests_max, items_max), script)
    }

    fn start_with(settings: BatchSettings, script: Script) -> Harness {
        let (sender, started) = mpsc::unbounded_channel();
        let db = FakeDb(Arc::new(FakeState {
            script: Mutex::new(script),
            gate: Semaphore::new(0),
            calls: Mutex::new(Vec::new()),
            started: sender,
            in_flight: AtomicUsize::new(0),
            in_flight_max: AtomicUsize::new(0),
            abandoned: Mutex::new(Vec::new()),
        }));
        let metrics = Metrics::new(Instant::now(), 10);
        let batcher = Batcher::start(Arc::new(FakeOp), db.clone(), settings, &metrics);
        let batcher = Arc::new(batcher);
        Harness {
            batcher,
            db,
            started,
        }
    }

    /// Submits `request` and polls the submission once, which queues it; awaiting the returned
    /// future gives its answer, dropping it abandons the request.
    fn enqueue(&self, request: Req) -> Answer {
        let batcher = self.batcher.clone();
        let mut answer: Answer = Box::pin(async move { batcher.submit(request).await });
        let polled = answer
            .as_mut()
            .poll(&mut Context::from_waker(noop_waker_ref()));
        assert!(polled.is_pending(), "answered before any call ran");
        answer
    }

    /// The ids of the next call to start.
    async fn next_call(&mut self) -> Vec<u32> {
        tokio::time::timeout(IDLE, self.started.recv())
            .await
            .expect("a call started")
            .expect("the fake is alive")
    }

    /// Whether a call started that [`Harness::next_call`] has not returned yet, once every task
    /// has run as far as it can.
    async fn call_pending(&mut self) -> bool {
        tokio::time::sleep(IDLE).await;
        !self.started.is_empty()
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<u32, DbError>>>>;

/// The answers of `pending`, in order.
async fn answers(pending: Vec<Answer>) -> Vec<Result<u32, DbError>> {
    tokio::time::timeout(IDLE, futures::future::join_all(pending))
        .await
        .expect("every request answered")
}

fn gated() -> Script {
    Script {
        gated: true,
        ..Script::default()
    }
}

#[tokio::test(start_paused = true)]
async fn waiting_requests_fuse_up_to_the_request_cap() {
    let mut h = Harness::start(1, 3, 100, gated());
    let mut pending = vec![h.enqueue(req(1))];
    assert_eq!(h.next_call().await, [1]);
    // The only slot is busy: everything submitted now waits, then leaves in calls of three.
    pending.extend((2..=8).map(|id| h.enqueue(req(id))));
    h.db.open(100);
    let got = answers(pending).await;
    let ok: Vec<u32> = got.into_iter().map(|a| a.expect("answered")).collect();
    assert_eq!(ok, [10, 20, 30, 40, 50, 60, 70, 80]);
    assert_eq!(
        h.db.calls(),
        [vec![1], vec![2, 3, 4], vec![5, 6, 7], vec![8]]
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_carries_at_most_the_item_cap() {
    let mut h = Harness::start(1, 100, 5, gated());
    let mut pending = vec![h.enqueue(req(1))];
    assert_eq!(h.next_call().await, [1]);
    let weights = [(2, 2), (3, 2), (4, 2), (5, 4), (6, 6), (7, 1), (8, 1)];
    pending.extend(weights.map(|(id, weight)| h.enqueue(Req { weight, ..req(id) })));
    h.db.open(100);
    for answer in answers(pending).await {
        answer.expect("answered");
    }
    // A request that does not fit opens the next call; one heavier than the cap goes alone.
    assert_eq!(
        h.db.calls(),
        [vec![1], vec![2, 3], vec![4], vec![5], vec![6], vec![7, 8]]
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_carries_at_most_the_byte_cap() {
    let settings = BatchSettings {
        bytes_max: 1000,
        ..settings(1, 100, 100)
    };
    let mut h = Harness::start_with(settings, gated());
    let mut pending = vec![h.enqueue(req(1))];
    assert_eq!(h.next_call().await, [1]);
    let sizes = [(2, 400), (3, 500), (4, 200), (5, 3000), (6, 999), (7, 1)];
    pending.extend(sizes.map(|(id, bytes)| h.enqueue(Req { bytes, ..req(id) })));
    h.db.open(100);
    for answer in answers(pending).await {
        answer.expect("answered");
    }
    // A request that does not fit opens the next call; one larger than the cap goes alone.
    assert_eq!(
        h.db.calls(),
        [vec![1], vec![2, 3], vec![4], vec![5], vec![6, 7]]
    );
}

#[tokio::test(start_paused = true)]
async fn calls_in_flight_never_exceed_the_slots() {
    let mut h = Harness::start(2, 1, 100, gated());
    let pending: Vec<_> = (1..=5).map(|id| h.enqueue(req(id))).collect();
    let mut first_two = [h.next_call().await, h.next_call().await];
    first_two.sort();
    assert_eq!(first_two, [[1], [2]]);
    assert!(
        !h.call_pending().await,
        "a third call started with both slots busy"
    );
    h.db.open(1);
    assert_eq!(h.next_call().await, [3]);
    assert!(
        !h.call_pending().await,
        "a fourth call started with both slots busy"
    );
    h.db.open(100);
    for (id, answer) in (1..).zip(answers(pending).await) {
        assert_eq!(answer.expect("answered"), id * 10);
    }
    assert_eq!(h.db.0.in_flight_max.load(Ordering::SeqCst), 2);
    assert_eq!(h.db.calls().len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_failed_fused_call_is_rerun_request_by_request() {
    let mut h = Harness::start(1, 100, 100, gated());
    let mut pending = vec![h.enqueue(req(1))];
    assert_eq!(h.next_call().await, [1]);
    let bad = Req {
        bad: true,
        ..req(3)
    };
    pending.extend([req(2), bad, req(4)].map(|r| h.enqueue(r)));
    h.db.open(100);
    let got = answers(pending).await;
    assert_eq!(got[0].as_ref().ok(), Some(&10));
    assert_eq!(got[1].as_ref().ok(), Some(&20));
    assert!(
        matches!(&got[2], Err(DbError::Statement { code, .. }) if code == "22P02"),
        "the bad request gets its own error: {:?}",
        got[2]
    );
    assert_eq!(got[3].as_ref().ok(), Some(&40));
    let calls = h.db.calls();
    assert_eq!(calls[..2], [vec![1], vec![2, 3, 4]]);
    let mut alone = calls[2..].to_vec();
    alone.sort();
    assert_eq!(
        alone,
        [vec![2], vec![3], vec![4]],
        "each request re-run once, alone"
    );
}

#[tokio::test(start_paused = true)]
async fn a_fused_call_answering_short_is_rerun_request_by_request() {
    let mut h = Harness::start(1, 100, 100, gated());
    let mut pending = vec![h.enqueue(req(1))];
    assert_eq!(h.next_call().await, [1]);
    h.db.script().short_when_fused = true;
    pending.extend([2, 3].map(|id| h.enqueue(req(id))));
    h.db.open(100);
    let ok: Vec<u32> = answers(pending)
        .await
        .into_iter()
        .map(|a| a.expect("answered alone"))
        .collect();
    assert_eq!(ok, [10, 20, 30]);
    assert_eq!(
        h.db.calls().len(),
        4,
        "one fused call, then one per request"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_database_fails_each_request_once_without_isolation() {
    let mut h = Harness::start(1, 100, 100, gated());
    let mut pending = vec![h.enqueue(req(1))];
    assert_eq!(h.next_call().await, [1]);
    h.db.script().unavailable = true;
    pending.extend([2, 3, 4].map(|id| h.enqueue(req(id))));
    h.db.open(100);
    let got = answers(pending).await;
    assert!(got[0].is_ok(), "the first call started before the outage");
    for answer in &got[1..] {
        assert!(matches!(answer, Err(DbError::Unavailable(_))), "{answer:?}");
    }
    assert_eq!(h.db.calls(), [vec![1], vec![2, 3, 4]]);
}

#[tokio::test(start_paused = true)]
async fn conflicts_are_repeated_up_to_the_limit() {
    let script = Script {
        conflicts: CONFLICT_RETRIES_MAX,
        ..Script::default()
    };
    let h = Harness::start(1, 100, 100, script);
    let got = answers(vec![h.enqueue(req(1))]).await;
    assert_eq!(got[0].as_ref().ok(), Some(&10));
    assert_eq!(h.db.calls(), vec![vec![1]; CONFLICT_RETRIES_MAX + 1]);
}

#[tokio::test(start_paused = true)]
async fn conflicts_beyond_the_limit_fail_the_request() {
    let script = Script {
        conflicts: CONFLICT_RETRIES_MAX + 2,
        ..Script::default()
    };
    let h = Harness::start(1, 100, 100, script);
    let got = answers(vec![h.enqueue(req(1))]).await;
    assert!(matches!(got[0], Err(DbError::Conflict(_))), "{:?}", got[0]);
    assert_eq!(h.db.calls(), vec![vec![1]; CONFLICT_RETRIES_MAX + 1]);
    assert_eq!(h.db.script().conflicts, 1, "no call after the last retry");
}

#[tokio::test(start_paused = true)]
async fn a_conflicting_fused_call_is_repeated_whole() {
    let mut h = Harness::start(1, 100, 100, gated());
    let mut pending = vec![h.enqueue(req(1))];
    assert_eq!(h.next_call().await, [1]);
    h.db.script().conflicts = 2;
    pending.extend([2, 3].map(|id| h.enqueue(req(id))));
    h.db.open(100);
    let ok: Vec<u32> = answers(pending)
        .await
        .into_iter()
        .map(|a| a.expect("answered"))
        .collect();
    assert_eq!(ok, [10, 20, 30]);
    assert_eq!(h.db.calls(), [vec![1], vec![2, 3], vec![2, 3], vec![2, 3]]);
}

#[tokio::test(start_paused = true)]
async fn departed_requesters_are_skipped_or_their_answers_handed_back() {
    let mut h = Harness::start(1, 100, 100, gated());
    let first = h.enqueue(req(1));
    assert_eq!(h.next_call().await, [1]);
    // Leaves while its call runs: its answer goes to `abandoned`.
    drop(first);
    // Leaves before any call took it: no call carries it.
    drop(h.enqueue(req(2)));
    let third = h.enqueue(req(3));
    h.db.open(100);
    let got = answers(vec![third]).await;
    assert_eq!(got[0].as_ref().ok(), Some(&30));
    assert_eq!(h.db.calls(), [vec![1], vec![3]]);
    // The single slot is released only after `abandoned` ran, so it ran before call [3].
    assert_eq!(*lock(&h.db.0.abandoned), [10]);
}

#[tokio::test(start_paused = true)]
async fn a_hold_fuses_the_requests_that_come_during_it() {
    let hold = Duration::from_millis(5);
    let settings = BatchSettings {
        hold,
        ..settings(1, 100, 100)
    };
    let mut h = Harness::start_with(settings, Script::default());
    let first = h.enqueue(req(1));
    // The dispatcher takes the first request and holds its call; one that comes meanwhile joins.
    tokio::time::advance(Duration::from_millis(2)).await;
    let second = h.enqueue(req(2));
    assert_eq!(h.next_call().await, [1, 2]);
    for answer in answers(vec![first, second]).await {
        answer.expect("answered");
    }
    // A request alone waits the hold out before its call starts (the clock is the runtime's
    // paused one: it moves only by the timers that fire).
    let sent = tokio::time::Instant::now();
    let third = h.enqueue(req(3));
    assert_eq!(h.next_call().await, [3]);
    assert!(
        sent.elapsed() >= hold,
        "the call left {:?} after its request",
        sent.elapsed()
    );
    answers(vec![third]).await[0].as_ref().expect("answered");
    assert_eq!(h.db.calls(), [vec![1, 2], vec![3]]);
}

#[tokio::test(start_paused = true)]
async fn a_hold_with_a_pace_waits_only_where_company_comes() {
    let hold = Duration::from_millis(2);
    let settings = BatchSettings {
        hold,
        hold_rule: HoldRule::Lone {
            busy_gap: Duration::from_millis(3),
        },
        ..settings(1, 100, 100)
    };
    let mut h = Harness::start_with(settings, gated());
    // A new batcher is not busy: its first request goes out at once.
    let sent = tokio::time::Instant::now();
    let mut pending = vec![h.enqueue(req(0))];
    assert_eq!(h.next_call().await, [0]);
    assert_eq!(sent.elapsed(), Duration::ZERO, "the first request waited");
    // Forty requests a millisecond apart pile up behind that call: a busy pace.
    for id in 1..=40 {
        tokio::time::advance(Duration::from_millis(1)).await;
        pending.push(h.enqueue(req(id)));
    }
    h.db.open(1);
    assert_eq!(h.next_call().await, (1..=40).collect::<Vec<_>>());
    // From here on calls end as soon as they start.
    h.db.open(10_000);
    for answer in answers(std::mem::take(&mut pending)).await {
        answer.expect("answered");
    }
    // A stream of a request every millisecond, none waiting for its answer. No hold has paid
    // yet, so lone requests go out at once, until the sixteenth waits: another request comes
    // during its hold, and from then on lone requests wait and go out with the ones that come
    // meanwhile.
    for id in 100..160 {
        pending.push(h.enqueue(req(id)));
        tokio::time::advance(Duration::from_millis(1)).await;
    }
    for answer in answers(std::mem::take(&mut pending)).await {
        answer.expect("answered");
    }
    let stream: Vec<Vec<u32>> = h.db.calls().into_iter().filter(|c| c[0] >= 100).collect();
    assert!(
        stream[..15].iter().all(|call| call.len() == 1),
        "requests waited before any hold paid: {stream:?}"
    );
    assert!(
        // The last request's hold finds no one: the stream has ended.
        stream[stream.len() - 10..stream.len() - 1]
            .iter()
            .all(|call| call.len() > 1),
        "a stream with company for every hold still sends alone: {stream:?}"
    );
    // One client that sends each request after the answer to the last, without pause: busy, but
    // a hold never finds company. Once the holds of the stream are forgotten, only probes wait,
    // fewer and fewer.
    let held = closed_loop(&h, hold).await;
    let first_sent = held
        .iter()
        .position(|h| !*h)
        .expect("a request went at once");
    assert!(
        first_sent <= 16,
        "{first_sent} holds in a row found no company"
    );
    assert_doubling_probes(
        &(first_sent..held.len())
            .filter(|k| held[*k])
            .collect::<Vec<_>>(),
    );
    // After a pause of 30 ms the pace is no longer busy: a lone request goes out at once.
    tokio::time::advance(Duration::from_millis(30)).await;
    let sent = tokio::time::Instant::now();
    answers(vec![h.enqueue(req(300))]).await[0]
        .as_ref()
        .expect("answered");
    assert_eq!(
        sent.elapsed(),
        Duration::ZERO,
        "a request after a pause waited"
    );
}

/// 512 requests of one client that sends each after the answer to the last: whether each waited
/// `hold`.
async fn closed_loop(h: &Harness, hold: Duration) -> Vec<bool> {
    let mut held = Vec::new();
    for id in 1_000..1_512 {
        let sent = tokio::time::Instant::now();
        answers(vec![h.enqueue(req(id))]).await[0]
            .as_ref()
            .expect("answered");
        held.push(sent.elapsed() >= hold);
    }
    held
}

/// Asserts that the requests of [`closed_loop`] at `probes` were probes that found no company:
/// three to five of them, each interval twice the last.
fn assert_doubling_probes(probes: &[usize]) {
    assert!(
        (3..=5).contains(&probes.len()),
        "probes at {probes:?} of the 512 requests"
    );
    let intervals: Vec<usize> = probes.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        intervals.windows(2).all(|w| w[1] == 2 * w[0]),
        "probes at {probes:?}: each failed probe doubles the interval"
    );
}

#[test]
fn a_pace_is_busy_while_requests_come_more_often_than_its_gap() {
    let start = tokio::time::Instant::now();
    let mut pace = Pace::new(HoldRule::Lone {
        busy_gap: Duration::from_millis(3),
    });
    let mut at = start;
    let mut arrive = |pace: &mut Pace, gap_ms: u64, times: usize| {
        for _ in 0..times {
            at += Duration::from_millis(gap_ms);
            pace.arrived(at);
        }
    };
    arrive(&mut pace, 0, 1);
    assert!(!pace.busy(), "one request is no pace");
    arrive(&mut pace, 2, 40);
    assert!(pace.busy(), "500 a second, against a gap of 3 ms");
    arrive(&mut pace, 4, 40);
    assert!(!pace.busy(), "250 a second");
    arrive(&mut pace, 1, 20);
    assert!(pace.busy(), "1 000 a second again");
    // A long silence counts as a capped gap: the pace recovers after a few quick requests.
    arrive(&mut pace, 60_000, 1);
    assert!(!pace.busy(), "after a minute of silence");
    arrive(&mut pace, 0, 16);
    assert!(pace.busy(), "sixteen requests at once after the silence");
    // `BATCH_HOLD_GAP_US=0`: never busy, however quick the requests.
    let mut never = Pace::new(HoldRule::Lone {
        busy_gap: Duration::ZERO,
    });
    for _ in 0..100 {
        never.arrived(start);
    }
    assert!(!never.busy(), "busy with a gap of 0");
}

#[test]
fn a_busy_pace_holds_a_lone_request_while_holds_find_company() {
    let mut pace = Pace::new(HoldRule::Lone {
        busy_gap: Duration::from_millis(3),
    });
    let start = tokio::time::Instant::now();
    for k in 0..40 {
        pace.arrived(start + Duration::from_millis(k));
    }
    assert!(pace.busy());
    // A request with others waiting never waits.
    assert!((0..100).all(|_| !pace.holds(false)));
    // No hold has paid yet: only every sixteenth lone request waits.
    let probes: Vec<bool> = (0..32).map(|_| pace.holds(true)).collect();
    let expected: Vec<bool> = (1..=32).map(|k| k % Pace::PROBE_EVERY == 0).collect();
    assert_eq!(probes, expected);
    // A probe that found no company makes the next come twice as late.
    pace.held(false);
    let probes: Vec<bool> = (0..64).map(|_| pace.holds(true)).collect();
    let expected: Vec<bool> = (1..=64).map(|k| k % (2 * Pace::PROBE_EVERY) == 0).collect();
    assert_eq!(probes, expected);
    // One that found company makes every lone request wait...
    pace.held(true);
    assert!((0..10).all(|_| pace.holds(true)));
    // ...until most recent holds found none.
    let mut misses = 0;
    while pace.holds(true) {
        pace.held(false);
        misses += 1;
    }
    assert!((1..=16).contains(&misses), "{misses} misses");
    // The hold that found company set the probes back to every sixteenth; the miss that took the
    // payoff below its minimum doubled that once (the request that ended the loop was the first
    // to go at once).
    let next = (2..=1_000).find(|_| pace.holds(true));
    assert_eq!(next, Some(2 * Pace::PROBE_EVERY));
    // A batcher that is not busy never waits, whatever holds found.
    let mut idle = Pace::new(HoldRule::Lone {
        busy_gap: Duration::from_millis(3),
    });
    idle.held(true);
    assert!((0..100).all(|_| !idle.holds(true)));
}

#[test]
fn a_gathering_pace_always_holds_a_call_with_company_waiting() {
    let mut pace = Pace::of(HoldRule::Gather).expect("a pace");
    // No hold has paid yet, and no request came before: a call with others waiting waits all
    // the same; lone requests wait as probes, at any pace.
    assert!((0..100).all(|_| pace.holds(false)));
    let probes: Vec<bool> = (0..32).map(|_| pace.holds(true)).collect();
    let expected: Vec<bool> = (1..=32).map(|k| k % Pace::PROBE_EVERY == 0).collect();
    assert_eq!(probes, expected);
    // A probe that found company makes every lone request wait.
    pace.held(true);
    assert!((0..10).all(|k| pace.holds(k % 2 == 0)));
    // The pace of pushes and acks never holds a call with others waiting.
    let mut lone = Pace::of(HoldRule::Lone {
        busy_gap: Duration::from_millis(3),
    })
    .expect("a pace");
    let start = tokio::time::Instant::now();
    for k in 0..40 {
        lone.arrived(start + Duration::from_millis(k));
    }
    lone.held(true);
    assert!(lone.holds(true));
    assert!((0..100).all(|_| !lone.holds(false)));
    assert!(
        Pace::of(HoldRule::Every).is_none(),
        "every call waits, no pace"
    );
}

#[tokio::test(start_paused = true)]
async fn a_gathering_hold_waits_with_company_and_learns_only_from_lone_requests() {
    let hold = Duration::from_millis(2);
    let settings = BatchSettings {
        hold,
        hold_rule: HoldRule::Gather,
        ..settings(1, 100, 100)
    };
    let mut h = Harness::start_with(settings, gated());
    let mut pending = vec![h.enqueue(req(0))];
    assert_eq!(h.next_call().await, [0]);
    // Each round, two requests queue behind the call in flight; when it ends, the next call
    // starts with company waiting and waits the hold, and a third request comes during it.
    for round in 0..40 {
        let (a, b, c) = (3 * round + 1, 3 * round + 2, 3 * round + 3);
        pending.push(h.enqueue(req(a)));
        tokio::time::advance(Duration::from_millis(1)).await;
        pending.push(h.enqueue(req(b)));
        let opened = tokio::time::Instant::now();
        h.db.open(1);
        tokio::time::advance(Duration::from_millis(1)).await;
        pending.push(h.enqueue(req(c)));
        assert_eq!(h.next_call().await, [a, b, c]);
        assert!(
            opened.elapsed() >= hold,
            "round {round}: a call with company did not wait"
        );
    }
    h.db.open(10_000);
    for answer in answers(std::mem::take(&mut pending)).await {
        answer.expect("answered");
    }
    // One consumer that asks again only after each answer: the holds above had company waiting,
    // so they taught the pace nothing, and its lone requests go at once but for probes, fewer
    // and fewer.
    let held = closed_loop(&h, hold).await;
    let probes: Vec<usize> = (0..held.len()).filter(|k| held[*k]).collect();
    assert!(
        probes.first().is_some_and(|k| *k >= 8),
        "lone requests waited from the start: {probes:?}"
    );
    assert_doubling_probes(&probes);
}

/// Two batchers of one [`Company`] (one slot each, as push lanes), on gated fakes.
fn company_of_two(parallel_weight_min: usize) -> (Harness, Harness) {
    let company = Company::new(parallel_weight_min);
    let member = || {
        Harness::start_with(
            BatchSettings {
                company: Some(company.clone()),
                ..settings(1, 100, 100)
            },
            gated(),
        )
    };
    (member(), member())
}

#[tokio::test(start_paused = true)]
async fn a_small_call_waits_for_another_members_call_and_fuses_what_comes_meanwhile() {
    let (mut a, mut b) = company_of_two(3);
    let mut pending = vec![a.enqueue(req(1))];
    assert_eq!(a.next_call().await, [1]);
    pending.push(b.enqueue(req(2)));
    assert!(!b.call_pending().await, "one item waits for the other call");
    pending.push(b.enqueue(req(3)));
    assert!(!b.call_pending().await, "two items wait too");
    a.db.open(1);
    assert_eq!(b.next_call().await, [2, 3], "after it, one call for both");
    b.db.open(1);
    for answer in answers(pending).await {
        answer.expect("answered");
    }
}

#[tokio::test(start_paused = true)]
async fn enough_weight_runs_beside_another_members_call() {
    let (mut a, mut b) = company_of_two(3);
    let first = a.enqueue(req(1));
    assert_eq!(a.next_call().await, [1]);
    let heavy = b.enqueue(Req {
        weight: 3,
        ..req(2)
    });
    assert_eq!(b.next_call().await, [2], "three items do not wait");
    assert_eq!(a.db.calls(), [vec![1]], "while the first call still runs");
    a.db.open(1);
    b.db.open(1);
    for answer in answers(vec![first, heavy]).await {
        answer.expect("answered");
    }
}

#[tokio::test(start_paused = true)]
async fn a_member_that_waited_goes_before_one_whose_call_ended() {
    let (mut a, mut b) = company_of_two(3);
    let mut pending = vec![a.enqueue(req(1))];
    assert_eq!(a.next_call().await, [1]);
    pending.push(b.enqueue(req(2)));
    assert!(!b.call_pending().await);
    // Queued behind `a`'s own call.
    pending.push(a.enqueue(req(3)));
    a.db.open(1);
    assert_eq!(
        b.next_call().await,
        [2],
        "the member that waited goes first"
    );
    assert!(!a.call_pending().await, "then the other waits its turn");
    b.db.open(1);
    assert_eq!(a.next_call().await, [3]);
    a.db.open(1);
    for answer in answers(pending).await {
        answer.expect("answered");
    }
}

#[tokio::test(start_paused = true)]
async fn members_of_a_company_of_weight_one_never_wait() {
    let (mut a, mut b) = company_of_two(1);
    let first = a.enqueue(req(1));
    assert_eq!(a.next_call().await, [1]);
    let second = b.enqueue(req(2));
    assert_eq!(b.next_call().await, [2]);
    a.db.open(1);
    b.db.open(1);
    for answer in answers(vec![first, second]).await {
        answer.expect("answered");
    }
}

#[test]
fn a_member_that_has_not_waited_yields_to_one_that_has() {
    let mut turns = Turns {
        running: 1,
        waiting: 0,
    };
    assert!(!turns.take(false, false), "a call runs: wait");
    assert_eq!(turns.waiting, 1);
    turns.running = 0;
    assert!(!turns.take(false, false), "none runs, but one waited: wait");
    assert_eq!(turns.waiting, 2);
    assert!(turns.take(false, true), "one that waited goes");
    assert_eq!((turns.running, turns.waiting), (1, 1));
    assert!(turns.take(true, false), "a full call goes beside it");
    assert_eq!((turns.running, turns.waiting), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn a_batcher_in_a_company_of_its_own_runs_a_second_small_call_after_the_first() {
    let settings = BatchSettings {
        company: Some(Company::new(3)),
        ..settings(2, 100, 100)
    };
    let mut h = Harness::start_with(settings, gated());
    let mut pending = vec![h.enqueue(req(1))];
    assert_eq!(h.next_call().await, [1]);
    pending.push(h.enqueue(req(2)));
    assert!(
        !h.call_pending().await,
        "a free slot, but too little to run beside the first"
    );
    pending.push(h.enqueue(req(3)));
    pending.push(h.enqueue(req(4)));
    assert_eq!(
        h.next_call().await,
        [2, 3, 4],
        "enough waiting: it runs beside the first"
    );
    h.db.open(2);
    for answer in answers(pending).await {
        answer.expect("answered");
    }
    assert_eq!(h.db.0.in_flight_max.load(Ordering::SeqCst), 2);
}
