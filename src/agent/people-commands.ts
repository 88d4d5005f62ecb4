import { rm } from "node:fs/promises";
import { personSpace } from "../access/policy.js";
import { commandArgument } from "../bus/commands.js";
import type { Switchboard } from "../bus/switchboard.js";
import {
  type Button,
  conversationMediaDir,
  type InboundMessage,
  type PersonRef,
  routeOf,
  type TapHandler,
} from "../bus/types.js";
import type { Config } from "../config/config.js";
import { mediaDir } from "../paths.js";
import type { LinkOutcome, Store } from "../store/store.js";
import type { WorkerDeps } from "./worker-deps.js";

/** Every wrong, used, expired or other agent's code gets the same answer: it tells nothing of whose it might be. */
const REFUSED: Record<Extract<LinkOutcome, { refused: unknown }>["refused"], string> = {
  wrong: "That code is not valid (wrong, used or expired). Ask for a new one with /link from your other account.",
  locked: "Too many wrong codes from this account: try again in an hour.",
  refused:
    "This account is an owner's (named in the allowlist): it joins only another owner. Send /link from here, and the code from your other account.",
  already: "This account is already part of that person.",
};

export async function peopleAnswer(
  command: "whoami" | "link" | "unlink",
  msg: InboundMessage,
  { access, people }: Pick<WorkerDeps, "access" | "people">,
): Promise<string> {
  const person = msg.person && (await people?.show(msg.person.id));
  if (!access || !people || !person || !msg.person) return "People are not available here.";
  if (command === "unlink") {
    const moved = await people.unlink(person.id);
    return moved
      ? `Unlinked ${moved} account(s): each is a person of its own again.`
      : "No account is linked to yours.";
  }
  const code = commandArgument(msg.text);
  if (command === "link" && code) {
    const outcome = await access.link(msg, code);
    return "joined" in outcome
      ? `Linked: this account is now part of ${outcome.joined.name}.`
      : REFUSED[outcome.refused];
  }
  if (command === "link") {
    // Anyone in a group could send the code first, and become you.
    if (msg.isGroup) return "Ask for a code in a private chat with me: anyone here could use it.";
    const offer = await people.offerLink(person.id);
    return `Your code: ${offer.code} (for 10 minutes, once). From your other account (Telegram, Discord or the web chat), send me: /link ${offer.code}`;
  }
  const stored = await people.stored(person);
  return [
    `You are ${person.name} (${person.id}), role ${msg.person.role}.`,
    `Accounts: ${person.identities.map((i) => `${i.route} ${i.userId} (${i.name})`).join(", ")}.`,
    `Stored about you: ${stored.modelCalls} model calls in ${stored.chats} chats, ${stored.jobs} jobs.`,
  ].join("\n");
}

/** `/forget`'s question; its buttons carry the person (`f:ID`), so only a tap by one of their accounts forgets. */
export const FORGET_ASK =
  "Forget you? This deletes everything I keep about you: your memory and files, your direct chats, your messages in groups, your jobs, usage and linked accounts. It cannot be undone.";
export const FORGET_PREFIX = "f:";
export const forgetButtons = (person: PersonRef): Button[][] => [
  [
    { label: "Forget me", data: `${FORGET_PREFIX}${person.id}` },
    { label: "Cancel", data: FORGET_PREFIX },
  ],
];

/** Taps on /forget's buttons: Forget me deletes the person's rows (store/forget.ts) and folders: their space and the
 * received files of their direct chats. */
export function forgetTaps({ store, config, bus }: { store: Store; config: Config; bus: Switchboard }): TapHandler {
  return async (tap) => {
    const id = tap.data.slice(FORGET_PREFIX.length);
    const person = id ? await store.people.show(id) : undefined;
    const { channel, account, chatId, threadId, messageId } = tap;
    const edit = (text: string) =>
      bus.publishOutbound({ channel, account, chatId, threadId, kind: "reply", text, editOf: { messageId } });
    if (!person) {
      await edit(id ? "Nothing is stored about you any more." : "Kept: nothing was deleted.");
      return {};
    }
    if (!person.identities.some((i) => i.route === routeOf(tap) && i.userId === tap.senderId))
      return { text: "Only the person asking can answer this." };
    const chats = await store.forgetting.forget(person);
    const { workspace } = { ...config, ...config.agents[person.agent] };
    await rm(personSpace(workspace, person.id), { recursive: true, force: true });
    for (const key of chats)
      await rm(conversationMediaDir(mediaDir(config.home), key), { recursive: true, force: true });
    await edit("Forgotten: nothing of yours is kept.");
    return { text: "Forgotten." };
  };
}
