import { setTimeout as delay } from "node:timers/promises";
import type { ButtonInteraction, Interaction } from "discord.js";
import type { Logger } from "pino";
import { usableButtons } from "../../src/bus/buttons.js";
import type { Switchboard } from "../../src/bus/switchboard.js";
import { type ButtonTap, errorText, type OutboundMessage, type TapAnswer } from "../../src/bus/types.js";
import { MessageFlags } from "./library.js";
import { conversationOf } from "./policy.js";

/** Discord drops an interaction not answered within 3 s; past this, it is answered first and told later. */
const ANSWER_WITHIN_MS = 2500;

/** Action rows of grey buttons, custom_id = data; [] for none (an edit then removes them). */
export function componentsOf(msg: Pick<OutboundMessage, "buttons">) {
  return usableButtons(msg.buttons).map((row) => ({
    type: 1,
    components: row.map((b) => ({ type: 2, style: 2, label: b.label, custom_id: b.data })),
  }));
}

/** A button interaction as a tap on a message of the channel (or thread) it is in. */
export function tapOf(interaction: ButtonInteraction): ButtonTap {
  const channel = interaction.channel;
  const parentId = channel?.isThread() ? (channel.parentId ?? undefined) : undefined;
  const { chatId, threadId } = conversationOf({ channelId: interaction.channelId, parentId });
  const label = labelIn(interaction.message.components, interaction.customId);
  return {
    id: interaction.id,
    channel: "discord",
    chatId,
    ...(threadId ? { threadId } : {}),
    senderId: interaction.user.id,
    senderName: interaction.inCachedGuild() ? interaction.member.displayName : interaction.user.displayName,
    ...(interaction.guildId ? { guildId: interaction.guildId } : {}),
    isGroup: interaction.guildId !== null,
    messageId: interaction.message.id,
    data: interaction.customId,
    ...(label ? { label } : {}),
    receivedAt: interaction.createdTimestamp || Date.now(),
  };
}

function labelIn(rows: ReadonlyArray<{ toJSON(): unknown }>, customId: string): string | undefined {
  type Row = { components?: Array<{ custom_id?: string; label?: string }> };
  return rows.flatMap((row) => (row.toJSON() as Row).components ?? []).find((c) => c.custom_id === customId)?.label;
}

/** Hands a press to the bus and answers within Discord's 3 s: the text as an ephemeral reply, or a deferred update
 * (nothing shown); a slower handler's text follows the deferral as an ephemeral follow-up. */
export function createTapHandler(deps: { bus: Switchboard; allowedChannels: string[]; log: Logger; account?: string }) {
  const { bus, allowedChannels, log, account } = deps;
  return async (interaction: Interaction): Promise<void> => {
    if (!interaction.isButton()) return;
    const tap = { ...tapOf(interaction), ...(account ? { account } : {}) };
    // discord.allowedChannels as for messages: the channel, or the thread itself, is listed.
    const listed = [tap.chatId, tap.threadId].some((id) => id !== undefined && allowedChannels.includes(id));
    const outside = tap.isGroup && allowedChannels.length > 0 && !listed;
    const answering = outside ? Promise.resolve<TapAnswer>({}) : bus.publishTap(tap);
    try {
      const answer = await Promise.race([answering, delay(ANSWER_WITHIN_MS, undefined, { ref: false })]);
      if (answer?.text) await interaction.reply({ content: answer.text.slice(0, 2000), flags: MessageFlags.Ephemeral });
      else await interaction.deferUpdate();
      if (answer) return;
      const { text } = await answering;
      if (text) await interaction.followUp({ content: text.slice(0, 2000), flags: MessageFlags.Ephemeral });
    } catch (err) {
      log.debug({ err: errorText(err) }, "could not answer a button press");
    }
  };
}
