import { EXPIRED_BUTTON } from "./buttons.js";
import type { TapHandler } from "./types.js";

/** The bus's one tap handler: each tap goes to the handler of its data's prefix (`a:`, `b:`…). */
export function routeTaps(routes: Record<string, TapHandler | undefined>): TapHandler {
  return async (tap) => {
    const prefix = Object.keys(routes).find((p) => tap.data.startsWith(p));
    const handler = prefix === undefined ? undefined : routes[prefix];
    return handler ? handler(tap) : { text: EXPIRED_BUTTON };
  };
}
