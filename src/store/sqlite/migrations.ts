import { earlyMigrations, type Migration } from "./early-migrations.js";

export const migrations: Migration[] = [
  ...earlyMigrations,
  {
    // Consolidation (old turns summarised into entries) and full-text search over memory.
    id: "010-memory",
    formerly: "110-memory",
    sql: `
      -- Messages up to this id were summarised into memory_entries and leave the prompt (they stay here).
      ALTER TABLE conversations ADD COLUMN consolidated_through INTEGER NOT NULL DEFAULT 0;
      -- Old rows, counted as characters / 4, undercount Chinese and emoji: count them high until consolidated.
      UPDATE messages SET tokens = 2 * (length(coalesce(content, '')) + length(coalesce(tool_calls, ''))) + 8;

      CREATE TABLE memory_entries (
        id INTEGER PRIMARY KEY,
        session_key TEXT NOT NULL,
        conversation_id INTEGER NOT NULL,
        first_message_id INTEGER NOT NULL,
        last_message_id INTEGER NOT NULL,
        period_start INTEGER NOT NULL,
        period_end INTEGER NOT NULL,
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX memory_entries_by_session ON memory_entries (session_key, id);
      CREATE INDEX memory_entries_by_conversation ON memory_entries (conversation_id, id);

      -- Trigram indexes match any script (Chinese, Japanese, emoji) as substrings of three characters.
      CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, content='messages', content_rowid='id', tokenize='trigram remove_diacritics 1'
      );
      CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
        WHEN new.role IN ('user', 'assistant') AND coalesce(new.content, '') != ''
        BEGIN INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content); END;
      CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
        WHEN old.role IN ('user', 'assistant') AND coalesce(old.content, '') != ''
        BEGIN INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content); END;
      CREATE TRIGGER messages_fts_update_old AFTER UPDATE OF content, role ON messages
        WHEN old.role IN ('user', 'assistant') AND coalesce(old.content, '') != ''
        BEGIN INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content); END;
      CREATE TRIGGER messages_fts_update_new AFTER UPDATE OF content, role ON messages
        WHEN new.role IN ('user', 'assistant') AND coalesce(new.content, '') != ''
        BEGIN INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content); END;
      INSERT INTO messages_fts (rowid, content)
        SELECT id, content FROM messages WHERE role IN ('user', 'assistant') AND coalesce(content, '') != '';

      CREATE VIRTUAL TABLE entries_fts USING fts5(
        text, content='memory_entries', content_rowid='id', tokenize='trigram remove_diacritics 1'
      );
      CREATE TRIGGER entries_fts_insert AFTER INSERT ON memory_entries
        BEGIN INSERT INTO entries_fts (rowid, text) VALUES (new.id, new.text); END;
      CREATE TRIGGER entries_fts_delete AFTER DELETE ON memory_entries
        BEGIN INSERT INTO entries_fts (entries_fts, rowid, text) VALUES ('delete', old.id, old.text); END;

      -- Only MEMORY.md's search index (the owner edits the file), rebuilt whenever its hash changes.
      CREATE VIRTUAL TABLE memory_file_fts USING fts5(text, tokenize='trigram remove_diacritics 1');
      CREATE TABLE memory_file_state (id INTEGER PRIMARY KEY CHECK (id = 1), hash TEXT NOT NULL, modified_at INTEGER NOT NULL);
    `,
  },
  {
    // FTS5 writes a segment per commit: a turn only marks its messages, indexed in batches (before every search, and in
    // the background). A message not yet indexed only loses its mark (an FTS5 'delete' of it would corrupt the index).
    id: "011-fts-deferred",
    formerly: "16-fts-deferred",
    sql: `
      CREATE TABLE messages_fts_pending (id INTEGER PRIMARY KEY);
      DROP TRIGGER messages_fts_insert;
      DROP TRIGGER messages_fts_delete;
      DROP TRIGGER messages_fts_update_old;
      DROP TRIGGER messages_fts_update_new;
      CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
        WHEN new.role IN ('user', 'assistant') AND coalesce(new.content, '') != ''
        BEGIN INSERT OR IGNORE INTO messages_fts_pending (id) VALUES (new.id); END;
      CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
          SELECT 'delete', old.id, old.content
           WHERE old.role IN ('user', 'assistant') AND coalesce(old.content, '') != ''
             AND NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE id = old.id);
        DELETE FROM messages_fts_pending WHERE id = old.id;
      END;
      -- One trigger, so taking the old text out always comes before marking the new one.
      CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, role ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content)
          SELECT 'delete', old.id, old.content
           WHERE old.role IN ('user', 'assistant') AND coalesce(old.content, '') != ''
             AND NOT EXISTS (SELECT 1 FROM messages_fts_pending WHERE id = old.id);
        DELETE FROM messages_fts_pending WHERE id = old.id;
        INSERT OR IGNORE INTO messages_fts_pending (id)
          SELECT new.id WHERE new.role IN ('user', 'assistant') AND coalesce(new.content, '') != '';
      END;
    `,
  },
  {
    // A message the model keeps failing on is given up after bounded tries or time, counted across restarts.
    id: "012-inbox-model-waits",
    formerly: "23-inbox-model-waits",
    sql: `
      ALTER TABLE inbox ADD COLUMN model_tries INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE inbox ADD COLUMN model_failed_at INTEGER;
    `,
  },
  {
    // SQLite rewrites a whole row on any update: a pending reply's part count lives beside it, not in it (quadratic).
    id: "013-outbox-progress",
    formerly: "29-outbox-progress",
    sql: `CREATE TABLE outbox_progress (
            id INTEGER PRIMARY KEY REFERENCES outbox (id) ON DELETE CASCADE,
            parts_sent INTEGER NOT NULL
          );`,
  },
  {
    // The platform's ids of what a row posted (or, beside a pending one, its parts so far), for later edits.
    id: "014-outbox-message-ids",
    formerly: "25-outbox-message-ids",
    sql: `
      ALTER TABLE outbox ADD COLUMN message_ids TEXT;
      ALTER TABLE outbox_progress ADD COLUMN message_ids TEXT;
    `,
  },
  {
    id: "015-approvals",
    formerly: "25-approvals",
    sql: `
      CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        session_key TEXT NOT NULL,
        turn_key TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        summary TEXT NOT NULL,
        remember TEXT NOT NULL,
        decider TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'allowed', 'denied', 'expired')),
        choice TEXT CHECK (choice IN ('once', 'always', 'deny')),
        decided_by TEXT,
        decided_at INTEGER,
        prompt_outbox_id INTEGER,
        UNIQUE (turn_key, tool_call_id)
      );
      CREATE INDEX approvals_by_state ON approvals (state, created_at);
      CREATE TABLE always_allowed (
        session_key TEXT NOT NULL,
        entry TEXT NOT NULL,
        added_by TEXT NOT NULL,
        added_at INTEGER NOT NULL,
        PRIMARY KEY (session_key, entry)
      );
    `,
  },
  {
    id: "016-model-usage",
    formerly: "27-model-usage",
    sql: `CREATE TABLE model_usage (
            id INTEGER PRIMARY KEY,
            session_key TEXT NOT NULL,
            kind TEXT NOT NULL,
            model TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            cached_tokens INTEGER NOT NULL,
            estimated INTEGER NOT NULL,
            cost REAL,
            created_at INTEGER NOT NULL
          );
          CREATE INDEX model_usage_by_time ON model_usage (created_at);`,
  },
  {
    id: "017-chat-models",
    formerly: "27-chat-models",
    sql: `CREATE TABLE chat_models (
            session_key TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            chosen_by TEXT NOT NULL,
            chosen_at INTEGER NOT NULL
          );`,
  },
  // The draft a reply is written in, so that after a crash the next start finishes it instead of posting another.
  { id: "018-inbox-draft", formerly: "26-inbox-draft", sql: "ALTER TABLE inbox ADD COLUMN draft TEXT;" },
  {
    // Several agents: session keys carry theirs (agentSessionKey); usage sums and each agent's MEMORY.md index need it
    // beside them. The index is rebuilt from the file at the next search.
    id: "019-agents",
    sql: `
      ALTER TABLE model_usage ADD COLUMN agent TEXT NOT NULL DEFAULT 'main';
      CREATE INDEX model_usage_by_agent ON model_usage (agent, created_at);
      DROP TABLE memory_file_fts;
      CREATE VIRTUAL TABLE memory_file_fts USING fts5(text, agent UNINDEXED, tokenize='trigram remove_diacritics 1');
      DROP TABLE memory_file_state;
      CREATE TABLE memory_file_state (agent TEXT PRIMARY KEY, hash TEXT NOT NULL, modified_at INTEGER NOT NULL);
    `,
  },
  {
    id: "020-chat-voice",
    sql: `CREATE TABLE chat_voice (
            session_key TEXT PRIMARY KEY,
            mode TEXT NOT NULL CHECK (mode IN ('off', 'auto', 'always')),
            chosen_by TEXT NOT NULL,
            chosen_at INTEGER NOT NULL
          );`,
  },
  // The person a model call was made for (`channel:userId`), so a guest's /usage shows only their own.
  { id: "021-usage-person", sql: "ALTER TABLE model_usage ADD COLUMN person TEXT;" },
  {
    // Where the prompt's history begins (moved at trim points) and what its head shows, so successive requests share
    // their prefix (the server's cache). Existing chats start where consolidation left them.
    id: "022-prompt-head",
    sql: `
      ALTER TABLE conversations ADD COLUMN trimmed_through INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE conversations ADD COLUMN summaries_through INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE conversations ADD COLUMN prompt_memory TEXT;
      UPDATE conversations SET trimmed_through = consolidated_through,
        summaries_through = coalesce((SELECT max(id) FROM memory_entries e WHERE e.conversation_id = conversations.id), 0);
    `,
  },
  {
    id: "023-job-runs",
    sql: `CREATE TABLE job_runs (
            id TEXT PRIMARY KEY,
            job_id TEXT NOT NULL,
            session_key TEXT NOT NULL,
            trigger TEXT NOT NULL,
            scheduled_at INTEGER NOT NULL,
            fired_at INTEGER NOT NULL,
            finished_at INTEGER,
            outcome TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL,
            tool_calls INTEGER NOT NULL DEFAULT 0,
            delivered TEXT,
            reason TEXT
          );
          CREATE INDEX job_runs_by_job ON job_runs (job_id, fired_at);
          CREATE INDEX job_runs_by_time ON job_runs (fired_at);
          ALTER TABLE model_usage ADD COLUMN run_id TEXT;
          CREATE INDEX model_usage_by_run ON model_usage (run_id) WHERE run_id IS NOT NULL;
          ALTER TABLE cron_jobs ADD COLUMN paused_reason TEXT;
          ALTER TABLE cron_jobs ADD COLUMN run_requested_at INTEGER;
          ALTER TABLE cron_jobs ADD COLUMN run_count INTEGER NOT NULL DEFAULT 0;
          ALTER TABLE cron_jobs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
          ALTER TABLE cron_jobs ADD COLUMN max_runs INTEGER;
          ALTER TABLE cron_jobs ADD COLUMN ends_at INTEGER;
          ALTER TABLE cron_jobs ADD COLUMN run_tokens INTEGER;
          ALTER TABLE cron_jobs ADD COLUMN run_cost REAL;
          ALTER TABLE cron_jobs ADD COLUMN day_tokens INTEGER;
          ALTER TABLE cron_jobs ADD COLUMN day_cost REAL;`,
  },
  {
    // People, their identities (route + platform user id) and /link's codes. A person's id is their first identity's
    // (agentSessionKey of `route:userId`), so what is stored for `channel:userId` (usage) stays theirs.
    id: "024-people",
    sql: `CREATE TABLE people (
            id TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            name TEXT NOT NULL,
            role TEXT,
            created_at INTEGER NOT NULL
          );
          CREATE TABLE person_identities (
            agent TEXT NOT NULL,
            route TEXT NOT NULL,
            user_id TEXT NOT NULL,
            person_id TEXT NOT NULL,
            name TEXT NOT NULL,
            link_failures INTEGER NOT NULL DEFAULT 0,
            link_failed_at INTEGER,
            PRIMARY KEY (agent, route, user_id)
          );
          CREATE INDEX person_identities_by_person ON person_identities (person_id);
          CREATE TABLE link_codes (
            person_id TEXT PRIMARY KEY,
            code TEXT NOT NULL UNIQUE,
            expires_at INTEGER NOT NULL
          );`,
  },
  // A run keeps its job's text, so the history of a finished or deleted job still says what it was.
  { id: "025-job-run-text", sql: "ALTER TABLE job_runs ADD COLUMN message TEXT;" },
  // Whom a run was for (the job owner's user id), so /forget finds the runs of their jobs gone since.
  { id: "026-job-run-owner", sql: "ALTER TABLE job_runs ADD COLUMN owner_id TEXT;" },
];
