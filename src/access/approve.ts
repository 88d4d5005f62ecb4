/** The channels whose strangers are given pairing codes. */
export type PairedChannel = "telegram" | "discord";

export function isPairedChannel(channel: string): channel is PairedChannel {
  return channel === "telegram" || channel === "discord";
}
