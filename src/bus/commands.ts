// Chat commands pincer answers itself: part of the bus contract, since channels offer them (Telegram's menu) and spot
// them (the console's /stop).
/** `takesArgument`: the command takes the rest of the line (`/model NAME`). */
export const COMMANDS = [
  { name: "new", description: "Start a fresh conversation (long-term memory is kept)" },
  { name: "stop", description: "Cancel the running turn" },
  { name: "status", description: "Show model, conversation size and queue" },
  { name: "help", description: "List the commands" },
  { name: "model", description: "List the models, or switch this chat: /model NAME", takesArgument: true },
  { name: "usage", description: "Tokens and cost today and this month" },
  { name: "voice", description: "Spoken replies here: /voice on, /voice off or /voice auto", takesArgument: true },
  { name: "jobs", description: "Your reminders and scheduled jobs, with buttons to run, pause or delete them" },
  { name: "whoami", description: "Who I take you for: your role, your accounts, what is stored about you" },
  { name: "link", description: "Join your accounts: /link gives a code, /link CODE uses it", takesArgument: true },
  { name: "unlink", description: "Separate your linked accounts again" },
  { name: "forget", description: "Delete everything stored about you (asks once more)" },
] as const satisfies ReadonlyArray<{ name: string; description: string; takesArgument?: true }>;
export type CommandName = (typeof COMMANDS)[number]["name"];

/** `/stop`, `/stop@MyBot` and ` /STOP ` are the stop command; `/stop now` and `/stopwatch` are not; `/model x` is. */
export function parseCommand(text: string): CommandName | undefined {
  const match = /^\/([a-z]+)(?:@\w+)?(\s+\S[\s\S]*)?$/i.exec(text.trim());
  const command = COMMANDS.find((c) => c.name === match?.[1].toLowerCase());
  return command && (match?.[2] === undefined || "takesArgument" in command) ? command.name : undefined;
}

/** What follows a command's name (`/model gpt-4o` gives "gpt-4o"); empty when nothing does. */
export function commandArgument(text: string): string {
  return /^\/\S+\s+([\s\S]*)$/.exec(text.trim())?.[1].trim() ?? "";
}

export function helpText(): string {
  return ["Commands:", ...COMMANDS.map((c) => `/${c.name} — ${c.description}`)].join("\n");
}

/** Why a turn was aborted by /stop (not a shutdown, after which it resumes). */
export class StopRequested extends Error {}
