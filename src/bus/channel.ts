/** How a channel's connection to its platform is doing, for `/healthz` and the control page. */
export interface ChannelStatus {
  state: "connected" | "connecting" | "down" | "stopped";
  /** What went wrong last, in words a person can act on. */
  detail?: string;
}

/** A platform adapter: publishes inbound messages to the bus and renders outbound ones for its channel. */
export interface Channel {
  /** Its route (routeOf): the platform's name, `telegram@ACCOUNT` for a bot of config `accounts`. */
  readonly name: string;
  /** Resolves once the channel is receiving. */
  start(): Promise<void>;
  /** Disconnects; pending sends are finished or left in the outbox for the next start. */
  stop(): Promise<void>;
  /** A channel without it counts as connected while started. */
  status?(): ChannelStatus;
}
