import { describe, expect, it } from "vitest";
import type { ChatMessage } from "./model.js";
import { withCacheMarkers } from "./model.js";

const mark = { type: "ephemeral" };

describe("cache_control markers", () => {
  it("marks the end of the system prompt and the end of the request, nothing else, leaving the input untouched", () => {
    const messages: ChatMessage[] = [
      { role: "system", content: "rules" },
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "a", type: "function", function: { name: "x", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "a", content: "result" },
    ];
    const copy = structuredClone(messages);
    expect(withCacheMarkers(messages)).toEqual([
      { role: "system", content: [{ type: "text", text: "rules", cache_control: mark }] },
      messages[1],
      messages[2],
      { role: "tool", tool_call_id: "a", content: [{ type: "text", text: "result", cache_control: mark }] },
    ]);
    expect(messages).toEqual(copy);
  });

  it("marks a user message with a picture on its text, and leaves what has no text alone", () => {
    const picture = { type: "image_url" as const, image_url: { url: "data:," } };
    const user: ChatMessage = { role: "user", content: [{ type: "text", text: "look" }, picture] };
    expect(withCacheMarkers([{ role: "system", content: "" }, user])).toEqual([
      { role: "system", content: "" },
      { role: "user", content: [{ type: "text", text: "look", cache_control: mark }, picture] },
    ]);
    expect(withCacheMarkers([{ role: "user", content: [picture] }])).toEqual([{ role: "user", content: [picture] }]);
  });
});
