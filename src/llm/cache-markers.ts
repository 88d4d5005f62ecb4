import type OpenAI from "openai";

// model.ts's ChatMessage, named again here: model.ts imports this file, and a type import back would close a cycle.
type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** Anthropic's marker: the prefix up to and including this part is written to (and read from) its cache. */
const MARK = { type: "ephemeral" } as const;

/**
 * The request with `cache_control` at its stable boundaries, for endpoints that cache only where told (Anthropic's
 * models, directly or through OpenRouter): the end of the system prompt (the tools and instructions, the same in every
 * request) and the end of the request (the next one starts with all of it). Two of the four markers allowed.
 */
export function withCacheMarkers(messages: ChatMessage[]): ChatMessage[] {
  const last = messages.length - 1;
  return messages.map((message, i) =>
    (i === 0 && message.role === "system") || i === last ? marked(message) : message,
  );
}

function marked(message: ChatMessage): ChatMessage {
  if (message.role === "function") return message;
  const { content } = message;
  if (typeof content === "string" && content !== "") {
    const part: { type: "text"; text: string; cache_control: typeof MARK } = {
      type: "text",
      text: content,
      cache_control: MARK,
    };
    return { ...message, content: [part] } as ChatMessage;
  }
  if (!Array.isArray(content) || content.length === 0) return message;
  // The last text part takes the marker: a picture after it stays unmarked, as the prefix ends with the text.
  const at = content.findLastIndex((part) => part.type === "text");
  if (at < 0) return message;
  const parts = content.map((part, i) => (i === at ? { ...part, cache_control: MARK } : part));
  return { ...message, content: parts } as ChatMessage;
}
