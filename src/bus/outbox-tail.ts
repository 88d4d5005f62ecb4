import type { Logger } from "pino";
import { coalesced } from "../coalesced.js";
import { errorText, type OutboundMessage } from "./types.js";

/** What a tail reads: the rows of a channel after an id (pending or sent), and the newest id at its start. */
export interface TailJournal {
  outboxAfter(channel: string, afterId: number): Promise<Array<{ id: number; msg: OutboundMessage }>>;
  lastOutboxId(): Promise<number>;
}

/** A row committed this long after a higher id was seen is not waited for: ids are handed out at insert and committed
 * in any order across processes, so the tail looks back over this window, not only past the highest id it saw. */
const LOOK_BACK_MS = 60_000;

/** Follows every row recorded for one channel from its start on, whichever process recorded it and whether or not this
 * process sends it: each is delivered once, at the first look after it was committed. Looks when woken. */
export class OutboxTail {
  /** Ids at or below this are never read again. */
  private floor: Promise<number>;
  private readonly seen = new Map<number, number>();
  private readonly looks = coalesced(() => this.look());

  constructor(
    private readonly channel: string,
    private readonly journal: TailJournal,
    private readonly deliver: (msg: OutboundMessage) => void,
    private readonly log?: Pick<Logger, "warn">,
    private readonly now: () => number = Date.now,
  ) {
    this.floor = journal.lastOutboxId();
  }

  wake(): void {
    this.looks.run();
  }

  idle = () => this.looks.idle();

  private async look(): Promise<void> {
    try {
      const floor = await this.floor;
      const now = this.now();
      for (const { id, msg } of await this.journal.outboxAfter(this.channel, floor)) {
        if (this.seen.has(id)) continue;
        this.seen.set(id, now);
        this.deliver(msg);
      }
      // What was seen long enough ago moves the floor up; its ids are forgotten.
      let settled = floor;
      for (const [id, at] of this.seen) if (at <= now - LOOK_BACK_MS && id > settled) settled = id;
      for (const id of this.seen.keys()) if (id <= settled) this.seen.delete(id);
      this.floor = Promise.resolve(settled);
    } catch (err) {
      this.floor = this.floor.catch(() => this.journal.lastOutboxId());
      this.log?.warn({ err: errorText(err), channel: this.channel }, "could not follow the outbox");
    }
  }
}
