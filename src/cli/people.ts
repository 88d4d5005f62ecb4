import { isNamedOwner } from "../access/policy.js";
import { roleOf } from "../access/roles.js";
import { allowListsOf } from "../config/agents.js";
import type { Config } from "../config/config.js";
import { storeLocation } from "../paths.js";
import { withStore } from "../store/open.js";
import type { Person, Store } from "../store/store.js";

type Answer = { ok: boolean; text: string };
const NOBODY = (id: string) => ({ ok: false, text: `No person ${id} (pincer people list shows them).` });

/** With their role as their turns run with it: set by `pincer people role` (`roleSet`), or derived (the allowlists,
 * people.defaultRole). */
export function withRole(config: Config, person: Person) {
  const named = (route: string, userId: string) => isNamedOwner(route, userId, allowListsOf(config));
  return { ...person, role: roleOf(person, named, config.people.defaultRole), roleSet: person.role !== undefined };
}
export const roleText = (p: ReturnType<typeof withRole>) => `${p.role}${p.roleSet ? " (set)" : ""}`;

/** `pincer people list` (`--json`): everyone who wrote, each agent's, with their role and accounts. */
export function peopleList(config: Config, { json }: { json?: boolean }): Promise<string> {
  return withStore(storeLocation(config), async (store) => {
    const all = (await store.people.list()).map((p) => withRole(config, p));
    if (json) return JSON.stringify(all, null, 2);
    if (all.length === 0) return "Nobody has written yet.";
    return all.map((p) => `${p.id}  ${p.name}  ${roleText(p)}  ${p.identities.length} account(s)`).join("\n");
  });
}

/** `pincer people show ID` (`--json`): a person's role, accounts and what is stored about them. */
export function peopleShow(config: Config, id: string, { json }: { json?: boolean }): Promise<Answer> {
  return withStore(storeLocation(config), async (store) => {
    const found = await store.people.show(id);
    if (!found) return json ? { ok: false, text: "null" } : NOBODY(id);
    const [person, stored] = [withRole(config, found), await store.people.stored(found)];
    if (json) return { ok: true, text: JSON.stringify({ ...person, stored }, null, 2) };
    const lines = [
      `${person.id}: ${person.name}, agent ${person.agent}, role ${roleText(person)}`,
      ...person.identities.map((i) => `  account ${i.route} ${i.userId} (${i.name})`),
      `  ${stored.modelCalls} model calls in ${stored.chats} chats, ${stored.jobs} jobs`,
    ];
    return { ok: true, text: lines.join("\n") };
  });
}

/** `pincer people role ID ROLE` (and the control page): owner, member, guest, one of config `roles`, or `default`. */
export const peopleRole = (config: Config, id: string, name: string, on?: Store) =>
  storeOf(config, on, async (store): Promise<Answer> => {
    const known = ["owner", "member", "guest", ...Object.keys(config.roles)];
    if (name !== "default" && !known.includes(name))
      return { ok: false, text: `Unknown role "${name}": use ${known.join(", ")} or default.` };
    if (!(await store.people.setRole(id, name === "default" ? undefined : name))) return NOBODY(id);
    return { ok: true, text: `${id} is now ${name === "default" ? "back on the derived role" : name}.` };
  });

/** `pincer people remove ID`: forgets the person and their accounts, and takes back their pairing approvals (their jobs
 * pause); an allowlist that names them, or `*`, still lets them in, as a new person. */
export function peopleRemove(config: Config, id: string, on?: Store): Promise<Answer> {
  return storeOf(config, on, async (store) => {
    const person = await store.people.show(id);
    if (!person || !(await store.people.remove(id))) return NOBODY(id);
    for (const { route, userId } of person.identities) await store.pairing.revoke(route, userId);
    const text = `Removed ${id} (${person.identities.length} account(s)); their pairing approvals are revoked.`;
    return { ok: true, text };
  });
}

/** The running app's store (the control page), or one opened for the command. */
const storeOf = <T>(config: Config, store: Store | undefined, work: (store: Store) => Promise<T>) =>
  store ? work(store) : withStore(storeLocation(config), work);
