import type { Logger } from "pino";
import type { Switchboard } from "../bus/switchboard.js";
import {
  agentOf,
  type Button,
  type ButtonTap,
  type InboundMessage,
  type OutboundMessage,
  replyTarget,
  routeOf,
  type TapAnswer,
} from "../bus/types.js";
import type { CronJob, Store } from "../store/store.js";
import { formatInZone } from "../time-zone.js";
import { type JobActions, label } from "./job-actions.js";
import { scheduleInWords } from "./schedule-text.js";

/** The data prefix of /jobs' buttons: `j:<verb>:<job id>`. */
export const JOB_BUTTON_PREFIX = "j:";
/** The most jobs /jobs shows as messages of their own (the page shows all). */
const MAX_LISTED = 10;

const VERBS = { r: "run", p: "pause", u: "resume", d: "ask", D: "remove", c: "cancel" } as const;
type Verb = keyof typeof VERBS;

const GONE = "This job does not exist any more.";

export interface JobsChatDeps {
  store: Pick<Store, "jobs">;
  bus: Pick<Switchboard, "publishOutbound">;
  actions: JobActions;
  /** Whether this person is pincer's owner (named in the bot's allowlist, or on a local channel); `route`: routeOf. */
  isPincerOwner: (route: string, userId: string) => boolean;
  log: Logger;
}

/** Who may act on a job: its owner, or pincer's owner. Pure. */
export function mayActOn(
  job: Pick<CronJob, "owner">,
  /** `channel`: the bot's route (routeOf), as a job's owner has it. */
  who: { channel: string; userId: string },
  isPincerOwner: boolean,
): boolean {
  return isPincerOwner || (job.owner?.channel === who.channel && job.owner.userId === who.userId);
}

/** `/jobs` in a chat and the taps on its buttons. */
export function createJobsChat(deps: JobsChatDeps) {
  const { store, bus, actions } = deps;

  /** Posts one message per job of the sender (text, schedule, next run, state, buttons); returns the closing line. */
  async function answer(msg: InboundMessage): Promise<string> {
    const own = (await store.jobs.listByOwner({ channel: routeOf(msg), userId: msg.senderId })).filter(
      (job) => agentOf(job.origin.sessionKey) === agentOf(msg.sessionKey),
    );
    if (own.length === 0) return "You have no scheduled jobs. Ask me to remind you of something to make one.";
    const target = replyTarget(msg);
    for (const job of own.slice(0, MAX_LISTED)) await bus.publishOutbound(jobMessage(target, job));
    const more = own.length > MAX_LISTED ? ` (${own.length - MAX_LISTED} more on the control page)` : "";
    return `Your jobs: ${own.length}${more}. Run now runs one once now, Pause stops it until you Resume, Delete removes it.`;
  }

  /** A tap on a /jobs button: only the job's owner or pincer's owner; the job's message shows its new state. */
  async function tap(tap: ButtonTap): Promise<TapAnswer> {
    const [, verb, id] = /^j:([a-zA-Z]):(.+)$/.exec(tap.data) ?? [];
    if (!verb || !(verb in VERBS) || !id) return { text: GONE };
    const job = await store.jobs.get(id);
    if (!job) return { text: GONE };
    const route = routeOf(tap);
    if (!mayActOn(job, { channel: route, userId: tap.senderId }, deps.isPincerOwner(route, tap.senderId))) {
      deps.log.info({ jobId: id, channel: tap.channel, userId: tap.senderId }, "a job's button refused: not theirs");
      return { text: "Only the job's owner (or pincer's owner) can do that." };
    }
    const target = { channel: tap.channel, account: tap.account, chatId: tap.chatId, threadId: tap.threadId };
    const edit = (out: OutboundMessage) => bus.publishOutbound({ ...out, editOf: { messageId: tap.messageId } });
    switch (VERBS[verb as Verb]) {
      case "ask":
        await edit({
          ...target,
          kind: "reply",
          text: `Delete ${label(job)}?\n${job.message}`,
          buttons: [[button("Delete", "D", id), button("Cancel", "c", id)]],
        });
        return { text: "Tap Delete once more to delete it." };
      case "cancel":
        await edit(jobMessage(target, job));
        return { text: "Kept." };
      case "remove": {
        const result = await actions.remove(id);
        if (result.ok) await edit({ ...target, kind: "reply", text: result.text, buttons: [] });
        return { text: result.text };
      }
      default: {
        const result = await actions[VERBS[verb as "r" | "p" | "u"]](id);
        const now = await store.jobs.get(id);
        if (now) await edit(jobMessage(target, now));
        return { text: result.text };
      }
    }
  }

  return { answer, tap };
}

function button(text: string, verb: Verb, id: string): Button {
  return { label: text, data: `${JOB_BUTTON_PREFIX}${verb}:${id}` };
}

/** A job as /jobs shows it: its text, schedule, next run or why it is paused, with its buttons. */
function jobMessage(target: Pick<OutboundMessage, "channel" | "chatId" | "threadId">, job: CronJob): OutboundMessage {
  const paused = job.pausedAt !== undefined;
  const state = paused
    ? `Paused${job.pausedReason === "failures" ? " after failing too often" : job.pausedReason === "owner" ? " (its owner lost access)" : ""}.`
    : `Next run: ${formatInZone(job.nextRunAt, job.tz)}.`;
  return {
    ...target,
    kind: "reply",
    text: [`${job.message}`, `${label(job)}: ${scheduleInWords(job.schedule, job.tz)}`, state].join("\n"),
    buttons: [
      [
        button("Run now", "r", job.id),
        paused ? button("Resume", "u", job.id) : button("Pause", "p", job.id),
        button("Delete", "d", job.id),
      ],
    ],
  };
}
