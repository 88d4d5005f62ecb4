import type { OutboundMessage } from "./types.js";

/** Where a reply being written is shown: the chat its reply goes to; the draft's first message replies to `replyToId`. */
export interface DraftTarget
  extends Pick<OutboundMessage, "channel" | "account" | "chatId" | "threadId" | "replyToId"> {
  /** A private chat (a DM), where drafts change faster and Telegram has native drafts. */
  isPrivate: boolean;
  /** Stable for one turn, across restarts (a native draft keeps its id). */
  key: string;
  /** Messages this draft posted before a restart, to go on editing instead of posting again. */
  messageIds: string[];
}

/** A channel's way of showing drafts; `onIds` stores the draft's platform ids each time a message is posted. */
export type DraftRenderer = (target: DraftTarget, onIds: (messageIds: string[]) => Promise<void>) => DraftStream;

/** A channel's formatting, split and API calls for a DraftStream. */
export interface DraftOps {
  /** The text as the parts it would go out in now, formatted so an unfinished text is never refused. */
  parts(text: string): string[];
  /** Shows one part as the platform's own draft, without posting a message (Telegram private chats). */
  native?(part: string): Promise<void>;
  /** Posts a part (`first`: the draft's first, replying to the user); its platform id. */
  send(part: string, first: boolean): Promise<string>;
  edit(messageId: string, part: string): Promise<void>;
  remove(messageId: string): Promise<void>;
  retryAfterMs(err: unknown): number | undefined;
  isUnchanged?(err: unknown): boolean;
  /** A refusal no retry fixes (the message was deleted, native drafts are not allowed here). */
  isRefusal(err: unknown): boolean;
}

/** A reply shown while it is written, the latest text at most once per interval, one platform call at a time, as native
 * drafts or as messages edited in place (a new one at the platform's limit). A rate limit pauses it for its
 * retry_after; a refusal ends it (a native draft refused goes on as messages), and the reply settles what the draft
 * shows. */
export class DraftStream {
  private latest = "";
  private dirty = false;
  private closed = false;
  private broken = false;
  private readonly ids: string[];
  /** What each message shows; the first ones are whatever they showed before a restart. */
  private readonly shown: string[];
  private nativeShown: string | undefined;
  private native: DraftOps["native"];
  private lastAt: number | undefined;
  private blockedUntil = 0;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly ops: DraftOps,
    private readonly options: {
      intervalMs: number;
      messageIds?: string[];
      onIds?: (messageIds: string[]) => Promise<void>;
      onError?: (err: unknown) => void;
    },
  ) {
    this.ids = [...(options.messageIds ?? [])];
    this.shown = this.ids.map(() => "\u0000");
    // A draft that already has messages goes on in them.
    this.native = this.ids.length === 0 ? ops.native?.bind(ops) : undefined;
  }

  /** The whole text so far (markdown). */
  update(text: string): void {
    if (this.closed || this.broken || text === this.latest) return;
    this.latest = text;
    this.dirty = true;
    this.kick();
  }

  /** Waits for a call still under way; the draft's platform ids. */
  async close(): Promise<string[]> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
    return [...this.ids];
  }

  async discard(): Promise<void> {
    for (const id of await this.close()) await this.ops.remove(id).catch((err: unknown) => this.options.onError?.(err));
  }

  private kick(): void {
    if (this.closed || this.broken || !this.dirty || this.running || this.timer) return;
    const wait = nextCallAt(this.lastAt, this.options.intervalMs, this.blockedUntil) - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.kick();
      }, wait);
      return;
    }
    this.running = this.step()
      .catch((err: unknown) => this.options.onError?.(err))
      .finally(() => {
        this.running = undefined;
        this.kick();
      });
  }

  private async step(): Promise<void> {
    this.dirty = false;
    const parts = this.ops.parts(this.latest);
    const part = parts.at(-1);
    const step: DraftStep | "native" | undefined = this.native
      ? part !== undefined && part !== this.nativeShown
        ? "native"
        : undefined
      : nextDraftStep(this.shown, parts);
    if (!step) return;
    this.lastAt = Date.now();
    // More may be left to show for the same text (a message completed before the next is posted).
    this.dirty = true;
    try {
      if (step === "native") {
        await this.native?.(part as string);
        this.nativeShown = part;
      } else await this.call(step, parts);
      this.failures = 0;
    } catch (err) {
      if (step !== "native" && step.kind === "edit" && this.ops.isUnchanged?.(err)) {
        this.shown[step.index] = parts[step.index];
        return;
      }
      this.options.onError?.(err);
      if (this.ops.isRefusal(err)) {
        if (step === "native") this.native = undefined;
        else this.broken = true;
        return;
      }
      this.failures++;
      this.blockedUntil = Date.now() + backoffMs(this.failures, this.options.intervalMs, this.ops.retryAfterMs(err));
    }
  }

  private async call(step: DraftStep, parts: string[]): Promise<void> {
    const part = parts[step.index];
    if (step.kind === "edit") {
      await this.ops.edit(this.ids[step.index], part);
      this.shown[step.index] = part;
      return;
    }
    const id = await this.ops.send(part, this.ids.length === 0);
    this.ids.push(id);
    this.shown.push(part);
    // Stored before anything else is posted: after a crash the next start edits it, never posts a second draft.
    await this.options.onIds?.([...this.ids]).catch((err: unknown) => this.options.onError?.(err));
  }
}

/** How often a draft may change: 1 s in private; 3 s in groups (Telegram: 20 messages a minute, seen by all). */
export const draftIntervalMs = (isPrivate: boolean) => (isPrivate ? 1000 : 3000);

/** The longest a draft waits after failures that gave no retry_after. */
const MAX_BACKOFF_MS = 30_000;

/** An interval after the last call, and never while the platform asked to wait. */
export function nextCallAt(lastAt: number | undefined, intervalMs: number, blockedUntil: number): number {
  return Math.max(lastAt === undefined ? 0 : lastAt + intervalMs, blockedUntil);
}

/** The pause after the `failures`-th failure in a row: the platform's retry_after, else doubling. */
export function backoffMs(failures: number, intervalMs: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  return Math.min(MAX_BACKOFF_MS, intervalMs * 2 ** Math.max(0, failures - 1));
}

type DraftStep = { kind: "edit" | "send"; index: number };

/** The one platform call a draft needs next to show `parts`: the last message catches up with its part (completing it
 * once the text moved past), then the next part is posted; full messages stay until the reply edits them. */
export function nextDraftStep(shown: readonly string[], parts: readonly string[]): DraftStep | undefined {
  const last = shown.length - 1;
  if (last >= 0 && last < parts.length && parts[last] !== shown[last]) return { kind: "edit", index: last };
  if (parts.length > shown.length) return { kind: "send", index: shown.length };
  return undefined;
}
