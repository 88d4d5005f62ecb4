import type { ChannelName } from "./types.js";

/** A platform adapter: publishes inbound messages to the bus and renders outbound ones for its channel. */
export interface Channel {
  readonly name: ChannelName;
  /** Connects and subscribes; resolves once the channel is receiving. */
  start(): Promise<void>;
  /** Disconnects; pending sends are finished or left in the outbox for the next start. */
  stop(): Promise<void>;
}
