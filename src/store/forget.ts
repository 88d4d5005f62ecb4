import { agentSessionKey, type InboundMessage, parseSessionKey, routeOf } from "../bus/types.js";
import { chatKeyOf } from "./journal.js";
import { type Person, removePerson } from "./people.js";
import { type Sql, SqlGroup } from "./sql.js";
import { escapeLike } from "./sqlite/fts-query.js";

/** Rows of a direct chat (by its session key), child tables first. */
const OF_SESSION = [
  "DELETE FROM turn_steps WHERE inbox_id IN (SELECT id FROM inbox WHERE session_key = $1)",
  "DELETE FROM messages WHERE conversation_id IN (SELECT id FROM conversations WHERE session_key = $1)",
  ...["memory_entries", "conversations", "inbox", "tool_audit", "approvals", "always_allowed", "chat_models"],
  ...["chat_voice", "helper_runs", "job_runs", "cron_jobs", "model_usage"],
].map((table) => (table.startsWith("DELETE") ? table : `DELETE FROM ${table} WHERE session_key = $1`));

const OWNED = "FROM cron_jobs WHERE owner_channel = $1 AND owner_id = $2";

/** Tables whose rows a person's words or their account's reach (PostgreSQL rewrites them whole: VACUUM FULL). */
const REWRITTEN =
  "messages, memory_entries, conversations, inbox, outbox, outbox_progress, turn_steps, tool_audit, \
approvals, always_allowed, helper_runs, cron_jobs, job_runs, model_usage, memory_file_paragraphs, memory_file_state, \
people, person_identities, link_codes, approved_users, pairing_requests";

/** `/forget`: everything stored of a person: their direct chats (history, summaries, inbox and outbox, audit, jobs and
 * runs, usage, choices), their own words and inbox rows in groups (the groups' summaries and replies stay), their
 * space's MEMORY.md index, approvals, accounts and link codes. Then the bytes go: SQLite has secure_delete, merges its
 * full-text indexes, VACUUMs and truncates its WAL; PostgreSQL runs VACUUM FULL (its WAL keeps old pages until
 * recycled: docs/security.md). Returns the direct chats' keys. */
export class SqlForgetting extends SqlGroup {
  constructor(
    db: Sql,
    /** Drops what a process holds of the deleted rows in memory (the conversations' history cache). */
    private readonly forgotten: () => void,
  ) {
    super(db);
  }

