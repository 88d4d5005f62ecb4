import { setTimeout as pause } from "node:timers/promises";
import type { Logger } from "pino";
import {
  type BusJournal,
  DeliveryError,
  type OutboundHandler,
  type OutboxRow,
  type RetryTiming,
  retryDelay,
} from "./delivery.js";
import { type DeliveryOutcome, type DeliveryReceipt, errorText } from "./types.js";
import { untilStored } from "./until-stored.js";

/** Chats whose replies are sent at once; one chat's rows always go one after another. */
const PARALLEL_CHATS = 8;

/** One channel's sender loop, outside any turn: per chat strictly in order, up to PARALLEL_CHATS chats at a time in
 * order of age, so neither a chat backing off nor a busy moment holds the others up behind one slow send. A failure is
 * retried with backoff or after retry_after; a refusal, or a row failing past `deadLetterAfterMs`, is dead-lettered. */
export class ChannelSender {
  private stopped = false;
  private wakeUp: () => void = () => {};
  /** A row may have been recorded after the heads were read: the next sleep is skipped. */
  private woken = false;
  private readonly loop: Promise<void>;
  /** One controller per attempt, so platform clients never pile listeners on one signal. */
  private readonly inFlight = new Set<AbortController>();
  private failuresInARow = 0;
  private readonly idleWaiters: Array<() => void> = [];

  constructor(
    /** The route whose rows it sends (routeOf). */
    private readonly channel: string,
    private readonly handler: OutboundHandler,
    private readonly journal: BusJournal,
    private readonly timing: RetryTiming,
    private readonly onAttempt: (row: OutboxRow, outcome: DeliveryOutcome) => void,
    private readonly log?: Logger,
  ) {
    this.loop = this.run();
  }

  wake(): void {
    this.woken = true;
    this.wakeUp();
  }

