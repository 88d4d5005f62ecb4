/** Schema changes, applied once each in order and recorded by id. Never edit an applied migration: add one at the end.
 * Ids are `NNN-name`, numbered in order (migrations.test.ts checks it); PostgreSQL's (postgres/schema.ts) likewise. */
export interface Migration {
  id: string;
  /** The id it was recorded under before ids were numbered in order: a home made then is upgraded in place. */
  formerly?: string;
  sql: string;
}

/** The first migrations, settled long ago and kept apart so the list that grows stays short. */
export const earlyMigrations: Migration[] = [
  {
    id: "001-core",
    sql: `
      CREATE TABLE conversations (
        id INTEGER PRIMARY KEY,
        session_key TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        archived_at INTEGER
      );
      CREATE INDEX conversations_by_session ON conversations (session_key, archived_at);

      CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations (id),
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
        content TEXT,
        tool_calls TEXT,
        tool_call_id TEXT,
        tokens INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX messages_by_conversation ON messages (conversation_id, id);

      CREATE TABLE inbox (
        id TEXT PRIMARY KEY,
        session_key TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done')),
        received_at INTEGER NOT NULL
      );
      CREATE INDEX inbox_pending ON inbox (status, received_at);

      CREATE TABLE outbox (
        id INTEGER PRIMARY KEY,
        channel TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent')),
        created_at INTEGER NOT NULL
      );
      CREATE INDEX outbox_pending ON outbox (channel, status, id);

      CREATE TABLE tool_audit (
        id INTEGER PRIMARY KEY,
        session_key TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        result TEXT NOT NULL,
        ok INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
    `,
  },
  {
    id: "002-pairing",
    formerly: "010-pairing",
    sql: `
      CREATE TABLE pairing_requests (
        channel TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT NOT NULL,
        code TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (channel, user_id)
      );
      CREATE UNIQUE INDEX pairing_by_code ON pairing_requests (channel, code);

      CREATE TABLE approved_users (
        channel TEXT NOT NULL,
        user_id TEXT NOT NULL,
        user_name TEXT NOT NULL,
        approved_at INTEGER NOT NULL,
        PRIMARY KEY (channel, user_id)
      );
    `,
  },
  {
    id: "003-cron",
    formerly: "020-cron",
    sql: `
      CREATE TABLE cron_jobs (
        id TEXT PRIMARY KEY,
        name TEXT,
        message TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('at', 'every', 'cron')),
        at_ms INTEGER,
        every_seconds INTEGER,
        anchor_ms INTEGER,
        cron_expr TEXT,
        tz TEXT NOT NULL,
        channel TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        thread_id TEXT,
        session_key TEXT NOT NULL,
        is_group INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        next_run_at INTEGER NOT NULL,
        last_run_at INTEGER,
        last_delivery_id TEXT
      );
      CREATE INDEX cron_jobs_due ON cron_jobs (next_run_at);
      CREATE INDEX cron_jobs_by_session ON cron_jobs (session_key);
    `,
  },
  {
    id: "004-helper-runs",
    formerly: "030-helper-runs",
    sql: `
      CREATE TABLE helper_runs (
        id TEXT PRIMARY KEY,
        session_key TEXT NOT NULL,
        label TEXT,
        task TEXT NOT NULL,
        model TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'timeout', 'cancelled', 'interrupted')),
        origin TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        finished_at INTEGER,
        result TEXT
      );
      CREATE INDEX helper_runs_by_status ON helper_runs (status, started_at);
      `,
  },
  {
    id: "005-outbox-delivery",
    formerly: "120-outbox-delivery",
    // Per-chat order, parts sent, retries, dead letters. SQLite cannot change a CHECK in place: the table is rebuilt.
    sql: `
      CREATE TABLE outbox_new (
        id INTEGER PRIMARY KEY,
        channel TEXT NOT NULL,
        chat_key TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'dead')),
        parts_sent INTEGER NOT NULL DEFAULT 0,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        finished_at INTEGER
      );
      INSERT INTO outbox_new (id, channel, chat_key, payload, status, created_at, finished_at)
        SELECT id, channel,
               json_extract(payload, '$.chatId') || coalesce(':thread:' || json_extract(payload, '$.threadId'), ''),
               payload, status, created_at, CASE WHEN status = 'sent' THEN created_at END
        FROM outbox;
      DROP TABLE outbox;
      ALTER TABLE outbox_new RENAME TO outbox;
      CREATE INDEX outbox_pending ON outbox (channel, status, chat_key, id);
      CREATE INDEX outbox_finished ON outbox (status, finished_at);
    `,
  },
  {
    // when a stranger was last sent their pairing code (the gate repeats it only now and then).
    id: "006-pairing-told",
    formerly: "9b-pairing-told",
    sql: "ALTER TABLE pairing_requests ADD COLUMN told_at INTEGER;",
  },
  {
    // Who created a job (it runs only while they have access). Older jobs: a Telegram private chat's id is its user's,
    // the console is the owner; the rest keep no owner and do not run.
    id: "007-cron-owner",
    formerly: "9b-cron-owner",
    sql: `
      ALTER TABLE cron_jobs ADD COLUMN owner_channel TEXT;
      ALTER TABLE cron_jobs ADD COLUMN owner_id TEXT;
      ALTER TABLE cron_jobs ADD COLUMN paused_at INTEGER;
      UPDATE cron_jobs SET owner_channel = 'telegram', owner_id = chat_id WHERE channel = 'telegram' AND is_group = 0;
      UPDATE cron_jobs SET owner_channel = 'console', owner_id = 'console' WHERE channel = 'console';
      CREATE INDEX cron_jobs_by_owner ON cron_jobs (owner_channel, owner_id);
    `,
  },
  {
    // how often a message's turn was started; one started twice without finishing is not run again.
    id: "008-inbox-starts",
    formerly: "9b-inbox-starts",
    sql: "ALTER TABLE inbox ADD COLUMN starts INTEGER NOT NULL DEFAULT 0;",
  },
  {
    id: "009-turn-steps",
    formerly: "170-turn-steps",
    // A turn's journal as it happens (model replies, calls started, their results): a crashed turn resumes from here.
    sql: `
      CREATE TABLE turn_steps (
        id INTEGER PRIMARY KEY,
        inbox_id TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('assistant', 'started', 'result')),
        call_id TEXT,
        payload TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX turn_steps_inbox ON turn_steps (inbox_id, id);
    `,
  },
];
