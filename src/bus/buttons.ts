import { type Button, type InboundMessage, sessionKeyOf, type TapHandler } from "./types.js";

/** What a tap is told when nothing here answers for its button any more. */
export const EXPIRED_BUTTON = "This button has expired.";

/** What both platforms take: Discord's 5 rows of 5, Telegram's 64 bytes of data; labels kept short. */
export const BUTTON_LIMITS = { rows: 5, perRow: 5, labelChars: 64, dataBytes: 64 } as const;

/** The buttons a channel can show: one without a label, or with data the platform would refuse (refusing the whole
 * message), is left out; long labels are cut; rows and buttons past the limits dropped. Producers validate first; this
 * keeps a message from being lost. */
export function usableButtons(rows: Button[][] | undefined): Button[][] {
  return (rows ?? [])
    .map((row) =>
      row
        .filter((b) => b.label.trim() !== "" && b.data !== "" && Buffer.byteLength(b.data) <= BUTTON_LIMITS.dataBytes)
        .slice(0, BUTTON_LIMITS.perRow)
        .map((b) => ({ label: [...b.label].slice(0, BUTTON_LIMITS.labelChars).join(""), data: b.data })),
    )
    .filter((row) => row.length > 0)
    .slice(0, BUTTON_LIMITS.rows);
}

/** The message's text with its buttons as lines of `[Label]`, for channels without buttons (terminal, web chat). */
export function withButtonLines(msg: { text: string; buttons?: Button[][] }): string {
  const lines = usableButtons(msg.buttons).map((row) => row.map((b) => `[${b.label}]`).join(" "));
  return [msg.text, ...lines].filter(Boolean).join("\n");
}

/** The bus's one tap handler: each tap goes to the handler of its data's prefix (`a:`, `b:`…). */
export function routeTaps(routes: Record<string, TapHandler | undefined>): TapHandler {
  return async (tap) => {
    const handler = Object.entries(routes).find(([prefix]) => tap.data.startsWith(prefix))?.[1];
    return handler ? handler(tap) : { text: EXPIRED_BUTTON };
  };
}

/** The data prefix of the message tool's buttons (`b:<row>.<column>`); the label is read from the platform. */
export const MESSAGE_BUTTON_PREFIX = "b:";

/** A tap on a message-tool button is what the tapper says to that chat, `[button] Label`, through the access gate and
 * the inbox's replay check like anything they type: a stranger's tap is refused, a replayed one taken once. */
export function messageButtonTaps(bus: { publishInbound(msg: InboundMessage): Promise<boolean> }): TapHandler {
  return async (tap) => {
    const { threadId, messageId, data, label, ...fields } = tap;
    if (!label) return { text: EXPIRED_BUTTON };
    await bus.publishInbound({
      ...fields,
      id: `tap:${tap.id}`,
      text: `[button] ${label}`,
      media: [],
      mentionsBot: true,
      sessionKey: sessionKeyOf(tap.channel, tap.chatId, threadId, tap.account),
    });
    return {};
  };
}
