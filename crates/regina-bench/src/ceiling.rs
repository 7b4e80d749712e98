//! The `ceiling` target: what PostgreSQL itself costs for the rows a push stores, with no queue
//! logic. Its tables live in schema `bench_ceiling` of the benchmark database and are copies of
//! Regina's (`create table … (like regina.… including all)` plus the same storage parameters), so
//! they have the same columns, types, keys and indexes as `regina.messages` and
//! `regina.partitions` whatever the migrations make of those.
//!
//! A push is one statement (one transaction): lock the partitions written in id order, add the
//! number of items to each one's `next_seq` (`update … returning`), and insert the items as rows
//! numbered from the old `next_seq`, in item order. Partition ids come from a cache the harness
//! fills when a partition is first pushed to (creating it), so there is no name lookup; there is
//! no deduplication lookup, no capacity or encryption check, no ready set and no notification.
//! The broker and `raw` targets are measured against this.

use std::collections::HashMap;
use std::sync::Mutex;

use anyhow::{bail, Context as _};
use tokio_postgres::{Client, Statement};
use uuid::Uuid;

use crate::plan::Item;

/// The schema of the ceiling's tables.
pub const SCHEMA: &str = "bench_ceiling";

/// Creates the ceiling's tables when missing. `queues` holds only what a name lookup needs.
const INSTALL: &str = "
create schema if not exists bench_ceiling;
create table if not exists bench_ceiling.queues (
    id   bigint generated always as identity primary key,
    name text not null unique
);
create table if not exists bench_ceiling.partitions (like regina.partitions including all);
create table if not exists bench_ceiling.messages (like regina.messages including all);
do $$
declare
    v_table text;
    v_options text[];
begin
    -- `like` copies columns, defaults, identity, constraints and indexes, not storage parameters
    -- (fillfactor, autovacuum settings): copy those too.
    foreach v_table in array array['partitions', 'messages'] loop
        select c.reloptions into v_options from pg_class c
        where c.oid = ('regina.' || v_table)::regclass;
        if v_options is not null then
            execute format('alter table bench_ceiling.%I set (%s)', v_table,
                           array_to_string(v_options, ', '));
        end if;
    end loop;
end
$$;
";

/// One push: the partitions locked in id order, their offsets moved, the rows inserted; returns
/// the rows inserted and the items given.
const PUSH: &str = "
with items as (
    select i.partition_id, i.txn, i.mid, i.payload, i.ord
    from unnest($1::bigint[], $2::text[], $3::text[], $4::text[])
         with ordinality as i(partition_id, txn, mid, payload, ord)),
counts as (select i.partition_id, count(*) as n from items i group by i.partition_id),
locked as materialized (
    select p.id, c.n from bench_ceiling.partitions p join counts c on c.partition_id = p.id
    order by p.id
    for no key update of p),
bumped as (
    update bench_ceiling.partitions p
    set next_seq = p.next_seq + l.n
    from locked l where p.id = l.id
    returning p.id, p.next_seq - l.n as base),
inserted as (
    insert into bench_ceiling.messages (partition_id, seq, id, transaction_id, created_at, payload)
    select i.partition_id,
           b.base + row_number() over (partition by i.partition_id order by i.ord) - 1,
           i.mid::uuid, i.txn, statement_timestamp(), i.payload::json
    from items i join bumped b on b.id = i.partition_id
    returning 1)
select (select count(*) from inserted), (select count(*) from items)";

/// Creates missing partitions, in (queue, name) order so concurrent creators cannot deadlock.
const ENSURE_PARTITIONS: &str = "
insert into bench_ceiling.partitions (queue_id, name)
select distinct q.id, i.part
from unnest($1::text[], $2::text[]) as i(queue, part)
join bench_ceiling.queues q on q.name = i.queue
order by q.id, i.part
on conflict do nothing";

/// The ids of named partitions.
const RESOLVE: &str = "
select q.name, p.name, p.id
from unnest($1::text[], $2::text[]) as i(queue, part)
join bench_ceiling.queues q on q.name = i.queue
join bench_ceiling.partitions p on p.queue_id = q.id and p.name = i.part";

/// One retention batch of queue `$3`: up to `$2` messages created before `$1`, oldest first in each partition
/// (created_at grows with the offset, so they are a prefix), found from each partition's oldest
/// row as Regina's retention finds them; returns how many were deleted.
const DELETE_OLD: &str = "
with doomed as (
    select d.partition_id, d.seq
    from bench_ceiling.partitions p
    cross join lateral (select m.created_at from bench_ceiling.messages m
                        where m.partition_id = p.id order by m.seq limit 1) oldest
    cross join lateral (select m.partition_id, m.seq, m.created_at from bench_ceiling.messages m
                        where m.partition_id = p.id order by m.seq limit $2) d
    where p.queue_id = (select q.id from bench_ceiling.queues q where q.name = $3)
      and oldest.created_at < $1 and d.created_at < $1
    limit $2),
deleted as (
    delete from bench_ceiling.messages m using doomed
    where m.partition_id = doomed.partition_id and m.seq = doomed.seq
    returning 1)
