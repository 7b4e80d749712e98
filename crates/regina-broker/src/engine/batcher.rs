//! Opportunistic batching: one dispatcher per operation kind with a few in-flight slots. When a
//! slot frees, everything waiting (up to `BATCH_REQUESTS_MAX`) goes out as one database call, so
//! an idle broker answers in one round trip and a loaded one grows its batches by itself.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tracing::Instrument;

use super::repeat::{repeating_conflicts, succeeded};
use crate::db::DbError;
use crate::metrics::{DbCallMetrics, Metrics};

/// One kind of fused database call.
pub(crate) trait BatchOp: Send + Sync + 'static {
    /// What the calls run on: [`crate::db::Db`] in the broker, a fake in the batcher's tests.
    /// The batcher only hands it to [`BatchOp::call`] and [`BatchOp::abandoned`], from as many
    /// tasks as there are slots.
    type Executor: Clone + Send + Sync + 'static;
    /// One HTTP request's share of a call.
    type Request: Send + Sync + 'static;
    /// Its answer.
    type Response: Send + 'static;
    /// Name in logs and spans.
    const NAME: &'static str;

    /// The request's share of `BATCH_ITEMS_MAX`: the rows it sends or may receive (push items,
    /// acks, a pop's `batch`). Caps the size of one call, hence the buffers a pooled connection
    /// keeps at its largest size for as long as it lives.
    fn weight(_request: &Self::Request) -> usize {
        1
    }

    /// The bytes the request adds to a call's arguments, counted against `BATCH_BYTES_MAX` for
    /// the same reason as [`BatchOp::weight`]; `0` where arguments are small.
    fn bytes(_request: &Self::Request) -> usize {
        0
    }

    /// Runs one call for `requests` and answers each, in order.
    ///
    /// # Errors
    /// The call's [`DbError`]; the batcher decides whether to isolate requests.
    fn call(
        &self,
        executor: &Self::Executor,
        requests: &[&Self::Request],
    ) -> impl Future<Output = Result<Vec<Self::Response>, DbError>> + Send;

    /// Handles answers whose requester went away before receiving them.
    fn abandoned(
        &self,
        _executor: &Self::Executor,
        _responses: Vec<Self::Response>,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// Batchers that defer small calls to each other: a member whose free slot has less than
/// `parallel_weight_min` of weight waiting does not start a call while a call of the company runs
/// (its own other slots' too); it waits for that call to end, fusing what arrives meanwhile. At a
/// light load two transactions committing at once wait for each other's flushes, one after the
/// other they do not; under load every member has enough waiting to run at once. Push lanes form
/// one company, the ack calls another. A member that waited goes before one whose call just
/// ended, so none is passed over for long.
#[derive(Debug)]
pub(crate) struct Company {
    parallel_weight_min: usize,
    turns: std::sync::Mutex<Turns>,
    /// Told whenever a member's call ends.
    ended: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Turns {
    /// Members' calls in flight.
    running: usize,
    /// Members waiting for those to end.
    waiting: usize,
}

impl Turns {
    /// Whether a member may start its call now (`full`: it has enough waiting to run beside
    /// others; `waited`: it is counted among those waiting), counting the call as running if so,
    /// else the member as waiting. One that has not waited yields to one that has.
    fn take(&mut self, full: bool, waited: bool) -> bool {
        let go = full || (self.running == 0 && (waited || self.waiting == 0));
        if go {
            self.running += 1;
            self.waiting -= usize::from(waited);
        } else if !waited {
            self.waiting += 1;
        }
        go
    }
}

impl Company {
    /// `parallel_weight_min` 0 or 1: members never wait for each other.
    pub(crate) fn new(parallel_weight_min: usize) -> Arc<Company> {
        Arc::new(Company {
            parallel_weight_min,
            turns: std::sync::Mutex::new(Turns::default()),
            ended: tokio::sync::Notify::new(),
        })
    }

    fn turns(&self) -> std::sync::MutexGuard<'_, Turns> {
        self.turns.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A member's call in flight, counted in its [`Company`] until dropped.
struct Running(Arc<Company>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.turns().running -= 1;
        self.0.ended.notify_waiters();
    }
}

/// Tuning of one batcher.
#[derive(Clone, Debug)]
pub(crate) struct BatchSettings {
    /// Calls of this kind in flight at once.
    pub(crate) slots: usize,
    /// Requests fused into one call at most (`BATCH_REQUESTS_MAX`).
    pub(crate) requests_max: usize,
    /// Total [`BatchOp::weight`] of one call at most (`BATCH_ITEMS_MAX`); a single heavier
    /// request still goes out, alone.
    pub(crate) items_max: usize,
    /// Total [`BatchOp::bytes`] of one call at most (`BATCH_BYTES_MAX`); a single larger
    /// request still goes out, alone.
    pub(crate) bytes_max: usize,
    /// Wait for more requests before sending, once a slot is free (`BATCH_HOLD_US`; pops
    /// `POP_HOLD_US`).
    pub(crate) hold: Duration,
    /// Which calls wait `hold`.
    pub(crate) hold_rule: HoldRule,
    /// The batchers this one defers small calls to, its own other slots included: push lanes
    /// (`PUSH_PARALLEL_ITEMS_MIN`), the ack calls (`ACK_PARALLEL_ITEMS_MIN`).
    pub(crate) company: Option<Arc<Company>>,
}

/// Which calls of a batcher wait its `hold` for company.
#[derive(Clone, Copy, Debug)]
pub(crate) enum HoldRule {
    /// Every call (the tests of the hold itself).
    #[cfg(test)]
    Every,
    /// A call whose first request is alone, while requests come on average at least this often
    /// (`BATCH_HOLD_GAP_US`) and recent such waits found company ([`Pace`]): pushes, acks and
    /// lease extensions. A call with others waiting goes at once.
    Lone { busy_gap: Duration },
    /// Every call whose first request has others waiting (under load a held pop call claims
    /// more messages per partition, whether or not more requests join it), and a lone request
    /// while recent such waits found company ([`Pace`]), at any pace: pops.
    Gather,
}

struct Job<O: BatchOp> {
    request: O::Request,
    reply: oneshot::Sender<Result<O::Response, DbError>>,
    /// When it was submitted.
    at: Instant,
}

/// Whether a batcher's lone requests should wait for company: while its requests come busily
/// ([`HoldRule::Lone`]) and its recent holds found company. A call with others waiting behind its
/// first request goes at once, or always waits ([`HoldRule::Gather`]); only lone holds count.
///
/// The pace is a moving average of the gaps between submissions, over about the last eight; a gap
/// counts as at most eight times the busy gap, so that after a silence a few quick requests make
/// the batcher busy again. The payoff is the share of recent holds (about the last eight) during
/// which another request came. A client that sends its next request only after the answer to the
/// last one can look busy, yet never finds company: once the payoff falls below
/// [`Pace::PAYOFF_MIN`], a lone request waits only as a probe, to learn whether holding pays
/// again: the [`Pace::PROBE_EVERY`]th one, then twice as many after each probe that found no
/// company (up to [`Pace::PROBE_EVERY_MAX`]), and [`Pace::PROBE_EVERY`] again once one did.
#[derive(Debug)]
struct Pace {
    /// [`HoldRule::Lone`] or [`HoldRule::Gather`].
    rule: HoldRule,
    average: Duration,
    last: Option<Instant>,
    payoff: f64,
    /// Lone requests of a busy batcher sent at once since the last probe.
    skipped: u32,
    /// The lone request that is the next probe, counting from the last one.
    probe_every: u32,
}

impl Pace {
    const PAYOFF_MIN: f64 = 0.125;
    const PROBE_EVERY: u32 = 16;
    const PROBE_EVERY_MAX: u32 = 1024;

    /// The pace of a batcher with `rule`, if it keeps one.
    fn of(rule: HoldRule) -> Option<Pace> {
        match rule {
            #[cfg(test)]
            HoldRule::Every => None,
            HoldRule::Lone { .. } | HoldRule::Gather => Some(Pace::new(rule)),
        }
    }

    fn new(rule: HoldRule) -> Pace {
        Pace {
            rule,
            average: match rule {
                HoldRule::Lone { busy_gap } => busy_gap.saturating_mul(8),
                _ => Duration::ZERO,
            },
            last: None,
            payoff: 0.0,
            skipped: 0,
            probe_every: Pace::PROBE_EVERY,
        }
    }

    fn arrived(&mut self, at: Instant) {
        let HoldRule::Lone { busy_gap } = self.rule else {
            return;
        };
        if let Some(last) = self.last {
            let gap = at
                .saturating_duration_since(last)
                .min(busy_gap.saturating_mul(8));
            self.average = self.average - self.average / 8 + gap / 8;
        }
        self.last = Some(self.last.map_or(at, |last| last.max(at)));
    }

    fn busy(&self) -> bool {
        match self.rule {
            HoldRule::Lone { busy_gap } => self.average < busy_gap,
            _ => true,
        }
    }

    /// Whether a call's first request, `alone` if nothing else waits, should wait for company
    /// (then [`Pace::held`] tells how that went).
    fn holds(&mut self, alone: bool) -> bool {
        if !alone {
            return matches!(self.rule, HoldRule::Gather);
        }
        if !self.busy() {
            return false;
        }
        if self.payoff >= Pace::PAYOFF_MIN {
            return true;
        }
        self.skipped += 1;
        let probe = self.skipped >= self.probe_every;
        if probe {
            self.skipped = 0;
        }
        probe
    }

    /// Counts a hold, and whether another request came during it.
    fn held(&mut self, company: bool) {
        self.payoff += (f64::from(u8::from(company)) - self.payoff) / 8.0;
        self.probe_every = if company {
            Pace::PROBE_EVERY
        } else if self.payoff < Pace::PAYOFF_MIN {
            (self.probe_every * 2).min(Pace::PROBE_EVERY_MAX)
        } else {
            self.probe_every
        };
    }
}

/// A dispatcher's end of its channel, keeping the [`Pace`] of what it receives.
struct Inbox<O: BatchOp> {
    receiver: mpsc::UnboundedReceiver<Job<O>>,
    pace: Option<Pace>,
}

impl<O: BatchOp> Inbox<O> {
    fn received(&mut self, job: Job<O>) -> Job<O> {
        if let Some(pace) = &mut self.pace {
            pace.arrived(job.at);
        }
        job
    }

    async fn recv(&mut self) -> Option<Job<O>> {
        let job = self.receiver.recv().await?;
        Some(self.received(job))
    }

    fn try_recv(&mut self) -> Option<Job<O>> {
        let job = self.receiver.try_recv().ok()?;
        Some(self.received(job))
    }

    /// Whether a call that has its first request should wait `hold` for company (always without
    /// a [`Pace`], else as it says), and if so whether that request is alone.
    fn holds(&mut self) -> Option<bool> {
        let alone = self.receiver.is_empty();
        self.pace
            .as_mut()
            .is_none_or(|pace| pace.holds(alone))
            .then_some(alone)
    }

    /// Tells the [`Pace`] how a hold went.
    fn held(&mut self, company: bool) {
        if let Some(pace) = &mut self.pace {
            pace.held(company);
        }
    }
}

/// The submitting side of one operation kind's batcher.
pub(crate) struct Batcher<O: BatchOp> {
    sender: mpsc::UnboundedSender<Job<O>>,
}

impl<O: BatchOp> Batcher<O> {
    /// Starts the dispatcher task; its calls are counted under `op` = [`BatchOp::NAME`].
    pub(crate) fn start(
        op: Arc<O>,
        executor: O::Executor,
        settings: BatchSettings,
        metrics: &Metrics,
    ) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        let calls = metrics.db_calls(O::NAME);
        tokio::spawn(dispatch(op, executor, settings, calls, receiver));
        Batcher { sender }
    }

    /// Queues a request and waits for its answer. Dropping the future abandons the request: if it
    /// was not sent yet it never will be; if it was, [`BatchOp::abandoned`] gets the answer.
    ///
    /// # Errors
    /// The [`DbError`] of the call that carried the request.
    pub(crate) async fn submit(&self, request: O::Request) -> Result<O::Response, DbError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Job {
                request,
                reply,
                at: Instant::now(),
            })
            .map_err(|_| DbError::Unavailable("broker is shutting down".to_owned()))?;
        answer
            .await
            .map_err(|_| DbError::Internal(format!("{} batch dropped the request", O::NAME)))?
    }
}

