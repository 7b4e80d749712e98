//! The named scenarios (their shapes) and what their messages carry; [`crate::lanes`] makes a
//! producer's requests from them.

use std::time::Duration;

use serde_json::{json, Value};

/// One message to push.
#[derive(Clone, Debug)]
pub struct Item {
    /// Queue name.
    pub queue: String,
    /// Partition name.
    pub partition: String,
    /// Payload (JSON object text).
    pub payload: String,
}

/// A consumer group of a scenario.
#[derive(Clone, Debug)]
pub struct GroupPlan {
    /// Group name; None: queue mode.
    pub name: Option<String>,
    /// Consumer connections.
    pub consumers: usize,
    /// Handler time per message.
    pub handler_delay: Duration,
    /// Share of deliveries failed on purpose (ack `failed`).
    pub fail_ratio: f64,
    /// Share of messages forwarded to the downstream queue through a transaction.
    pub forward_ratio: f64,
}

impl GroupPlan {
    /// A group of `consumers` without handler delay or failures.
    pub fn named(name: &str, consumers: usize) -> GroupPlan {
        GroupPlan {
            name: Some(name.to_owned()),
            consumers,
            handler_delay: Duration::ZERO,
            fail_ratio: 0.0,
            forward_ratio: 0.0,
        }
    }

    /// The group's key in the ledger (`__QUEUE_MODE__` for queue mode).
    pub fn key(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| "__QUEUE_MODE__".to_owned())
    }
}

/// Which partitions a producer's items go to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Layout {
    /// Each producer owns every `producers`-th partition and cycles through its own: a request
    /// of n items touches min(n, owned) partitions ("narrow").
    Owned,
    /// Each request's items go to distinct partitions drawn at random from all of them; producers
    /// share partitions.
    Spread,
    /// Each item's partition is drawn at random from all of them.
    Random,
    /// Every item goes to partition `p0` (set `partitions` to 1).
    Hot,
}

/// What a message's payload looks like. Both carry the lane and the sequence in it, which the
/// delivery and storage checks read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Payload {
    /// `{"l":lane,"s":seq,"t":sent_us,"x":poison,"pad":"xxx…"}` with `pad` bytes of padding;
    /// `t` gives the end-to-end latency.
    Tagged,
    /// `{"message":"Hello World","n":N}`, N = lane × 2^32 + seq.
    Hello,
}

/// Retention running while producers push (the `steady-state` scenario).
#[derive(Clone, Copy, Debug)]
pub struct Retention {
    /// The stored backlog's `created_at` spans this much time up to the instant it was written;
    /// the queue's `retentionSeconds` is set so that deletion starts at the oldest message when
    /// producers start, and deletes `stored / span` messages per second from then on.
    pub span: Duration,
    /// How often retention runs (the broker's `RETENTION_INTERVAL`; the SQL targets' loop).
    pub interval: Duration,
    /// Messages per retention transaction (`RETENTION_BATCH_SIZE`).
    pub batch: u32,
}

/// A scenario's shape.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Scenario name.
    pub name: String,
    /// One line for `list`.
    pub description: String,
    /// Queues (`bench`, or `bench-0` …).
    pub queues: usize,
    /// Partitions per queue.
    pub partitions: usize,
    /// Producer connections.
    pub producers: usize,
    /// Messages per push request.
    pub items_per_push: usize,
    /// Which partitions the items of a request go to.
    pub layout: Layout,
    /// Payload format.
    pub payload: Payload,
    /// Padding bytes of a `Tagged` payload.
    pub pad: usize,
    /// Open-loop offered rate (messages/s, all producers); None: closed loop.
    pub rate: Option<f64>,
    /// Consumer groups.
    pub groups: Vec<GroupPlan>,
    /// Pop `batch`.
    pub pop_batch: u32,
    /// Pop `partitions`.
    pub pop_partitions: u32,
    /// autoAck pops.
    pub auto_ack: bool,
    /// Messages pushed (through the target) before the measured interval (the pop+ack scenario).
    pub prefill: u64,
    /// Messages written straight into the tables, set-based, before producers start.
    pub stored: u64,
    /// Retention while producers push.
    pub retention: Option<Retention>,
    /// Share of poison messages (always failed: they must reach the dead-letter queue).
    pub poison_ratio: f64,
    /// Queue options sent with `configure`.
    pub queue_options: Value,
    /// Measured interval.
    pub duration: Duration,
    /// Unmeasured start.
    pub warmup: Duration,
    /// Longest wait for consumers to catch up after producers stop.
    pub drain: Duration,
    /// Stop producing after this many messages.
    pub messages: Option<u64>,
    /// Push-only: verify what the database holds instead of deliveries.
    pub verify_db: bool,
    /// Queue names start with this (unique per run, so runs can share a database).
    pub tag: String,
}

