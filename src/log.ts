import { type Logger, pino } from "pino";

/** JSON lines on stderr (journald keeps them); stdout stays free for `pincer agent` and `pincer chat`. */
export function createLogger(level: string): Logger {
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination(2));
}