async fn dispatch<O: BatchOp>(
    op: Arc<O>,
    executor: O::Executor,
    settings: BatchSettings,
    calls: DbCallMetrics,
    receiver: mpsc::UnboundedReceiver<Job<O>>,
) {
    let slots = Arc::new(Semaphore::new(settings.slots.max(1)));
    let mut inbox = Inbox {
        receiver,
        pace: Pace::of(settings.hold_rule),
    };
    // A request that did not fit the previous call opens the next one.
    let mut carried: Option<Job<O>> = None;
    loop {
        // Wait for a free slot first: while all are busy, requests pile up and fuse.
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let first = match carried.take() {
            Some(job) => job,
            None => match inbox.recv().await {
                Some(job) => job,
                None => return,
            },
        };
        let held = if settings.hold.is_zero() {
            None
        } else {
            inbox.holds()
        };
        if let Some(alone) = held {
            calls.held();
            tokio::time::sleep(settings.hold).await;
            // How a lone request's hold went: whether another came during it.
            if alone {
                inbox.held(!inbox.receiver.is_empty());
            }
        }
        let mut weight = O::weight(&first.request);
        let mut bytes = O::bytes(&first.request);
        let mut jobs = vec![first];
        while jobs.len() < settings.requests_max.max(1) {
            let Some(job) = inbox.try_recv() else {
                break;
            };
            let (job_weight, job_bytes) = (O::weight(&job.request), O::bytes(&job.request));
            if weight + job_weight > settings.items_max || bytes + job_bytes > settings.bytes_max {
                carried = Some(job);
                break;
            }
            weight += job_weight;
            bytes += job_bytes;
            jobs.push(job);
        }
        let mut running = None;
        if let Some(company) = &settings.company {
            take_turn(
                company,
                &settings,
                &mut inbox,
                &mut jobs,
                (&mut weight, &mut bytes),
                &mut carried,
            )
            .await;
            running = Some(Running(company.clone()));
        }
        // Requesters that already left need no database work.
        jobs.retain(|job| !job.reply.is_closed());
        if jobs.is_empty() {
            continue;
        }
        tokio::spawn(run_batch(
            op.clone(),
            executor.clone(),
            calls.clone(),
            jobs,
            // The call ends for its company before the slot frees.
            (running, permit),
        ));
    }
}