/// Every scenario `list` shows, in order.
const CATALOGUE: &[&str] = &[
    "bp-1",
    "bp-10",
    "bp-100",
    "bp-1000",
    "bp-100-spread",
    "bp-random-100k",
    "bp-hot",
    "bp-10kb",
    "q-1",
    "q-10",
    "steady-state",
    "cg-5",
    "cg-10",
    "hi-part-10",
    "hi-part-100",
    "hi-part-1k",
    "hi-part-10k",
    "hi-part-100k",
    "pop-ack",
    "mixed",
    "e2e",
    "e2e-ack",
    "app",
    "app-overload",
    "soak",
];

/// The matrix: every shape but the partition sweep and the soak.
pub const MATRIX: &[&str] = &[
    "bp-1",
    "bp-10",
    "bp-100",
    "bp-1000",
    "bp-100-spread",
    "bp-random-100k",
    "bp-hot",
    "bp-10kb",
    "q-1",
    "q-10",
    "steady-state",
    "cg-5",
    "cg-10",
    "pop-ack",
    "mixed",
    "e2e",
    "app",
    "app-overload",
];

/// The partition sweep, in order.
pub const SWEEP: &[&str] = &[
    "hi-part-10",
    "hi-part-100",
    "hi-part-1k",
    "hi-part-10k",
    "hi-part-100k",
];

impl Plan {
    fn base(name: &str, description: &str) -> Plan {
        Plan {
            name: name.to_owned(),
            description: description.to_owned(),
            queues: 1,
            partitions: 1_000,
            producers: 50,
            items_per_push: 1,
            layout: Layout::Owned,
            payload: Payload::Tagged,
            pad: 60,
            rate: None,
            groups: Vec::new(),
            pop_batch: 100,
            pop_partitions: 10,
            auto_ack: true,
            prefill: 0,
            stored: 0,
            retention: None,
            poison_ratio: 0.0,
            queue_options: json!({}),
            duration: Duration::from_secs(30),
            warmup: Duration::from_secs(3),
            drain: Duration::from_secs(60),
            messages: None,
            verify_db: false,
            tag: "bench".to_owned(),
        }
    }

    /// A push-only shape (the storage check instead of a delivery check).
    fn push_only(name: &str, description: &str, items: usize) -> Plan {
        Plan {
            items_per_push: items,
            verify_db: true,
            ..Plan::base(name, description)
        }
    }

