/**
 * The conformance step language (see sdks/conformance/README.md), executed through the public API
 * of the client only.
 */

import { isDeepStrictEqual } from "node:util";
import { expect } from "vitest";
import { ReginaError, type DlqEntry, type Message, type Queue, type Regina } from "../src/index.js";
import { runStream, streamHash, type StreamTotals } from "./conformance-streams.js";

/** A step after placeholder substitution. */
export type Step = Record<string, unknown> & { op: string };

/** State of one scenario run. */
export interface Run {
  client: Regina;
  saved: Map<string, unknown[]>;
  marks: Map<string, string>;
  /** Stream metrics summed over the earlier stream steps, by `queryId`. */
  streamTotals: StreamTotals;
}

type Result = Record<string, unknown>;
type Expectation = Record<string, unknown>;
type StepFn = (run: Run, step: Step) => Promise<Result | undefined>;

const MESSAGE_KEYS = new Set(["count", "payloads", "transactionIds", "partitions", "retryCounts", "empty"]);

/** Runs one step and checks its `expect` / `expectError`. */
export async function runStep(run: Run, step: Step, label: string): Promise<void> {
  const fn = STEPS[step.op];
  if (!fn) throw new Error(`${label}: unknown op ${step.op}`);
  const expectError = step.expectError as { code: string; status?: number } | undefined;
  if (expectError) {
    const error = await fn(run, step).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error, `${label}: expected a ReginaError`).toBeInstanceOf(ReginaError);
    const typed = error as ReginaError;
    expect(typed.code, `${label}: error code`).toBe(expectError.code);
    if (expectError.status !== undefined) expect(typed.status, `${label}: error status`).toBe(expectError.status);
    return;
  }
  const result = await fn(run, step);
  const expectation = step.expect as Expectation | undefined;
  if (expectation) check(result ?? {}, expectation, label);
}

function check(result: Result, expectation: Expectation, label: string): void {
  for (const [key, expected] of Object.entries(expectation)) {
    if (MESSAGE_KEYS.has(key) && Array.isArray(result.messages)) {
      checkMessages(result.messages as Message[], key, expected, label);
    } else if (key === "contains" && Array.isArray(result.rows)) {
      const found = (result.rows as unknown[]).some((row) => matches(row, expected));
      expect(found, `${label}: contains ${JSON.stringify(expected)}`).toBe(true);
    } else if (key === "excludes" && Array.isArray(result.rows)) {
      const found = (result.rows as unknown[]).some((row) => matches(row, expected));
      expect(found, `${label}: excludes ${JSON.stringify(expected)}`).toBe(false);
    } else if (key === "transactionIds" && Array.isArray(result.transactionIdSet)) {
      expect([...(result.transactionIdSet as string[])].sort(), `${label}: transactionIds`).toEqual(
        [...(expected as string[])].sort(),
      );
    } else if ((key === "metrics" || key === "acrossRuns") && typeof result[key] === "object") {
      checkMetrics(result[key] as Record<string, number>, expected as Record<string, unknown>, `${label} ${key}`);
    } else if (key === "resultsAnyOrder" && Array.isArray(result.results)) {
      const canonical = (list: unknown[]) => list.map((item) => JSON.stringify(sortKeys(item))).sort();
      expect(canonical(result.results), `${label}: results (any order)`).toEqual(canonical(expected as unknown[]));
    } else if ((key === "success" || key === "code") && Array.isArray(result.items)) {
      const values = (result.items as Record<string, unknown>[]).map((item) => item[key]);
      expect(values.length, `${label}: ${key} of no item`).toBeGreaterThan(0);
      for (const value of values) expect(value, `${label}: ${key} of every item`).toEqual(expected);
    } else {
      expect(key in result, `${label}: the step has no result "${key}"`).toBe(true);
      expect(result[key], `${label}: ${key}`).toEqual(expected);
    }
  }
}

