import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type Logger, pino } from "pino";

const OPTIONS = { base: undefined, timestamp: pino.stdTimeFunctions.isoTime };

/** JSON lines on stderr (journald keeps them); stdout stays free for `pincer agent` and `pincer chat`. */
export function createLogger(level: string): Logger {
  return pino({ level, ...OPTIONS }, pino.destination(2));
}

/** The terminal is a conversation: `pincer chat` and `pincer agent` keep the full log in `PINCER_HOME/logs/chat.log`
 * and say on stderr only warnings and errors, in words, so nothing of the log lands between the lines of the chat. */
export function createTerminalLogger(level: string, home: string): Logger {
  const dir = join(home, "logs");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const streams = [
    { level: level as pino.Level, stream: pino.destination({ dest: join(dir, "chat.log"), sync: false }) },
    { level: "warn" as const, stream: inWords((line) => process.stderr.write(line)) },
  ];
  return pino({ level, ...OPTIONS }, pino.multistream(streams, { dedupe: false }));
}

/** A log stream that turns each JSON line into `pincer: warning: message (file: reason)`. */
export function inWords(write: (line: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const json of chunk.toString("utf8").split("\n").filter(Boolean)) write(`${wordsOf(json)}\n`);
      done();
    },
  });
}

/** One log line in words; a line that is not JSON is passed on as it is. */
export function wordsOf(json: string): string {
  let entry: { level?: number; msg?: string; file?: string; reason?: string; err?: { message?: string } };
  try {
    entry = JSON.parse(json);
  } catch {
    return json;
  }
  const level = (entry.level ?? 0) >= 50 ? "error" : "warning";
  const why = [entry.file, entry.reason ?? entry.err?.message].filter(Boolean).join(": ");
  return `pincer: ${level}: ${entry.msg ?? "(no message)"}${why ? ` (${why})` : ""}`;
}
