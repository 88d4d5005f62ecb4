/** Why a turn was cut short when its conversation moved to another process of the cluster. */
export class ConversationMovedError extends Error {
  constructor(sessionKey: string) {
    super(`the conversation ${sessionKey} moved to another process`);
  }
}