/** Metrics are exact unless the expectation is `{atLeast: n}`. */
function checkMetrics(metrics: Record<string, number>, expected: Record<string, unknown>, label: string): void {
  for (const [name, want] of Object.entries(expected)) {
    expect(name in metrics, `${label}: the run has no metric "${name}"`).toBe(true);
    if (typeof want === "object" && want !== null && "atLeast" in want) {
      expect(metrics[name], `${label}: metric ${name}`).toBeGreaterThanOrEqual((want as { atLeast: number }).atLeast);
    } else {
      expect(metrics[name], `${label}: metric ${name}`).toEqual(want);
    }
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

function checkMessages(messages: Message[], key: string, expected: unknown, label: string): void {
  const actual: Record<string, () => unknown> = {
    count: () => messages.length,
    payloads: () => messages.map((message) => message.data),
    transactionIds: () => messages.map((message) => message.transactionId),
    partitions: () => messages.map((message) => message.partition),
    retryCounts: () => messages.map((message) => message.retryCount),
    empty: () => messages.length === 0,
  };
  expect((actual[key] as () => unknown)(), `${label}: ${key}`).toEqual(expected);
}

/** A groups row matches `{name, queue}`; a queue row matches a queue name. */
function matches(row: unknown, expected: unknown): boolean {
  if (typeof expected === "string") return row === expected;
  const { name, queue } = expected as { name: string; queue: string };
  const group = row as { name: string; queueName: string; topics?: string[] };
  return group.name === name && (group.queueName === queue || (group.topics ?? []).includes(queue));
}

function partitionOf(step: Step): string {
  return (step.partition as string | undefined) ?? "Default";
}

function refs<T>(run: Run, step: Record<string, unknown>): T[] {
  const list = run.saved.get(step.ref as string);
  if (!list) throw new Error(`nothing saved under ${String(step.ref)}`);
  if (step.all === true) return list as T[];
  const item = list[(step.index as number | undefined) ?? 0];
  if (item === undefined) throw new Error(`${String(step.ref)} has no index ${String(step.index ?? 0)}`);
  return [item as T];
}

function save(run: Run, step: Step, items: unknown[]): void {
  if (typeof step.save === "string") run.saved.set(step.save, items);
}

type Item = { payload: unknown; transactionId?: string; traceId?: string };

function consumerOf(run: Run, step: Step): Queue {
  let queue = run.client.queue(step.queue as string);
  if (step.partition !== undefined) queue = queue.partition(step.partition as string);
  if (step.group !== undefined) queue = queue.group(step.group as string);
  if (step.batch !== undefined) queue = queue.batch(step.batch as number);
  if (step.partitions !== undefined) queue = queue.partitions(step.partitions as number);
  if (step.autoAck !== undefined) queue = queue.autoAck(step.autoAck as boolean);
  if (step.subscriptionMode !== undefined) queue = queue.subscriptionMode(step.subscriptionMode as "all" | "new");
  if (step.subscriptionFrom !== undefined) queue = queue.subscriptionFrom(step.subscriptionFrom as string);
  return queue;
}

const STEPS: Record<string, StepFn> = {
  async configure(run, step) {
    let queue = run.client.queue(step.queue as string).config((step.options ?? {}) as object);
    if (step.namespace !== undefined) queue = queue.namespace(step.namespace as string);
    if (step.task !== undefined) queue = queue.task(step.task as string);
    const result = await queue.create();
    return { created: result.created };
  },

  async deleteQueue(run, step) {
    const result = await run.client.queue(step.queue as string).delete();
    return { existed: result.existed };
  },

  async push(run, step) {
    const queue = run.client.queue(step.queue as string).partition(partitionOf(step));
    const results = await queue.push(step.items as Item[]);
    return { statuses: results.map((result) => result.status) };
  },

  async bufferedPush(run, step) {
    const queue = run.client
      .queue(step.queue as string)
      .partition(partitionOf(step))
      .buffer({ messageCount: step.messageCount as number, timeMillis: step.timeMillis as number });
    for (const item of step.items as Item[]) await queue.push([item]);
    await run.client.flush();
    return {};
  },

  async pop(run, step) {
    let queue = consumerOf(run, step);
    if (step.wait !== undefined) queue = queue.wait(step.wait as boolean);
    if (step.timeoutMs !== undefined) queue = queue.timeoutMillis(step.timeoutMs as number);
    const messages = await queue.pop();
    save(run, step, messages);
    return { messages };
  },

  async ack(run, step) {
    const group = step.group as string | undefined;
    const messages = refs<Message>(run, step).map((message) =>
      group ? { ...message, consumerGroup: group } : message,
    );
    const status = (step.status as "completed" | undefined) ?? "completed";
    const options = step.error === undefined ? {} : { error: step.error as string };
    const items = await run.client.ack(messages, status, options);
    return { items };
  },

  async renew(run, step) {
    const [message] = refs<Message>(run, step);
    const result = await run.client.renew(message as Message, { seconds: step.seconds as number | undefined });
    return { success: result.success };
  },

  async transaction(run, step) {
    const transaction = run.client.transaction();
    for (const ack of (step.acks ?? []) as { ref: string; index?: number; status?: "completed" }[]) {
      const [message] = refs<Message>(run, ack);
      transaction.ack(message as Message, ack.status ?? "completed");
    }
    for (const push of (step.pushes ?? []) as { queue: string; partition?: string; items: Item[] }[]) {
      transaction
        .queue(push.queue)
        .partition(push.partition ?? "Default")
        .push(push.items);
    }
    const result = await transaction.commit();
    return { success: result.success };
  },

  async consume(run, step) {
    const failPayloads = (step.failPayloads ?? []) as unknown[];
    const received: Message[] = [];
    const queue = consumerOf(run, { ...step, batch: step.batch ?? 1, autoAck: step.autoAck ?? false })
      .limit(step.limit as number)
      .idleMillis((step.idleMillis as number | undefined) ?? 2000)
      .each();
    await queue.consume((message) => {
      received.push(message);
      if (failPayloads.some((payload) => isDeepStrictEqual(payload, message.data))) {
        throw new Error(`conformance: payload ${JSON.stringify(message.data)} fails`);
      }
    });
    save(run, step, received);
    return { messages: received };
  },

  async dlq(run, step) {
    const query = { queue: step.queue as string, ...(step.group ? { consumerGroup: step.group as string } : {}) };
    const list = await run.client.admin.dlq(query);
    save(run, step, list.messages);
    return { count: list.messages.length, transactionIdSet: list.messages.map((entry) => entry.transactionId) };
  },

  async requeue(run, step) {
    const [entry] = refs<DlqEntry>(run, step);
    const target = step.group === undefined ? {} : { consumerGroup: step.group as string };
    await run.client.admin.requeue(entry as DlqEntry, target);
    return undefined;
  },

  async seek(run, step) {
    const target = step.toEnd === true ? { toEnd: true as const } : { timestamp: step.timestamp as string };
    await run.client.admin.seek(step.group as string, step.queue as string, target);
    return undefined;
  },

  async groups(run) {
    const page = await run.client.admin.consumerGroups();
    return { rows: page.items };
  },

  async deleteGroup(run, step) {
    const scope = step.queue === undefined ? {} : { queue: step.queue as string };
    await run.client.admin.deleteConsumerGroup(step.group as string, scope);
    return undefined;
  },

  async queues(run, step) {
    const expectation = (step.expect ?? {}) as { contains?: string; excludes?: string };
    const search = expectation.contains ?? expectation.excludes;
    const list = await run.client.admin.queues(search === undefined ? {} : { search });
    return { rows: list.queues.map((queue) => queue.name) };
  },

  async message(run, step) {
    const [message] = refs<Message>(run, step);
    const detail = await run.client.admin.message(message as Message);
    return { payload: detail.payload, status: detail.status };
  },

  async mark(run, step) {
    run.marks.set(step.name as string, new Date().toISOString());
    return undefined;
  },

  stream: (run, step) => runStream(run.client, step, run.streamTotals),

  streamHash: (run, step) => streamHash(run.client, step),

  async sleep(_run, step) {
    await new Promise((resolve) => setTimeout(resolve, step.ms as number));
    return undefined;
  },
};