    /// The named scenario, or None.
    pub fn named(name: &str) -> Option<Plan> {
        if let Some(plan) = Plan::push_shape(name) {
            return Some(plan);
        }
        let plan = match name {
            "cg-5" | "cg-10" => {
                let g: usize = name[3..].parse().ok()?;
                Plan {
                    producers: 10,
                    items_per_push: 10,
                    groups: (0..g).map(|i| GroupPlan::named(&format!("g{i}"), 2)).collect(),
                    ..Plan::base(name, &format!("fan-out: 10 producers x 10 messages, {g} consumer groups draining with pop batch 100 (autoAck)"))
                }
            }
            "pop-ack" => Plan {
                producers: 10,
                items_per_push: 1_000,
                prefill: 1_000_000,
                auto_ack: false,
                groups: vec![GroupPlan::named("workers", 20)],
                ..Plan::base(name, "pop + explicit ack/batch: a 1 000 000-message backlog over 1 000 partitions, 20 consumers, batch 100")
            },
            "mixed" => Plan {
                producers: 20,
                items_per_push: 10,
                auto_ack: false,
                groups: vec![GroupPlan::named("workers", 20)],
                ..Plan::base(name, "push, pop and ack at once: 20 producers x 10 messages (closed loop), 20 consumers popping batch 100 over 10 partitions and acking with ack/batch, 1 000 partitions")
            },
            "e2e" => Plan {
                producers: 20,
                rate: Some(1_000.0),
                partitions: 100,
                pop_batch: 10,
                pop_partitions: 1,
                groups: vec![GroupPlan::named("e2e", 10)],
                ..Plan::base(name, "end-to-end latency: 1 000 msg/s offered (open loop), 1 message per push, 10 long-polling consumers")
            },
            "e2e-ack" => Plan {
                producers: 20,
                rate: Some(1_000.0),
                partitions: 100,
                pop_batch: 1,
                pop_partitions: 1,
                auto_ack: false,
                groups: vec![GroupPlan::named("e2e", 10)],
                ..Plan::base(name, "end-to-end latency as Queen's clients consume by default: 1 000 msg/s offered (open loop), 1 message per push, 10 long-polling consumers each taking 1 message under a lease and acknowledging it")
            },
            "app" | "app-overload" => Plan::app(name == "app-overload"),
            "soak" => Plan {
                producers: 10,
                rate: Some(500.0),
                partitions: 1_000,
                pop_batch: 50,
                pop_partitions: 5,
                auto_ack: false,
                queue_options: json!({"retryLimit": 2, "leaseTime": 30}),
                poison_ratio: 0.001,
                groups: vec![
                    GroupPlan { fail_ratio: 0.01, ..GroupPlan::named("billing", 4) },
                    GroupPlan::named("audit", 4),
                ],
                duration: Duration::from_secs(3_600),
                ..Plan::base(name, "soak: 500 msg/s mixed push, pop and ack with failures for hours; per-interval throughput, latency, memory and database size")
            },
            _ => Plan::hi_part(name)?,
        };
        Some(plan)
    }

    /// The push-only shapes, or None.
    fn push_shape(name: &str) -> Option<Plan> {
        let plan = match name {
            "bp-1" | "bp-10" | "bp-100" | "bp-1000" => {
                let n: usize = name[3..].parse().ok()?;
                let narrow = if n >= 100 { " (narrow: each producer owns 20 partitions)" } else { "" };
                Plan::push_only(name, &format!("push only: 50 connections, {n} message(s) per request, 1 000 partitions{narrow}"), n)
            }
            "bp-100-spread" => Plan {
                layout: Layout::Spread,
                payload: Payload::Hello,
                ..Plan::push_only(name, "push only: 50 connections, 100 messages per request over 100 different partitions drawn from 1 000 (payload {\"message\":\"Hello World\",\"n\":N})", 100)
            },
            "bp-random-100k" => Plan {
                layout: Layout::Random,
                payload: Payload::Hello,
                partitions: 100_000,
                // The first pushes create most of the 100 000 partitions: not measured.
                warmup: Duration::from_secs(10),
                ..Plan::push_only(name, "push only: 50 connections, 100 messages per request, each to a partition drawn at random from 100 000", 100)
            },
            "bp-hot" => Plan {
                layout: Layout::Hot,
                payload: Payload::Hello,
                partitions: 1,
                ..Plan::push_only(name, "push only: one hot partition, 50 connections, 10 messages per request", 10)
            },
            "bp-10kb" => Plan {
                pad: 10_180,
                ..Plan::push_only(name, "push only: 50 connections, 10 messages of about 10 KB per request, 1 000 partitions", 10)
            },
            "q-1" | "q-10" => {
                let q: usize = name[2..].parse().ok()?;
                Plan {
                    queues: q,
                    partitions: 1_000 / q,
                    ..Plan::push_only(name, &format!("push only: 10 messages per request spread over {q} queue(s), 1 000 partitions in all"), 10)
                }
            }
            "steady-state" => Plan {
                stored: 10_000_000,
                retention: Some(Retention {
                    span: Duration::from_secs(300),
                    interval: Duration::from_secs(1),
                    batch: 1_000,
                }),
                ..Plan::push_only(name, "steady state: 10 000 000 messages stored over 1 000 partitions, retention deleting the oldest (about stored/300 s per second, every second) while 50 connections push 100 messages per request", 100)
            },
            _ => return None,
        };
        Some(plan)
    }

