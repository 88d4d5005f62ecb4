import { deliverToOf, type InboundMessage } from "../bus/types.js";
import type { ModelSetting } from "../config/file-schema.js";
import type { Model } from "../llm/model.js";
import type { Store } from "../store/store.js";

export interface ChatModelsDeps {
  /** PINCER_MODEL: what a chat uses until it chooses (and after `/model default`); agent.models: what it may choose. */
  config: { openai: { model: string }; agent: { models: readonly ModelSetting[] } };
  store: Store["chatModels"];
  /** Who may use `/model` (src/access: a role with `models`; not the built-in guest). */
  access: { mayChooseModel(msg: InboundMessage): boolean };
  /** The chain for a choice (undefined: the default's; fallbacks behind it), the context it takes, and whether its
   * servers take more now (asked when a turn does not fit `window`). */
  chain(choice: string | undefined): { model: Model; window: () => number; recheck?: () => Promise<boolean> };
}

/** Each chat's model: `/model` lists and switches it; every turn of the chat (its reminders too) uses it. */
export type ChatModels = ReturnType<typeof createChatModels>;

/** The chat a turn's model is chosen in: its conversation, or for the heartbeat the chat its answers go to. */
export function chatOf(msg: InboundMessage): string {
  return deliverToOf(msg) || msg.sessionKey;
}

/** The entry `/model ARG` means (by name or label, any case); "default" for the default; undefined: none. */
export function findModel(models: readonly ModelSetting[], arg: string): ModelSetting | "default" | undefined {
  const wanted = arg.trim().toLowerCase();
  if (wanted === "default") return "default";
  return models.find((m) => m.name.toLowerCase() === wanted || m.label?.trim().toLowerCase() === wanted);
}

// As code: shown as typed (no `*` taken for emphasis), and a tap copies it on Telegram.
const shown = (m: ModelSetting) => (m.label ? `${m.label.trim()} (\`${m.name}\`)` : `\`${m.name}\``);

export function modelList(defaultModel: string, models: readonly ModelSetting[], current: string): string {
  if (models.length === 0) {
    return `This chat uses ${defaultModel}, the only model configured. List more in agent.models (docs/configuration.md) to choose one per chat.`;
  }
  const first = models.find((m) => m.name === defaultModel && !m.baseUrl) ?? { name: defaultModel };
  const lines = [first, ...models.filter((m) => m !== first)].map(
    (m) => `- ${shown(m)}${m === first ? ", the default" : ""}${m.name === current ? "  ← this chat" : ""}`,
  );
  return ["Models (/model NAME switches this chat, /model default goes back):", ...lines].join("\n");
}

export function createChatModels(deps: ChatModelsDeps) {
  const defaultModel = deps.config.openai.model;
  const { models } = deps.config.agent;
  const current = async (msg: InboundMessage): Promise<{ name: string; chosen: boolean }> => {
    const stored = await deps.store.get(chatOf(msg));
    // A choice the config no longer lists falls back to the default (the row stays, harmless).
    const chosen = stored !== undefined && models.some((m) => m.name === stored);
    return { name: chosen ? (stored as string) : defaultModel, chosen };
  };
  return {
    current,
    async forTurn(msg: InboundMessage) {
      // Never fails a turn: a database that cannot say now fails the turn's own writes, visibly.
      const { name, chosen } = await current(msg).catch(() => ({ name: defaultModel, chosen: false }));
      return { name, ...deps.chain(chosen ? name : undefined) };
    },
    /** The answer to `/model` (no argument: the list) or `/model NAME`; a guest has no `/model`. */
    async answer(msg: InboundMessage, argument: string): Promise<string> {
      const now = await current(msg);
      if (!deps.access.mayChooseModel(msg)) {
        return `Only the owner can switch this chat's model (someone named in ${msg.channel.toUpperCase()}_ALLOW_FROM); it stays on ${now.name}.`;
      }
      if (!argument) return modelList(defaultModel, models, now.name);
      const found = models.length > 0 ? findModel(models, argument) : undefined;
      if (!found)
        return `There is no model "${argument.slice(0, 60)}" here.\n${modelList(defaultModel, models, now.name)}`;
      await deps.store.set(chatOf(msg), found === "default" ? undefined : found.name, msg.senderId);
      return found === "default"
        ? `This chat is back on the default model, ${defaultModel}, from the next message on.`
        : `This chat uses ${shown(found)} from the next message on.`;
    },
  };
}