/// Waits until `jobs` may go out as a call of a member of `company`, and counts that call as
/// running: at once when no other member's call runs, when `jobs` weigh at least
/// `parallel_weight_min` or fill a call; otherwise once the calls running have ended and no
/// member that waited longer is left to go first. Meanwhile takes the requests that arrive into
/// `jobs` (up to the call's caps; the first that does not fit goes to `carried`, and the call goes
/// out, as it does when the channel closes).
async fn take_turn<O: BatchOp>(
    company: &Company,
    settings: &BatchSettings,
    inbox: &mut Inbox<O>,
    jobs: &mut Vec<Job<O>>,
    (weight, bytes): (&mut usize, &mut usize),
    carried: &mut Option<Job<O>>,
) {
    let mut waiting = false;
    let mut open = true;
    loop {
        // Registered before the check, so a call that ends between the two is not missed.
        let ended = company.ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        let full = !open
            || carried.is_some()
            || *weight >= company.parallel_weight_min
            || jobs.len() >= settings.requests_max.max(1);
        if company.turns().take(full, waiting) {
            return;
        }
        waiting = true;
        tokio::select! {
            () = &mut ended => {}
            job = inbox.recv() => match job {
                None => open = false,
                Some(job) => {
                    let (job_weight, job_bytes) =
                        (O::weight(&job.request), O::bytes(&job.request));
                    if *weight + job_weight > settings.items_max
                        || *bytes + job_bytes > settings.bytes_max
                    {
                        *carried = Some(job);
                    } else {
                        *weight += job_weight;
                        *bytes += job_bytes;
                        jobs.push(job);
                    }
                }
            },
        }
    }
}