  /** Resolves once nothing is pending for this channel (rows waiting for a retry count as pending). */
  idle(): Promise<void> {
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.wake();
    });
  }

  /** Lets a running send finish (up to the grace period, then aborts it); pending rows stay for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await Promise.race([this.loop, pause(this.timing.stopGraceMs, undefined, { ref: false })]);
    for (const controller of this.inFlight) controller.abort(new Error("the channel is stopping"));
    await this.loop;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private async run(): Promise<void> {
    for (let failures = 0; !this.stopped; ) {
      try {
        await this.round();
        failures = 0;
      } catch (err) {
        // The journal failed: nothing is sent until it answers again, and the loop never dies.
        if (this.stopped) return;
        this.log?.[++failures === 1 ? "warn" : "debug"](
          { channel: this.channel, err: errorText(err), failures },
          "could not read or write the outbox; sending waits until the store answers",
        );
        await this.sleep(retryDelay(failures, { baseDelayMs: 250, maxDelayMs: 5000 }));
      }
    }
  }

  private async round(): Promise<void> {
    this.woken = false;
    const heads = await this.journal.outboxHeads(this.channel);
    if (heads.length === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    const now = Date.now();
    const due = heads.filter((row) => row.nextAttemptAt <= now);
    if (due.length === 0) {
      const next = Math.min(...heads.map((row) => row.nextAttemptAt));
      await this.sleep(Number.isFinite(next) ? next - now : undefined);
      return;
    }
    // The heads are one row per chat, so sending them side by side keeps every chat in order.
    let next = 0;
    const lane = async () => {
      while (!this.stopped && next < due.length) await this.attempt(due[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_CHATS, due.length) }, lane));
  }

  private async attempt(row: OutboxRow): Promise<void> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    await this.send(row, controller.signal).finally(() => this.inFlight.delete(controller));
  }

  private async send(row: OutboxRow, signal: AbortSignal): Promise<void> {
    let partsSent = row.partsSent;
    let receipt: DeliveryReceipt | undefined;
    const messageIds = [...(row.messageIds ?? [])];
    let delivered = false; // the last part went out, and the row was recorded as sent with it
    const waitedMs = Date.now() - row.createdAt;
    const sending = performance.now();
    // The platform took a part: its record is retried (within the stop's grace), never sent again for it.
    const record = (write: () => Promise<void>) => untilStored(write, { signal });
    try {
      receipt = (await this.handler(await this.editTarget(row), {
        partsSent: row.partsSent,
        markPartSent: async (last, ids = []) => {
          const parts = ++partsSent;
          messageIds.push(...ids);
          if (!last) return record(() => this.journal.markOutboundPartSent(row.id, parts, [...messageIds]));
          await record(() => this.journal.markOutboundSent(row.id, parts, [...messageIds]));
          delivered = true;
        },
        signal,
      })) as DeliveryReceipt | undefined;
    } catch (err) {
      // Once the last part went out the message is delivered, whatever fails after; cut short by stop(), it is pending.
      if (!delivered) return signal.aborted ? undefined : this.failed({ ...row, partsSent }, err);
    }
    if (!delivered && receipt?.refused)
      return this.failed({ ...row, partsSent }, new DeliveryError(receipt.refused, { permanent: true }));
    const posted = messageIds.length > 0 ? messageIds : (receipt?.messageIds ?? []);
    if (!delivered) await record(() => this.journal.markOutboundSent(row.id, undefined, posted));
    const sendMs = Math.round((performance.now() - sending) * 100) / 100;
    this.log?.debug({ channel: this.channel, outboxId: row.id, waitedMs, sendMs }, "sent");
    if (this.failuresInARow > 0)
      this.log?.info({ channel: this.channel, failures: this.failuresInARow }, "sending works again");
    this.failuresInARow = 0;
    this.onAttempt(row, { status: "sent", messageIds: receipt?.messageIds ?? posted });
  }

  // The message with an edit of an earlier row pointed at that row's first platform message. Per-chat order has sent
  // that row already if it ever will be: one unknown, dead or of another chat is a refusal, not something to retry.
  private async editTarget(row: OutboxRow): Promise<OutboxRow["msg"]> {
    const edit = row.msg.editOf;
    if (!edit || !("outboxId" in edit)) return row.msg;
    const [messageId] = (await this.journal.postedMessageIds(edit.outboxId, row.msg)) ?? [];
    if (messageId === undefined)
      throw new DeliveryError(`the message to edit (outbox row ${edit.outboxId}) was never posted to this chat`, {
        permanent: true,
      });
    return { ...row.msg, editOf: { messageId } };
  }

  private async failed(row: OutboxRow, err: unknown): Promise<void> {
    const now = Date.now();
    // A RangeError (stack overflow, string too long) is pincer's own code failing on this message: it fails the same
    // way on every try, so it is not retried for a day ahead of the chat's next replies.
    const refused = (err instanceof DeliveryError && err.permanent) || err instanceof RangeError;
    const error = errorText(err);
    const about = { channel: this.channel, chatId: row.msg.chatId, outboxId: row.id, err: error };
    if (refused || now - row.createdAt >= this.timing.deadLetterAfterMs) {
      await this.journal.deadLetterOutbound(row.id, error);
      this.log?.error(
        { ...about, kind: row.msg.kind, attempts: row.attempts + 1 },
        refused
          ? "the platform refused a message for good; moved it to the dead letters"
          : "gave up on a message that could not be sent for too long; moved it to the dead letters",
      );
      this.onAttempt(row, { status: "refused", error });
      return;
    }
    const retryAfterMs = err instanceof DeliveryError ? err.retryAfterMs : undefined;
    const delay = retryDelay(row.attempts + 1, this.timing, retryAfterMs);
    await this.journal.deferOutbound(row.id, now + delay, error);
    // The first failure after working sends is a warning; the retries of the same outage are debug lines.
    const first = this.failuresInARow++ === 0;
    this.log?.[first ? "warn" : "debug"](
      { ...about, retryInMs: delay },
      first ? "could not send; retrying with backoff until it works" : "could not send again",
    );
    this.onAttempt(row, { status: "failed", error });
  }

  /** Waits `ms` (or until woken, when undefined): a new row or stop() cuts the wait short. */
  private sleep(ms: number | undefined): Promise<void> {
    if (this.woken) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = ms === undefined ? undefined : setTimeout(done, Math.max(0, ms));
      this.wakeUp = done;
    });
  }
}
