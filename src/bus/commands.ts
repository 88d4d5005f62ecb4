// Chat commands pincer answers itself: part of the bus contract, since channels offer them (Telegram's menu) and spot
// them (the console's /stop).
export type CommandName = "new" | "stop" | "status" | "help" | "model" | "usage";

export const COMMANDS: Array<{ name: CommandName; description: string }> = [
  { name: "new", description: "Start a fresh conversation (long-term memory is kept)" },
  { name: "stop", description: "Cancel the running turn" },
  { name: "status", description: "Show model, conversation size and queue" },
  { name: "help", description: "List the commands" },
  { name: "model", description: "List the models, or switch this chat: /model NAME" },
  { name: "usage", description: "Tokens and cost today and this month" },
];

/** Commands that take the rest of the line: `/model NAME`. */
const WITH_ARGUMENT: ReadonlySet<CommandName> = new Set(["model"]);

/** `/stop`, `/stop@MyBot` and ` /STOP ` are the stop command; `/stop now` and `/stopwatch` are not; `/model x` is. */
export function parseCommand(text: string): CommandName | undefined {
  const match = /^\/([a-z]+)(?:@\w+)?(\s+\S[\s\S]*)?$/i.exec(text.trim());
  const name = COMMANDS.find((c) => c.name === match?.[1].toLowerCase())?.name;
  return name && (match?.[2] === undefined || WITH_ARGUMENT.has(name)) ? name : undefined;
}

/** What follows a command's name (`/model gpt-4o` gives "gpt-4o"); empty when nothing does. */
export function commandArgument(text: string): string {
  return /^\/\S+\s+([\s\S]*)$/.exec(text.trim())?.[1].trim() ?? "";
}

export function helpText(): string {
  return ["Commands:", ...COMMANDS.map((c) => `/${c.name} — ${c.description}`)].join("\n");
}
