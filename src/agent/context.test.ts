import { describe, expect, it } from "vitest";
import type { StoredMessage } from "../store/store.js";
import { formatDay, formatLocal } from "../time-zone.js";
import { toChatMessage } from "./context.js";
import { ChatForms } from "./turn-context.js";

describe("local dates", () => {
  const lateNewYearsEveUtc = Date.UTC(2026, 0, 1, 23, 30);

  it("gives the day in the user's zone, not the server's", () => {
    expect(formatDay(lateNewYearsEveUtc, "UTC")).toBe("2026-01-01");
    expect(formatDay(lateNewYearsEveUtc, "Asia/Tokyo")).toBe("2026-01-02");
    expect(formatDay(lateNewYearsEveUtc, "America/Los_Angeles")).toBe("2026-01-01");
  });

  it("gives weekday, date and 24-hour time for the prompt", () => {
    expect(formatLocal(new Date(lateNewYearsEveUtc), "UTC")).toBe("Thu 2026-01-01 23:30");
    expect(formatLocal(lateNewYearsEveUtc, "Asia/Tokyo")).toBe("Fri 2026-01-02 08:30");
  });

  it("formats each minute anew, and every instant of one minute the same, whatever came between", () => {
    const second = 1000;
    expect(formatLocal(lateNewYearsEveUtc + 59 * second, "UTC")).toBe("Thu 2026-01-01 23:30");
    expect(formatLocal(lateNewYearsEveUtc + 60 * second, "UTC")).toBe("Thu 2026-01-01 23:31");
    expect(formatLocal(lateNewYearsEveUtc + 60 * second + 1, "UTC")).toBe("Thu 2026-01-01 23:31");
    expect(formatDay(lateNewYearsEveUtc - 86_400_000, "UTC")).toBe("2025-12-31");
    expect(formatLocal(lateNewYearsEveUtc + 61 * second, "UTC")).toBe("Thu 2026-01-01 23:31");
    expect(formatLocal(lateNewYearsEveUtc + 61 * second, "Asia/Kathmandu")).toBe("Fri 2026-01-02 05:16");
    expect(() => formatLocal(Number.NaN, "UTC")).toThrow(RangeError);
  });
});

describe("history sent back to the model", () => {
  it("mends tool calls stored with broken arguments, so the server does not refuse the conversation", () => {
    const message = toChatMessage({
      role: "assistant",
      content: null,
      toolCalls: [
        { id: "a", name: "write_file", arguments: '{"path": "notes.txt",' },
        { id: "b", name: "read_file", arguments: { path: "x" } as unknown as string },
        { id: "c", name: "read_file", arguments: '{"path": "ok"}' },
      ],
    });
    expect(
      message.role === "assistant" && message.tool_calls?.map((c) => c.type === "function" && c.function.arguments),
    ).toEqual(["{}", '{"path":"x"}', '{"path": "ok"}']);
  });
});

describe("history forms kept across turns", () => {
  it("maps a stored row once: later turns send the same object, counted as stored; a row read anew is mapped anew", () => {
    const forms = new ChatForms();
    const row: StoredMessage = {
      role: "assistant",
      content: null,
      tokens: 7,
      toolCalls: [{ id: "a", name: "x", arguments: "{" }],
    };
    const first = forms.of(row);
    expect(first).toEqual(toChatMessage(row));
    expect(forms.of(row)).toBe(first);
    expect(forms.tokens.get(first)).toBe(7);
    const again = forms.of({ ...row, tokens: 9 });
    expect(again).not.toBe(first);
    expect(forms.tokens.get(again)).toBe(9);
  });
});
