import type pg from "pg";
import { transaction } from "./db.js";

/** What PostgreSQL's search folds, as SQLite's trigram index does with `remove_diacritics 1`: each Latin letter
 * with a diacritic becomes its base letter (é → e, Ø stays), and a combining accent on its own is dropped. As the two
 * arguments of translate(), so folding needs no extension (unaccent) and works in an index's expression. */
const folds = (first: number, last: number) =>
  Array.from({ length: last - first + 1 }, (_, i) => String.fromCodePoint(first + i))
    .map((letter) => [letter, letter.normalize("NFD").replace(/\p{M}/gu, "")])
    .filter(([letter, base]) => base.length === 1 && base !== letter);
const latin = [...folds(0x00c0, 0x024f), ...folds(0x1e00, 0x1eff)];
// translate() deletes the characters of `from` that have none in `to`: the combining accents go last.
const accents = Array.from({ length: 0x70 }, (_, i) => String.fromCodePoint(0x0300 + i)).join("");
const from = latin.map(([letter]) => letter).join("") + accents;
const to = latin.map(([, base]) => base).join("");

/** Creates `pincer_fold(text)`: immutable, so the search indexes can be built on what it returns. */
const CREATE_FOLD_FUNCTION = `
  CREATE OR REPLACE FUNCTION pincer_fold(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fold$ SELECT translate($1, '${from}', '${to}') $fold$;`;

/** The same tables as SQLite's (times in ms since the epoch, bigints); see early-migrations.ts for the rules. One named
 * as one of SQLite's does what that one does (test/schema-engines.test.ts checks the schemas end up alike). */