select count(*) from deleted";

/// Creates the ceiling's schema and tables (idempotent).
///
/// # Errors
/// The statements fail (e.g. Regina's tables are missing: the database is not migrated).
pub async fn install(client: &Client) -> anyhow::Result<()> {
    client
        .batch_execute(INSTALL)
        .await
        .context("ceiling: create schema bench_ceiling")
}

/// Registers a queue name.
///
/// # Errors
/// The insert fails.
pub async fn configure(client: &Client, queue: &str) -> anyhow::Result<()> {
    client
        .execute(
            "insert into bench_ceiling.queues (name) values ($1) on conflict (name) do nothing",
            &[&queue],
        )
        .await
        .context("ceiling: configure")?;
    Ok(())
}

/// The push statement prepared on a connection: parsed once, and planned once
/// (`plan_cache_mode = force_generic_plan` on the ceiling's connections, as Regina's push
/// function runs its statements), so a push pays for executing it only.
///
/// # Errors
/// The statement cannot be prepared.
pub async fn prepare(client: &Client) -> anyhow::Result<Statement> {
    client
        .batch_execute("set plan_cache_mode = force_generic_plan")
        .await?;
    client.prepare(PUSH).await.context("ceiling: prepare push")
}

/// Partition ids by (queue, partition name), shared by the sessions of one run. A push creates
/// the partitions it names that are not known yet (the first push to a partition pays for
/// creating it, as with Regina) and learns their ids; after that, pushes carry ids, so the
/// ceiling has no name lookup on its path.
#[derive(Default)]
pub struct Known {
    partitions: Mutex<HashMap<(String, String), i64>>,
}

impl Known {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), i64>> {
        self.partitions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn missing(&self, items: &[Item]) -> Vec<(String, String)> {
        let known = self.lock();
        let mut out: Vec<(String, String)> = items
            .iter()
            .map(|i| (i.queue.clone(), i.partition.clone()))
            .filter(|k| !known.contains_key(k))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Creates and resolves `missing`.
    async fn learn(&self, client: &Client, missing: &[(String, String)]) -> anyhow::Result<()> {
        let (queues, parts): (Vec<&str>, Vec<&str>) = missing
            .iter()
            .map(|(q, p)| (q.as_str(), p.as_str()))
            .unzip();
        client
            .execute(ENSURE_PARTITIONS, &[&queues, &parts])
            .await
            .context("ceiling: create partitions")?;
        let rows = client
            .query(RESOLVE, &[&queues, &parts])
            .await
            .context("ceiling: resolve partitions")?;
        let mut known = self.lock();
        for row in rows {
            known.insert((row.get(0), row.get(1)), row.get(2));
        }
        Ok(())
    }

    fn ids(&self, items: &[Item]) -> anyhow::Result<Vec<i64>> {
        let known = self.lock();
        items
            .iter()
            .map(|i| {
                known
                    .get(&(i.queue.clone(), i.partition.clone()))
                    .copied()
                    .with_context(|| format!("ceiling: no partition {}/{}", i.queue, i.partition))
            })
            .collect()
    }
}

/// Pushes `items` in one statement (`statement`: [`prepare`]d on `client`); returns how many rows
/// were stored.
///
/// # Errors
/// The statement fails, or a partition vanished (nothing else deletes them).
pub async fn push(
    client: &Client,
    statement: &Statement,
    known: &Known,
    items: &[Item],
) -> anyhow::Result<usize> {
    let missing = known.missing(items);
    if !missing.is_empty() {
        known.learn(client, &missing).await?;
    }
    let partitions = known.ids(items)?;
    let n = items.len();
    let mut txns = Vec::with_capacity(n);
    let mut ids = Vec::with_capacity(n);
    let mut payloads = Vec::with_capacity(n);
    for item in items {
        txns.push(Uuid::new_v4().to_string());
        ids.push(Uuid::now_v7().to_string());
        payloads.push(item.payload.as_str());
    }
    let row = client
        .query_one(statement, &[&partitions, &txns, &ids, &payloads])
        .await
        .context("ceiling: push")?;
    let (inserted, given): (i64, i64) = (row.get(0), row.get(1));
    if inserted != given {
        bail!("ceiling push stored {inserted} of {given} items (a partition is missing)");
    }
    Ok(inserted as usize)
}

/// Deletes messages of `queue` created before `cutoff`, `batch` at a time, until a batch deletes
/// fewer; returns how many were deleted.
///
/// # Errors
/// A statement fails.
pub async fn delete_old(
    client: &Client,
    queue: &str,
    cutoff: std::time::SystemTime,
    batch: i64,
) -> anyhow::Result<u64> {
    let mut total = 0u64;
    loop {
        let row = client
            .query_one(DELETE_OLD, &[&cutoff, &batch, &queue])
            .await
            .context("ceiling: retention")?;
        let n: i64 = row.get(0);
        total += n.unsigned_abs();
        if n < batch {
            return Ok(total);
        }
    }
}
