import type { Logger } from "pino";
import { pruneMediaFiles } from "./retention.js";
import type { RetentionAges, Store } from "./store.js";

// Finished inbox/outbox rows only guard against replays; a week is far longer than any platform replays.
const JOURNAL_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
const PRUNE_EVERY_MS = 24 * 60 * 60 * 1000;
const INDEX_EVERY_MS = 2000;

export interface HousekeepingDeps {
  store: Pick<Store, "journal" | "memory" | "retention">;
  /** The folder of received attachments and copies of sent ones. */
  mediaDir: string;
  retention: RetentionAges;
  log: Logger;
}

/** The database's upkeep: once a day (the first at once) pruning the journal and what only grows (config `retention`);
 * every few seconds indexing for search the messages turns only marked, off the replies' path. Returns a stop. */
export function startHousekeeping(deps: HousekeepingDeps): () => void {
  const { store, retention, log } = deps;
  const prune = async () => {
    await store.journal.prune(JOURNAL_RETENTION_MS);
    const pruned = await store.retention.prune(retention);
    const mediaFiles = await pruneMediaFiles(deps.mediaDir, retention.mediaDays).catch((err: unknown) => {
      log.warn({ err }, "could not prune old media files");
      return 0;
    });
    if (mediaFiles + Object.values(pruned).reduce((a, b) => a + b, 0) > 0) {
      log.info({ ...pruned, mediaFiles }, "pruned old data (see retention in the config)");
    }
  };
  const warned = (work: () => Promise<unknown>, warning: string) => () => {
    work().catch((err: unknown) => log.warn({ err }, warning));
  };
  const pruneLogged = warned(prune, "could not prune old data; trying again tomorrow");
  const indexPending = warned(
    () => store.memory.indexPending(),
    "could not index new messages for search; the next search tries again",
  );
  pruneLogged();
  const timers = [setInterval(pruneLogged, PRUNE_EVERY_MS).unref(), setInterval(indexPending, INDEX_EVERY_MS).unref()];
  return () => {
    for (const timer of timers) clearInterval(timer);
  };
}