export const MIGRATIONS: Array<{ id: string; sql: string }> = [
  {
    id: "001-store",
    sql: `
      CREATE EXTENSION IF NOT EXISTS pg_trgm;
      CREATE TABLE conversations (
        id bigserial PRIMARY KEY,
        session_key text NOT NULL,
        created_at bigint NOT NULL,
        archived_at bigint,
        consolidated_through bigint NOT NULL DEFAULT 0
      );
      CREATE INDEX conversations_by_session ON conversations (session_key, archived_at);
      -- One open conversation per chat, whichever process creates it.
      CREATE UNIQUE INDEX conversations_one_open ON conversations (session_key) WHERE archived_at IS NULL;
      CREATE TABLE messages (
        id bigserial PRIMARY KEY,
        conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
        content text,
        tool_calls text,
        tool_call_id text,
        tokens integer NOT NULL,
        created_at bigint NOT NULL
      );
      CREATE INDEX messages_by_conversation ON messages (conversation_id, id);
      CREATE INDEX messages_search ON messages USING gin (content gin_trgm_ops) WHERE role IN ('user', 'assistant');
      CREATE TABLE inbox (
        id text PRIMARY KEY,
        seq bigserial,
        session_key text NOT NULL,
        payload text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done')),
        received_at bigint NOT NULL,
        starts integer NOT NULL DEFAULT 0,
        model_tries integer NOT NULL DEFAULT 0,
        model_failed_at bigint
      );
      CREATE INDEX inbox_pending ON inbox (received_at, seq) WHERE status = 'pending';
      CREATE INDEX inbox_done ON inbox (received_at) WHERE status = 'done';
      CREATE TABLE outbox (
        id bigserial PRIMARY KEY,
        channel text NOT NULL,
        chat_key text NOT NULL,
        payload text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'dead')),
        parts_sent integer NOT NULL DEFAULT 0,
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at bigint NOT NULL DEFAULT 0,
        last_error text,
        created_at bigint NOT NULL,
        finished_at bigint
      );
      CREATE INDEX outbox_pending ON outbox (channel, chat_key, id) WHERE status = 'pending';
      CREATE INDEX outbox_finished ON outbox (status, finished_at);
      CREATE TABLE turn_steps (
        id bigserial PRIMARY KEY,
        inbox_id text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('assistant', 'started', 'result')),
        call_id text,
        payload text,
        created_at bigint NOT NULL
      );
      CREATE INDEX turn_steps_inbox ON turn_steps (inbox_id, id);
      CREATE TABLE tool_audit (
        id bigserial PRIMARY KEY,
        session_key text NOT NULL,
        tool text NOT NULL,
        arguments text NOT NULL,
        result text NOT NULL,
        ok boolean NOT NULL,
        duration_ms integer NOT NULL,
        created_at bigint NOT NULL
      );
      CREATE INDEX tool_audit_by_session ON tool_audit (session_key, id);
      CREATE INDEX tool_audit_by_time ON tool_audit (created_at);
      CREATE TABLE pairing_requests (
        channel text NOT NULL,
        user_id text NOT NULL,
        seq bigserial,
        user_name text NOT NULL,
        code text NOT NULL,
        created_at bigint NOT NULL,
        expires_at bigint NOT NULL,
        told_at bigint,
        PRIMARY KEY (channel, user_id)
      );
      CREATE UNIQUE INDEX pairing_by_code ON pairing_requests (channel, code);
      CREATE TABLE approved_users (
        channel text NOT NULL,
        user_id text NOT NULL,
        user_name text NOT NULL,
        approved_at bigint NOT NULL,
        PRIMARY KEY (channel, user_id)
      );
      CREATE TABLE cron_jobs (
        id text PRIMARY KEY,
        name text,
        message text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('at', 'every', 'cron')),
        at_ms bigint,
        every_seconds bigint,
        anchor_ms bigint,
        cron_expr text,
        tz text NOT NULL,
        channel text NOT NULL,
        chat_id text NOT NULL,
        thread_id text,
        session_key text NOT NULL,
        is_group integer NOT NULL,
        created_at bigint NOT NULL,
        next_run_at bigint NOT NULL,
        last_run_at bigint,
        last_delivery_id text,
        owner_channel text,
        owner_id text,
        paused_at bigint
      );
      CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at) WHERE paused_at IS NULL;
      CREATE INDEX cron_jobs_by_session ON cron_jobs (session_key, next_run_at);
      CREATE INDEX cron_jobs_by_owner ON cron_jobs (owner_channel, owner_id);
      CREATE TABLE helper_runs (
        id text PRIMARY KEY,
        seq bigserial,
        session_key text NOT NULL,
        label text,
        task text NOT NULL,
        model text NOT NULL,
        status text NOT NULL,
        origin text NOT NULL,
        started_at bigint NOT NULL,
        finished_at bigint,
        result text
      );
      CREATE INDEX helper_runs_by_status ON helper_runs (status, started_at);
      CREATE TABLE memory_entries (
        id bigserial PRIMARY KEY,
        session_key text NOT NULL,
        conversation_id bigint NOT NULL,
        first_message_id bigint NOT NULL,
        last_message_id bigint NOT NULL,
        period_start bigint NOT NULL,
        period_end bigint NOT NULL,
        text text NOT NULL,
        tokens integer NOT NULL,
        created_at bigint NOT NULL
      );
      CREATE INDEX memory_entries_by_conversation ON memory_entries (conversation_id, id);
      CREATE INDEX memory_entries_by_session ON memory_entries (session_key, id);
      CREATE INDEX memory_entries_search ON memory_entries USING gin (text gin_trgm_ops);
      CREATE TABLE memory_file_paragraphs (id serial PRIMARY KEY, text text NOT NULL);
      CREATE TABLE memory_file_state (id integer PRIMARY KEY CHECK (id = 1), hash text NOT NULL, modified_at bigint NOT NULL);
    `,
  },
  {
    // A pending reply's parts sent, counted beside its row as SQLite does (see its 013-outbox-progress).
    id: "002-outbox-progress",
    sql: `CREATE TABLE outbox_progress (
            id bigint PRIMARY KEY REFERENCES outbox (id) ON DELETE CASCADE,
            parts_sent integer NOT NULL
          );`,
  },
  {
    id: "003-outbox-message-ids",
    sql: `
      ALTER TABLE outbox ADD COLUMN message_ids text;
      ALTER TABLE outbox_progress ADD COLUMN message_ids text;
    `,
  },
  {
    id: "004-approvals",
    sql: `
      CREATE TABLE approvals (
        id text PRIMARY KEY,
        session_key text NOT NULL,
        turn_key text NOT NULL,
        tool_call_id text NOT NULL,
        tool text NOT NULL,
        summary text NOT NULL,
        remember text NOT NULL,
        decider text,
        created_at bigint NOT NULL,
        expires_at bigint NOT NULL,
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'allowed', 'denied', 'expired')),
        choice text CHECK (choice IN ('once', 'always', 'deny')),
        decided_by text,
        decided_at bigint,
        prompt_outbox_id bigint,
        UNIQUE (turn_key, tool_call_id)
      );
      CREATE INDEX approvals_by_state ON approvals (state, created_at);
      CREATE TABLE always_allowed (
        session_key text NOT NULL,
        entry text NOT NULL,
        added_by text NOT NULL,
        added_at bigint NOT NULL,
        PRIMARY KEY (session_key, entry)
      );
    `,
  },
  {
    id: "005-model-usage",
    sql: `CREATE TABLE model_usage (
            id bigserial PRIMARY KEY,
            session_key text NOT NULL,
            kind text NOT NULL,
            model text NOT NULL,
            prompt_tokens integer NOT NULL,
            completion_tokens integer NOT NULL,
            cached_tokens integer NOT NULL,
            estimated integer NOT NULL,
            cost double precision,
            created_at bigint NOT NULL
          );
          CREATE INDEX model_usage_by_time ON model_usage (created_at);`,
  },
  {
    id: "006-chat-models",
    sql: `CREATE TABLE chat_models (
            session_key text PRIMARY KEY,
            model text NOT NULL,
            chosen_by text NOT NULL,
            chosen_at bigint NOT NULL
          );`,
  },
  { id: "007-inbox-draft", sql: "ALTER TABLE inbox ADD COLUMN draft text;" },
  {
    // Search folds accents as SQLite's does ("cafe" finds "café"): the trigram indexes are built on folded text.
    id: "008-search-folds-accents",
    sql: `${CREATE_FOLD_FUNCTION}
      DROP INDEX messages_search;
      CREATE INDEX messages_search ON messages USING gin (pincer_fold(content) gin_trgm_ops) WHERE role IN ('user', 'assistant');
      DROP INDEX memory_entries_search;
      CREATE INDEX memory_entries_search ON memory_entries USING gin (pincer_fold(text) gin_trgm_ops);`,
  },
  {
    // What test/schema-engines.test.ts found SQLite had and PostgreSQL lacked.
    id: "009-as-sqlite",
    sql: `
      ALTER TABLE cron_jobs ALTER COLUMN is_group SET DEFAULT 0;
      ALTER TABLE helper_runs ADD CONSTRAINT helper_runs_status_check
        CHECK (status IN ('running', 'done', 'failed', 'timeout', 'cancelled', 'interrupted'));`,
  },
  {
    // Several agents (SQLite's 019-agents): usage and each agent's MEMORY.md index by agent; the index is rebuilt.
    id: "010-agents",
    sql: `
      ALTER TABLE model_usage ADD COLUMN agent text NOT NULL DEFAULT 'main';
      CREATE INDEX model_usage_by_agent ON model_usage (agent, created_at);
      DELETE FROM memory_file_paragraphs;
      ALTER TABLE memory_file_paragraphs ADD COLUMN agent text NOT NULL;
      DROP TABLE memory_file_state;
      CREATE TABLE memory_file_state (agent text PRIMARY KEY, hash text NOT NULL, modified_at bigint NOT NULL);`,
  },
  {
    id: "011-chat-voice",
    sql: `CREATE TABLE chat_voice (
            session_key text PRIMARY KEY,
            mode text NOT NULL CHECK (mode IN ('off', 'auto', 'always')),
            chosen_by text NOT NULL,
            chosen_at bigint NOT NULL
          );`,
  },
  { id: "012-usage-person", sql: "ALTER TABLE model_usage ADD COLUMN person text;" },
  {
    id: "013-prompt-head",
    sql: `
      ALTER TABLE conversations ADD COLUMN trimmed_through bigint NOT NULL DEFAULT 0;
      ALTER TABLE conversations ADD COLUMN summaries_through bigint NOT NULL DEFAULT 0;
      ALTER TABLE conversations ADD COLUMN prompt_memory text;
      UPDATE conversations SET trimmed_through = consolidated_through,
        summaries_through = coalesce((SELECT max(id) FROM memory_entries e WHERE e.conversation_id = conversations.id), 0);
    `,
  },
  {
    id: "014-job-runs",
    sql: `CREATE TABLE job_runs (
            id text PRIMARY KEY,
            job_id text NOT NULL,
            session_key text NOT NULL,
            trigger text NOT NULL,
            scheduled_at bigint NOT NULL,
            fired_at bigint NOT NULL,
            finished_at bigint,
            outcome text NOT NULL,
            prompt_tokens bigint NOT NULL DEFAULT 0,
            completion_tokens bigint NOT NULL DEFAULT 0,
            cost double precision,
            tool_calls integer NOT NULL DEFAULT 0,
            delivered text,
            reason text
          );
          CREATE INDEX job_runs_by_job ON job_runs (job_id, fired_at);
          CREATE INDEX job_runs_by_time ON job_runs (fired_at);
          ALTER TABLE model_usage ADD COLUMN run_id text;
          CREATE INDEX model_usage_by_run ON model_usage (run_id) WHERE run_id IS NOT NULL;
          ALTER TABLE cron_jobs ADD COLUMN paused_reason text;
          ALTER TABLE cron_jobs ADD COLUMN run_requested_at bigint;
          ALTER TABLE cron_jobs ADD COLUMN run_count integer NOT NULL DEFAULT 0;
          ALTER TABLE cron_jobs ADD COLUMN failures integer NOT NULL DEFAULT 0;
          ALTER TABLE cron_jobs ADD COLUMN max_runs integer;
          ALTER TABLE cron_jobs ADD COLUMN ends_at bigint;
          ALTER TABLE cron_jobs ADD COLUMN run_tokens bigint;
          ALTER TABLE cron_jobs ADD COLUMN run_cost double precision;
          ALTER TABLE cron_jobs ADD COLUMN day_tokens bigint;
          ALTER TABLE cron_jobs ADD COLUMN day_cost double precision;`,
  },
  {
    id: "015-people",
    sql: `CREATE TABLE people (
            id text PRIMARY KEY,
            agent text NOT NULL,
            name text NOT NULL,
            role text,
            created_at bigint NOT NULL
          );
          CREATE TABLE person_identities (
            agent text NOT NULL,
            route text NOT NULL,
            user_id text NOT NULL,
            person_id text NOT NULL,
            name text NOT NULL,
            link_failures integer NOT NULL DEFAULT 0,
            link_failed_at bigint,
            PRIMARY KEY (agent, route, user_id)
          );
          CREATE INDEX person_identities_by_person ON person_identities (person_id);
          CREATE TABLE link_codes (
            person_id text PRIMARY KEY,
            code text NOT NULL UNIQUE,
            expires_at bigint NOT NULL
          );`,
  },
  { id: "016-job-run-text", sql: "ALTER TABLE job_runs ADD COLUMN message text;" },
  { id: "017-job-run-owner", sql: "ALTER TABLE job_runs ADD COLUMN owner_id text;" },
];

/** Any number, the same in every process: two processes starting at once migrate one after the other. */
const MIGRATION_LOCK = 7_390_025;

export function migrate(pool: pg.Pool, migrations = MIGRATIONS): Promise<void> {
  return transaction(pool, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await tx.query("CREATE TABLE IF NOT EXISTS store_migrations (id text PRIMARY KEY, applied_at bigint NOT NULL)");
    const { rows } = await tx.query<{ id: string }>("SELECT id FROM store_migrations");
    const applied = new Set(rows.map((row) => row.id));
    for (const migration of migrations) {
      if (applied.has(migration.id)) continue;
      await tx.query(migration.sql);
      await tx.query("INSERT INTO store_migrations (id, applied_at) VALUES ($1, $2)", [migration.id, Date.now()]);
    }
  });
}
