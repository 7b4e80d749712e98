/**
 * Transactions: acks and pushes that commit together or not at all (`POST /api/v1/transaction`).
 *
 * ```ts
 * await client.transaction()
 *   .ack(message)
 *   .queue("next-stage").partition("p").push([{ payload }])
 *   .commit();
 * ```
 *
 * Pushed items get their transactionId when they are added, so a retried commit is deduplicated
 * and the acks of a transaction that already committed are idempotent successes.
 */

import type { Core } from "./core.js";
import { DEFAULT_PARTITION, wireAck, wireItem, withTransactionIds } from "./core.js";
import { ReginaError } from "./errors.js";
import type { AckStatus, Message, PushItem, TransactionResult } from "./types.js";

type Operation =
  | { type: "ack"; message: Message; body: Record<string, unknown> }
  | { type: "push"; items: ReturnType<typeof wireItem>[] };

/** A transaction being assembled; {@link commit} sends it. */
export class Transaction {
  private readonly operations: Operation[] = [];

  /** @internal */
  constructor(private readonly core: Core) {}

  /** Adds an ack of a delivered message (default status `completed`). */
  ack(message: Message, status: AckStatus = "completed", options: { error?: string } = {}): Transaction {
    const body = { type: "ack", ...wireAck({ message, status, error: options.error }) };
    this.operations.push({ type: "ack", message, body });
    return this;
  }

  /** Starts a push to a queue: `.queue(q).partition(p).push(items)` returns this transaction. */
  queue(name: string): TransactionPush {
    return new TransactionPush(this, name, DEFAULT_PARTITION);
  }

  /** @internal */
  addPush(queue: string, partition: string, items: readonly PushItem[]): Transaction {
    const wire = withTransactionIds(items).map((item) => wireItem(queue, partition, item));
    this.operations.push({ type: "push", items: wire });
    return this;
  }

  /** Number of operations added so far. */
  get size(): number {
    return this.operations.length;
  }

  /**
   * Commits every operation atomically.
   *
   * @throws {ReginaError} nothing was applied: `lease_expired`, `not_leased`, `already_settled`,
   *   `group_mismatch` (409), `message_not_found` (404), `queue_full` (429), `validation_failed`
   *   (400)… with the outcomes up to the failing operation in `results`.
   */
  async commit(options: { signal?: AbortSignal } = {}): Promise<TransactionResult> {
    const operations = this.operations.map((operation) =>
      operation.type === "ack" ? operation.body : { type: "push", items: operation.items },
    );
    const response = await this.core.transport.request<TransactionResult & { error?: string; code?: string }>({
      method: "POST",
      path: "/api/v1/transaction",
      body: { operations },
      signal: options.signal,
    });
    const body = response.body;
    if (!body || body.success !== true) {
      throw new ReginaError({
        code: body?.code ?? "http_error",
        status: response.status,
        message: body?.error ?? "Transaction failed",
        results: body?.results,
      });
    }
    for (const operation of this.operations) {
      if (operation.type === "ack") this.core.settled.add(operation.message);
    }
    return body;
  }
}

/** The push part of a transaction: which partition, then the items. */
export class TransactionPush {
  /** @internal */
  constructor(
    private readonly transaction: Transaction,
    private readonly queueName: string,
    private readonly partitionName: string,
  ) {}

  /** The partition to push to (default `Default`). */
  partition(name: string): TransactionPush {
    return new TransactionPush(this.transaction, this.queueName, name);
  }

  /** Adds the items and returns the transaction. */
  push(items: PushItem | readonly PushItem[]): Transaction {
    const list = Array.isArray(items) ? (items as readonly PushItem[]) : [items as PushItem];
    return this.transaction.addPush(this.queueName, this.partitionName, list);
  }
}
