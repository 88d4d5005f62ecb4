import { randomInt } from "node:crypto";
import { agentSessionKey } from "../bus/types.js";
import { ALPHABET } from "./pairing.js";
import { exists, insert, type Sql, SqlGroup, total, upsert } from "./sql.js";

/** One account of a person: a bot's route (`telegram`, `discord@work`, `web`) and the platform's user id there. */
export interface Identity {
  route: string;
  userId: string;
  name: string;
}

/** Someone who writes to an agent, across their linked accounts. `role`: set by `pincer people role`; absent, the
 * access policy derives it (the owner named in `*_ALLOW_FROM`, else `people.defaultRole`). */
export interface Person {
  id: string;
  agent: string;
  name: string;
  role?: string;
  createdAt: number;
  identities: Identity[];
}

/** What `/link CODE` came to: joined, or why not (`locked`: too many wrong codes lately; `refused`: `mayJoin` said no). */
export type LinkOutcome = { joined: Person } | { refused: "wrong" | "locked" | "refused" | "already" };

/** A /link code is this long (capital letters and digits, design.md: 6–12) and lives this long. */
const CODE_LENGTH = 10;
const CODE_TTL_MS = 10 * 60 * 1000;
/** Wrong codes an account may send before it must wait LOCK_MS since its last one (brute force). */
const MAX_FAILURES = 5;
const LOCK_MS = 60 * 60 * 1000;

const PERSON = `p.id, p.agent, p.name, p.role, p.created_at AS "createdAt"`;
const OF_IDENTITY = "agent = $1 AND route = $2 AND user_id = $3";
const BY_IDENTITY = `WHERE p.id = (SELECT person_id FROM person_identities WHERE ${OF_IDENTITY})`;
type Row = Omit<Person, "identities"> & { route: string; userId: string; identityName: string };

/** An identity's own person (before any link, and again after /unlink): its `route:userId`, in its agent's keys. */
const ownPersonId = (agent: string, route: string, userId: string) => agentSessionKey(agent, `${route}:${userId}`);

/** People and their identities, one agent's each. The gate asks `identify` per inbound message: a person is made on
 * first sight, its id the `channel:userId` its usage rows already carry. Linking moves an identity to the person who
 * asked for the code; nothing else changes owner: what is stored per person is found by the person's id. */
export class SqlPeople extends SqlGroup {
  async identify(agent: string, route: string, userId: string, name: string): Promise<Person> {
    const [found] = await this.select(this.db, BY_IDENTITY, [agent, route, userId]);
    if (found) return found;
    const id = ownPersonId(agent, route, userId);
    // Another process may make the same person at once: the first rows stand (a crash in between heals next message).
    const person = { id, agent, name, createdAt: Date.now() };
    await this.db.run(...insert("people", person, undefined, "ON CONFLICT DO NOTHING"));
    const identity = { agent, route, userId, personId: id, name };
    await this.db.run(...insert("person_identities", identity, undefined, "ON CONFLICT DO NOTHING"));
    return (await this.select(this.db, BY_IDENTITY, [agent, route, userId]))[0];
  }

  show = async (id: string) => (await this.select(this.db, "WHERE p.id = $1", [id]))[0];

  /** Every person who has an account (one whose accounts all joined someone else is not listed). */
  list = (agent?: string) => this.select(this.db, agent ? "WHERE p.agent = $1" : "", agent ? [agent] : []);

  /** Sets (or with undefined clears, back to the derived role) a person's role; false when there is no such person. */
  setRole = async (id: string, role: string | undefined) =>
    (await this.db.run("UPDATE people SET role = $1 WHERE id = $2", [role ?? null, id])) > 0;

  /** Forgets a person and their accounts (they become new people, with the derived role, if they write again). */
  remove = (id: string) => this.db.transaction((tx) => removePerson(tx, id));

