import type { Logger } from "pino";
import {
  agentChatKey,
  agentOf,
  type InboundMessage,
  MAIN_AGENT,
  type OutboundMessage,
  type PersonMessage,
  type PersonRef,
  parseSessionKey,
  personOf,
  routeOf,
} from "../bus/types.js";
import type { FileConfig } from "../config/file-schema.js";
import type { Store } from "../store/store.js";
import { isNamedOwner } from "./policy.js";
import { roleOf, roleSettings } from "./roles.js";

interface AccessGateDeps {
  /** The allowlists by route (routeOf): TELEGRAM_ALLOW_FROM, DISCORD_ALLOW_FROM, an account's `allowFrom`. */
  allowFrom: Partial<Record<string, readonly string[]>>;
  /** The agent that answers a person's message on a platform (config `bindings`, the account's `agent`); absent: main. */
  agentFor?: (msg: PersonMessage & { channel: "telegram" | "discord" }) => string;
  pairing: Store["pairing"];
  people: Store["people"];
  /** Config `roles` and `people.defaultRole` (the role of everyone let in by `*` or pairing). */
  roles: Pick<FileConfig, "roles" | "people">;
  log: Logger;
}

/** A stranger who keeps writing is sent their (same) code again at most this often. */
const REPEAT_AFTER_MS = 10 * 60 * 1000;

export type AccessGate = ReturnType<typeof createAccessGate>;

/** The one place that decides who may talk to pincer; channels only describe who is talking. */
export function createAccessGate(deps: AccessGateDeps) {
  const named = (route: string, userId: string) => isNamedOwner(route, userId, deps.allowFrom);
  /** Whether a person may talk to the agent (and own jobs): local channels and the allowlist (`*` lets everyone in),
   * then, read from the database only when they say no, approvals. Each bot (route) has its own allowlist and
   * pairing: one approved on the shop's bot is a stranger to the family's. */
  const allowed = async (route: string, userId: string) =>
    named(route, userId) || deps.allowFrom[route]?.includes("*") || deps.pairing.isApproved(route, userId);
  /** A platform's message in the conversation of the agent that answers there; the others' keys name their agent. */
  const address = (msg: InboundMessage): InboundMessage => {
    if (msg.channel !== "telegram" && msg.channel !== "discord") return msg;
    const agent = deps.agentFor?.({ ...msg, channel: msg.channel }) ?? MAIN_AGENT;
    const { threadId } = parseSessionKey(msg.sessionKey) ?? {};
    return { ...msg, sessionKey: agentChatKey(agent, { ...msg, threadId }) };
  };

  /** The person behind a message (their account on its agent's bot, made a person on first sight) and their role;
   * undefined for a run no person is behind (the heartbeat). */
  const whoIs = async (msg: InboundMessage): Promise<PersonRef | undefined> => {
    const userId = personOf(msg);
    if (userId === undefined) return undefined;
    const route = routeOf(parseSessionKey(msg.sessionKey) ?? msg);
    const person = await deps.people.identify(agentOf(msg.sessionKey), route, userId, msg.senderName);
    return { id: person.id, role: roleOf(person, named, deps.roles.people.defaultRole) };
  };

  return {
    whoIs,
    /** `/link CODE` from this message's account: an owner's account (named in `*_ALLOW_FROM` or given the role) joins
     * only an owner, so nobody gains the owner's rights by having the owner send their code. */
    link: async (msg: InboundMessage, code: string) =>
      deps.people.redeem(agentOf(msg.sessionKey), { route: routeOf(msg), userId: msg.senderId }, code, (target) => {
        const owners = named(routeOf(msg), msg.senderId) || msg.person?.role === "owner";
        return !owners || roleOf(target, named, deps.roles.people.defaultRole) === "owner";
      }),
    /** Whether this person may talk to pincer on this bot (`route`) now (a job runs only while its owner may). */
    hasAccess: allowed,
    /** Whether the sender's role may switch a chat's model (`roles.NAME.models`; the built-in guest may not). */
    mayChooseModel: (msg: InboundMessage) =>
      msg.person !== undefined && roleSettings(deps.roles, msg.person.role).models === true,
    /** Every inbound message passes here: a person let in gets it back addressed to their agent's conversation; a
     * stranger is sent their code by `send` (undefined). */
    async admit(
      msg: InboundMessage,
      send: (notice: OutboundMessage) => Promise<unknown>,
    ): Promise<InboundMessage | undefined> {
      const route = routeOf(msg);
      if (await allowed(route, msg.senderId)) {
        const addressed = address(msg);
        return { ...addressed, person: await whoIs(addressed) };
      }
      const { senderId: userId, senderName: name, chatId, isGroup, account } = msg;
      const where = { channel: route, userId, name, chatId, isGroup };
      if (isGroup) {
        // No request either: a group is no place to hand out codes, and a flood there must not evict real ones.
        deps.log.info(where, "message from a user who is not allowed (in a group: no code)");
        return undefined;
      }
      const { isNew, toldAt, code } = await deps.pairing.request(route, userId, name);
      const due = isNew || toldAt === undefined || Date.now() - toldAt >= REPEAT_AFTER_MS;
      deps.log.info({ ...where, action: due ? "send-code" : "stay-silent" }, "message from a user who is not allowed");
      if (due) {
        await deps.pairing.markTold(route, userId);
        const text = [
          "Hi! I only talk to people my owner has approved.",
          `Your pairing code is ${code} (valid for one hour).`,
          `Ask the owner to run: pincer pairing approve ${route} ${code}`,
        ].join("\n");
        send({ channel: msg.channel, account, chatId, kind: "notice", text, replyToId: msg.id }).catch((err: unknown) =>
          deps.log.warn({ err, ...where }, "could not send the pairing code"),
        );
      }
      return undefined;
    },
  };
}