async fn run_batch<O: BatchOp>(
    op: Arc<O>,
    executor: O::Executor,
    calls: DbCallMetrics,
    jobs: Vec<Job<O>>,
    _held: (Option<Running>, OwnedSemaphorePermit),
) {
    let span = tracing::info_span!("batch", op = O::NAME, requests = jobs.len());
    async move {
        let (requests, replies): (Vec<_>, Vec<_>) =
            jobs.into_iter().map(|j| (j.request, j.reply)).unzip();
        let refs: Vec<&O::Request> = requests.iter().collect();
        let started = std::time::Instant::now();
        let outcome = call_with_retries(&*op, &executor, &calls, &refs).await;
        tracing::debug!(
            elapsed_us = started.elapsed().as_micros() as u64,
            ok = outcome.is_ok(),
            "batch done"
        );
        match outcome {
            Ok(responses) => deliver(&*op, &executor, replies, responses).await,
            Err(error) if error.is_isolatable() && refs.len() > 1 => {
                tracing::warn!(%error, "fused call failed; running its requests one by one");
                isolate(&*op, &executor, &calls, &refs, replies).await;
            }
            Err(error) => {
                if !matches!(error, DbError::Unavailable(_) | DbError::Timeout(_)) {
                    tracing::error!(%error, "batch failed");
                }
                for reply in replies {
                    let _ = reply.send(Err(error.clone()));
                }
            }
        }
    }
    .instrument(span)
    .await
}

