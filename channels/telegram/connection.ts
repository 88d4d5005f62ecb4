import type { Transformer } from "grammy";
import type { ChannelStatus } from "../../src/bus/channel.js";
import { HttpError } from "./library.js";

/** Watches each raw Bot API call (under the retries): an answer is connected; a network error, 5xx or 401 is down. */
export function trackConnection(): { transformer: Transformer; status: () => ChannelStatus; stopped(): void } {
  let status: ChannelStatus = { state: "connecting" };
  const transformer: Transformer = async (prev, method, payload, signal) => {
    try {
      const result = await prev(method, payload, signal);
      if (result.ok || (result.error_code >= 400 && result.error_code < 500 && result.error_code !== 401))
        status = { state: "connected" };
      else if (result.error_code === 401)
        status = { state: "down", detail: "Telegram rejected TELEGRAM_BOT_TOKEN (401)" };
      else status = { state: "down", detail: `Telegram answered ${result.error_code} ${result.description}` };
      return result;
    } catch (err) {
      if (err instanceof HttpError && !signal?.aborted) status = { state: "down", detail: err.message };
      throw err;
    }
  };
  return {
    transformer,
    status: () => status,
    stopped() {
      status = { state: "stopped" };
    },
  };
}