  async forget(person: Person): Promise<string[]> {
    const { db } = this;
    const own = new Set(person.identities.map((i) => `${i.route}:${i.userId}`));
    const mine = (msg: InboundMessage) => own.has(`${routeOf(msg)}:${msg.senderId}`);
    const inbox = await db.rows<{ id: string; key: string; payload: string }>(
      `SELECT id, session_key AS key, payload FROM inbox`,
    );
    const groups = new Set<string>();
    const sessions = new Set<string>();
    const theirsInGroups: string[] = [];
    /** Their jobs' runs and texts: a run's own message carries its job's text into a group's inbox and history. */
    const [runs, reminders] = [new Set<string>(), new Set<string>()];
    for (const row of inbox) {
      const msg = JSON.parse(row.payload) as InboundMessage;
      if (msg.isGroup) groups.add(row.key);
      if (mine(msg)) msg.isGroup ? theirsInGroups.push(row.id) : sessions.add(row.key);
      const run = msg.channel === "system" && msg.run.kind === "cron" ? msg.run : undefined;
      if (run?.userId !== undefined && own.has(`${routeOf(parseSessionKey(row.key) ?? msg)}:${run.userId}`)) {
        theirsInGroups.push(row.id);
        runs.add(msg.id);
        if (run.reminder) reminders.add(run.reminder);
      }
    }
    // A chat where someone wrote as a group member is a group's, even when its inbox rows are gone.
    const grouped = await db.rows<{ key: string }>(
      `SELECT DISTINCT c.session_key AS key FROM conversations c JOIN messages m ON m.conversation_id = c.id
        WHERE m.role = 'user' AND m.content LIKE '[% (id %)]%'`,
    );
    for (const { key } of grouped) groups.add(key);
    const used = await db.rows<{ key: string }>(
      `SELECT DISTINCT session_key AS key FROM model_usage WHERE person = $1`,
      [person.id],
    );
    // A Telegram private chat is the user's own id; a Discord DM is found by its inbox rows or its usage.
    for (const { route, userId } of person.identities)
      if (route.startsWith("telegram")) sessions.add(agentSessionKey(person.agent, `${route}:${userId}`));
    for (const { key } of used) if (!groups.has(key)) sessions.add(key);
    const texts = await db.rows<{ message: string }>(
      "SELECT message FROM job_runs WHERE message IS NOT NULL AND id IN (SELECT run_id FROM model_usage WHERE person = $1)",
      [person.id],
    );
    for (const { route, userId } of person.identities)
      texts.push(...(await db.rows<{ message: string }>(`SELECT message ${OWNED}`, [route, userId])));
    for (const { message } of texts) reminders.add(message);
    await db.transaction(async (tx) => {
      for (const id of runs) await tx.run("DELETE FROM job_runs WHERE id = $1", [id]);
      // Their jobs' texts in groups' histories: the runs' own messages, `Scheduled … <text>` (scheduler/run-message.ts).
      for (const key of groups) {
        for (const text of reminders) {
          await tx.run(
            `DELETE FROM messages WHERE role = 'user' AND content LIKE $1 ESCAPE '\\' AND conversation_id IN
               (SELECT id FROM conversations WHERE session_key = $2)`,
            [`Scheduled %${escapeLike(text)}%`, key],
          );
        }
      }
      // Their runs of jobs gone since (a group's one-time reminder): found by the calls made for them; they keep its text.
      await tx.run("DELETE FROM job_runs WHERE id IN (SELECT run_id FROM model_usage WHERE person = $1)", [person.id]);
      for (const key of sessions) await forgetChat(tx, key);
      for (const id of theirsInGroups) {
        await tx.run("DELETE FROM turn_steps WHERE inbox_id = $1", [id]);
        await tx.run("DELETE FROM inbox WHERE id = $1", [id]);
      }
      for (const { route, userId } of person.identities) {
        // A group's user messages open with `[Name (id USER)]` (agent/context.ts userContent).
        const ofRoute = agentSessionKey(person.agent, `${route}:`);
        await tx.run(
          `DELETE FROM messages WHERE role = 'user' AND content LIKE $1 ESCAPE '\\' AND conversation_id IN
             (SELECT id FROM conversations WHERE substr(session_key, 1, length($2)) = $2)`,
          [`[% (id ${escapeLike(userId)})]%`, ofRoute],
        );
        // The runs made for them on this bot, of jobs still here or gone since.
        const runsFor = "DELETE FROM job_runs WHERE owner_id = $1 AND substr(session_key, 1, length($2)) = $2";
        await tx.run(runsFor, [userId, ofRoute]);
        await tx.run(`DELETE FROM job_runs WHERE job_id IN (SELECT id ${OWNED})`, [route, userId]);
        await tx.run(`DELETE ${OWNED}`, [route, userId]);
        for (const table of ["approved_users", "pairing_requests"])
          await tx.run(`DELETE FROM ${table} WHERE channel = $1 AND user_id = $2`, [route, userId]);
      }
      await tx.run("DELETE FROM model_usage WHERE person = $1", [person.id]);
      await tx.run("DELETE FROM memory_file_state WHERE agent = $1", [person.id]);
      const paragraphs = db.engine === "sqlite" ? "memory_file_fts" : "memory_file_paragraphs";
      await tx.run(`DELETE FROM ${paragraphs} WHERE agent = $1`, [person.id]);
      await removePerson(tx, person.id);
    });
    this.forgotten();
    await erase(db);
    return [...sessions];
  }
}

async function forgetChat(tx: Sql, key: string): Promise<void> {
  for (const sql of OF_SESSION) await tx.run(sql, [key]);
  const chat = parseSessionKey(key);
  if (!chat) return;
  const outbox = "FROM outbox WHERE channel = $1 AND chat_key = $2";
  await tx.run(`DELETE FROM outbox_progress WHERE id IN (SELECT id ${outbox})`, [routeOf(chat), chatKeyOf(chat)]);
  await tx.run(`DELETE ${outbox}`, [routeOf(chat), chatKeyOf(chat)]);
}
/** What was deleted leaves the database files too (see SqlForgetting). */
async function erase(db: Sql): Promise<void> {
  if (db.engine === "postgres") return void (await db.run(`VACUUM FULL ${REWRITTEN}`));
  for (const fts of ["messages_fts", "entries_fts", "memory_file_fts"])
    await db.run(`INSERT INTO ${fts} (${fts}) VALUES ('optimize')`);
  await db.run("VACUUM");
  await db.run("PRAGMA wal_checkpoint(TRUNCATE)");
}
