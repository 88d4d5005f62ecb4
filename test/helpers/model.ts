import { afterAll, beforeAll, beforeEach } from "vitest";
import { type ChatRequest, createFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.js";

/**
 * The fake model for a whole test file: call once at the top. It listens from the file's first
 * hook (so `url` is known in later beforeAll hooks and in tests), closes after the file, and each
 * test starts with an empty request log. Queued replies and the responder are the tests' to set.
 */
export function fakeModelForFile(): FakeOpenAI {
  const model = createFakeOpenAI();
  beforeAll(() => model.listen());
  afterAll(() => model.close());
  beforeEach(() => {
    model.requests.length = 0;
  });
  return model;
}

/** The console chat a request to the model is for, read from its system prompt's runtime lines. */
export function chatOf(request: ChatRequest): string {
  return /Conversation: console:(\S+)/.exec(String(request.messages[0]?.content))?.[1] ?? "";
}