  /** A new one-time code for `/link` (an earlier one of the person's stops working). */
  async offerLink(personId: string): Promise<{ code: string; expiresAt: number }> {
    const code = Array.from({ length: CODE_LENGTH }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");
    const expiresAt = Date.now() + CODE_TTL_MS;
    await this.db.run(...upsert("link_codes", { personId, code, expiresAt }, ["personId"]));
    return { code, expiresAt };
  }

  /** `/link CODE`: the identity joins the code's person (unexpired, unused, same agent, `mayJoin` agrees), using it up.
   * A wrong code says nothing of whose it might be and counts against the sender (MAX_FAILURES, then LOCK_MS). */
  redeem(
    agent: string,
    { route, userId }: Pick<Identity, "route" | "userId">,
    code: string,
    mayJoin: (person: Person) => boolean,
  ): Promise<LinkOutcome> {
    const [now, key] = [Date.now(), code.trim().toUpperCase()];
    return this.db.transaction(async (tx) => {
      const [sender] = await tx.rows<{ failures: number; failedAt: number | null; personId: string }>(
        `SELECT link_failures AS failures, link_failed_at AS "failedAt", person_id AS "personId"
           FROM person_identities WHERE ${OF_IDENTITY}`,
        [agent, route, userId],
      );
      if (!sender) return { refused: "wrong" };
      const recent = sender.failedAt !== null && now - sender.failedAt < LOCK_MS;
      if (recent && sender.failures >= MAX_FAILURES) return { refused: "locked" };
      await tx.run("DELETE FROM link_codes WHERE expires_at <= $1", [now]);
      const [owner] = await tx.rows<{ personId: string }>(
        `SELECT person_id AS "personId" FROM link_codes WHERE code = $1`,
        [key],
      );
      const target = owner && (await this.select(tx, "WHERE p.id = $1", [owner.personId]))[0];
      if (!target || target.agent !== agent) {
        const failures = recent ? sender.failures + 1 : 1;
        const counted = `UPDATE person_identities SET link_failures = $4, link_failed_at = $5 WHERE ${OF_IDENTITY}`;
        await tx.run(counted, [agent, route, userId, failures, now]);
        return { refused: "wrong" };
      }
      if (target.id === sender.personId) return { refused: "already" };
      if (!mayJoin(target)) return { refused: "refused" };
      // Used once: of two sending it at once, the one whose delete took the code joins (the other's finds it gone).
      if ((await tx.run("DELETE FROM link_codes WHERE code = $1", [key])) === 0) return { refused: "wrong" };
      const join = `UPDATE person_identities SET person_id = $4, link_failures = 0 WHERE ${OF_IDENTITY}`;
      await tx.run(join, [agent, route, userId, target.id]);
      // The account's old person, left with no account, is merged in: what was counted for it counts for the joined.
      // Its role is not: the joined person's stands, so sending someone's code never raises them.
      const old = sender.personId;
      if (!(await exists(tx, "SELECT 1 FROM person_identities WHERE person_id = $1", [old]))) {
        await tx.run("UPDATE model_usage SET person = $2 WHERE person = $1", [old, target.id]);
        await removePerson(tx, old);
      }
      return { joined: (await this.select(tx, "WHERE p.id = $1", [target.id]))[0] };
    });
  }

  /** `/unlink`: each of the person's accounts that joined by a link goes back to its own person; how many did. */
  unlink(personId: string): Promise<number> {
    return this.db.transaction(async (tx) => {
      const [person] = await this.select(tx, "WHERE p.id = $1", [personId]);
      let moved = 0;
      for (const { route, userId, name } of person?.identities ?? []) {
        const own = ownPersonId(person.agent, route, userId);
        if (own === personId) continue;
        const row = { id: own, agent: person.agent, name, createdAt: Date.now() };
        await tx.run(...insert("people", row, undefined, "ON CONFLICT DO NOTHING"));
        const back = `UPDATE person_identities SET person_id = $4 WHERE ${OF_IDENTITY}`;
        moved += await tx.run(back, [person.agent, route, userId, own]);
      }
      return moved;
    });
  }

  /** What is stored about a person, counted (`/whoami`, `pincer people show`). */
  async stored(person: Person): Promise<{ modelCalls: number; chats: number; jobs: number }> {
    const usage = "FROM model_usage WHERE person = $1";
    const owners = person.identities.flatMap((i) => [i.route, i.userId]);
    const pairs = person.identities.map((_, i) => `(owner_channel = $${2 * i + 1} AND owner_id = $${2 * i + 2})`);
    return {
      modelCalls: await total(this.db, `SELECT count(*) ${usage}`, [person.id]),
      chats: await total(this.db, `SELECT count(DISTINCT session_key) ${usage}`, [person.id]),
      jobs: pairs.length
        ? await total(this.db, `SELECT count(*) FROM cron_jobs WHERE ${pairs.join(" OR ")}`, owners)
        : 0,
    };
  }

  /** People (`where` on `p`) with their identities, in the order they came. */
  private async select(db: Sql, where: string, params: readonly unknown[]): Promise<Person[]> {
    const rows = await db.rows<Row>(
      `SELECT ${PERSON}, i.route, i.user_id AS "userId", i.name AS "identityName"
         FROM people p JOIN person_identities i ON i.person_id = p.id ${where}
        ORDER BY p.created_at, p.id, i.route, i.user_id`,
      params,
    );
    const people = new Map<string, Person>();
    for (const { route, userId, identityName, role, ...p } of rows) {
      const person = people.get(p.id) ?? { ...p, ...(role ? { role } : {}), identities: [] };
      person.identities.push({ route, userId, name: identityName });
      people.set(p.id, person);
    }
    return [...people.values()];
  }
}

/** The person's link codes, identities and row, in the caller's transaction; false when there was no such person. */
export async function removePerson(tx: Sql, id: string): Promise<boolean> {
  await tx.run("DELETE FROM link_codes WHERE person_id = $1", [id]);
  await tx.run("DELETE FROM person_identities WHERE person_id = $1", [id]);
  return (await tx.run("DELETE FROM people WHERE id = $1", [id])) > 0;
}
