import type { Button } from "./types.js";

/** What both platforms take: Discord's 5 rows of 5, Telegram's 64 bytes of data; labels kept short. */
/** What a tap is told when nothing here answers for its button any more. */
export const EXPIRED_BUTTON = "This button has expired.";

export const BUTTON_LIMITS = { rows: 5, perRow: 5, labelChars: 64, dataBytes: 64 } as const;

/**
 * The buttons a channel can show: a button without a label, or with data the platform would
 * refuse (which would refuse the whole message), is left out; long labels are cut; rows and
 * buttons past the limits are dropped. Producers validate first; this keeps a message from being lost.
 */
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