async fn call_with_retries<O: BatchOp>(
    op: &O,
    executor: &O::Executor,
    calls: &DbCallMetrics,
    requests: &[&O::Request],
) -> Result<Vec<O::Response>, DbError> {
    let responses = repeating_conflicts(O::NAME, calls, requests.len(), succeeded, || {
        op.call(executor, requests)
    })
    .await?;
    if responses.len() != requests.len() {
        return Err(DbError::Internal(format!(
            "{} returned {} answers for {} requests",
            O::NAME,
            responses.len(),
            requests.len()
        )));
    }
    Ok(responses)
}

/// Re-runs each request of a failed fused call on its own, so one bad request never fails its
/// neighbours (http-api.md §5.5).
async fn isolate<O: BatchOp>(
    op: &O,
    executor: &O::Executor,
    calls: &DbCallMetrics,
    requests: &[&O::Request],
    replies: Vec<oneshot::Sender<Result<O::Response, DbError>>>,
) {
    let calls = requests
        .iter()
        .map(|request| call_with_retries(op, executor, calls, std::slice::from_ref(request)));
    let outcomes = futures::future::join_all(calls).await;
    let mut abandoned = Vec::new();
    for (outcome, reply) in outcomes.into_iter().zip(replies) {
        let answer = outcome.and_then(|mut responses| {
            responses
                .pop()
                .ok_or_else(|| DbError::Internal("no answer".to_owned()))
        });
        if let Err(error) = &answer {
            tracing::warn!(%error, "request failed on its own");
        }
        if let Err(Ok(response)) = reply.send(answer) {
            abandoned.push(response);
        }
    }
    if !abandoned.is_empty() {
        op.abandoned(executor, abandoned).await;
    }
}

async fn deliver<O: BatchOp>(
    op: &O,
    executor: &O::Executor,
    replies: Vec<oneshot::Sender<Result<O::Response, DbError>>>,
    responses: Vec<O::Response>,
) {
    let mut abandoned = Vec::new();
    for (reply, response) in replies.into_iter().zip(responses) {
        if let Err(Ok(response)) = reply.send(Ok(response)) {
            abandoned.push(response);
        }
    }
    if !abandoned.is_empty() {
        op.abandoned(executor, abandoned).await;
    }
}

#[cfg(test)]
mod tests;
