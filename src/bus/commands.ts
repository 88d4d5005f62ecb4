/**
 * Chat commands pincer answers itself instead of sending them to the model: part of the bus
 * contract, since channels offer them (Telegram's command menu) and spot them (the console's /stop).
 */
export type CommandName = "new" | "stop" | "status" | "help";

export const COMMANDS: Array<{ name: CommandName; description: string }> = [
  { name: "new", description: "Start a fresh conversation (long-term memory is kept)" },
  { name: "stop", description: "Cancel the running turn" },
  { name: "status", description: "Show model, conversation size and queue" },
  { name: "help", description: "List the commands" },
];

/** `/stop`, `/stop@MyBot` and ` /STOP ` are the stop command; `/stop now` and `/stopwatch` are not. */
export function parseCommand(text: string): CommandName | undefined {
  const match = /^\/([a-z]+)(?:@\w+)?$/i.exec(text.trim());
  const name = match?.[1].toLowerCase();
  return COMMANDS.find((c) => c.name === name)?.name;
}

export function helpText(): string {
  return ["Commands:", ...COMMANDS.map((c) => `/${c.name} — ${c.description}`)].join("\n");
}
