import { pino } from "pino";
import type { Tool, ToolContext } from "../../src/tools/tool.js";
import { testBus } from "./bus.js";

/** What a tool is handed when the model calls it in the console chat `chat`: a fresh bus, a silent log. */
export function toolContext(chat: string, workspace: string, signal = new AbortController().signal): ToolContext {
  const sessionKey = `console:${chat}`;
  return {
    sessionKey,
    inbound: {
      id: "1",
      channel: "console",
      chatId: chat,
      senderId: "u",
      senderName: "u",
      text: "",
      media: [],
      isGroup: false,
      mentionsBot: true,
      receivedAt: 0,
      sessionKey,
    },
    workspace,
    seesOwnerMemory: true,
    signal,
    bus: testBus(),
    log: pino({ level: "silent" }),
  };
}

export interface Span {
  name: string;
  start: number;
  end: number;
}

/** A tool that sleeps and records when it ran, to prove overlap or exclusivity with timestamps. */
export function sleepyTool(name: string, flags: { readOnly?: boolean }, spans: Span[], ms = 150): Tool {
  return {
    name,
    description: `sleeps ${ms} ms and echoes its input`,
    parameters: {
      type: "object",
      properties: { value: { type: "string" } },
      required: ["value"],
      additionalProperties: false,
    },
    ...flags,
    async execute(args) {
      const start = performance.now();
      await new Promise((resolve) => setTimeout(resolve, ms));
      spans.push({ name: `${name}:${String(args.value)}`, start, end: performance.now() });
      return `${name} got ${String(args.value)}`;
    },
  };
}

export function overlaps(a: Span, b: Span): boolean {
  return a.start < b.end && b.start < a.end;
}