    fn app(overload: bool) -> Plan {
        let name = if overload { "app-overload" } else { "app" };
        let worker = |name: &str, forward: f64| GroupPlan {
            name: Some(name.to_owned()),
            consumers: 8,
            handler_delay: Duration::from_micros(500),
            fail_ratio: 0.01,
            forward_ratio: forward,
        };
        Plan {
            producers: 20,
            rate: Some(if overload { 6_000.0 } else { 1_000.0 }),
            partitions: 200,
            pop_batch: 20,
            pop_partitions: 4,
            auto_ack: false,
            poison_ratio: 0.001,
            queue_options: json!({"retryLimit": 2, "leaseTime": 30}),
            groups: vec![worker("billing", 0.05), worker("audit", 0.0)],
            drain: Duration::from_secs(if overload { 180 } else { 60 }),
            ..Plan::base(
                name,
                if overload {
                    "application overload: 6 000 msg/s offered, above what two groups with handler delay consume; then the backlog must drain with nothing lost"
                } else {
                    "application: 1 000 msg/s, two groups with 0.5 ms handlers, 1% transient failures, 0.1% poison to the DLQ, 5% of one group forwarded by transaction"
                },
            )
        }
    }

    fn hi_part(name: &str) -> Option<Plan> {
        let n = name.strip_prefix("hi-part-")?;
        let partitions: usize = match n {
            "1k" => 1_000,
            "10k" => 10_000,
            "100k" => 100_000,
            other => other.parse().ok()?,
        };
        Some(Plan {
            partitions,
            producers: 500,
            groups: vec![GroupPlan::named("drain", 20)],
            pop_partitions: 100,
            // The first pushes create the partitions: let that finish before measuring.
            warmup: Duration::from_secs(if partitions >= 10_000 { 15 } else { 5 }),
            ..Plan::base(name, &format!("partition scaling: {partitions} partitions, 500 connections x 1 message, 20 consumers draining (batch 100, 100 partitions per pop)"))
        })
    }

    /// Every named scenario, for `list`.
    pub fn catalogue() -> Vec<Plan> {
        CATALOGUE.iter().filter_map(|n| Plan::named(n)).collect()
    }

    /// Whether the scenario only pushes (no consumer groups, no backlog pushed for consumers).
    pub fn is_push_only(&self) -> bool {
        self.groups.is_empty() && self.prefill == 0
    }

    /// Whether the `ceiling` target can run this scenario: it models push (and retention) only.
    pub fn ceiling_applies(&self) -> bool {
        self.is_push_only()
    }

    /// Queue `q`'s name.
    pub fn queue(&self, q: usize) -> String {
        if self.queues == 1 {
            self.tag.clone()
        } else {
            format!("{}-{q}", self.tag)
        }
    }

    /// The downstream queue of forwarding groups.
    pub fn downstream(&self) -> String {
        format!("{}-out", self.tag)
    }

    /// Partitions over all queues.
    pub fn lanes_total(&self) -> usize {
        self.queues * self.partitions
    }

    /// The message for `seq` of `lane`, written to `slot` (queue × partition); `pad` is the
    /// padding of a `Tagged` payload.
    pub fn item(
        &self,
        slot: usize,
        lane: u32,
        seq: u64,
        sent_us: u64,
        poison: bool,
        pad: &str,
    ) -> Item {
        let payload = match self.payload {
            Payload::Tagged => format!(
                "{{\"l\":{lane},\"s\":{seq},\"t\":{sent_us},\"x\":{poison},\"pad\":\"{pad}\"}}"
            ),
            Payload::Hello => format!(
                "{{\"message\":\"Hello World\",\"n\":{}}}",
                (u64::from(lane) << 32) | seq
            ),
        };
        Item {
            queue: self.queue(slot / self.partitions),
            partition: format!("p{}", slot % self.partitions),
            payload,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_in_the_lists_exists() {
        for name in CATALOGUE.iter().chain(MATRIX).chain(SWEEP) {
            assert!(Plan::named(name).is_some(), "{name}");
        }
        assert!(Plan::named("bp-7").is_none());
    }

    #[test]
    fn payloads() {
        let big = Plan::named("bp-10kb").expect("plan");
        let item = big.item(5, 5, 0, 1, false, &"x".repeat(big.pad));
        assert!((10_000..10_500).contains(&item.payload.len()));
        let hello = Plan::named("bp-hot").expect("plan");
        let item = hello.item(0, 3, 9, 1, false, "");
        assert_eq!(
            item.payload,
            format!("{{\"message\":\"Hello World\",\"n\":{}}}", (3u64 << 32) | 9)
        );
    }
}
