import { describe, expect, it } from "vitest";
import { ModelError } from "../llm/model.js";
import { giveUpNotice, modelFailure } from "./notices.js";

describe("notices about the model", () => {
  it("offers 'try again in a moment' only for failures that may heal", () => {
    const failed = (err: ModelError) => modelFailure({ channel: "telegram", chatId: "1" }, err)?.text;
    expect(failed(new ModelError("the model endpoint answered 503"))).toBe(
      "Sorry, the model endpoint answered 503. Please try again in a moment.",
    );
    expect(failed(new ModelError("the model endpoint refused the API key (401): check OPENAI_API_KEY", true))).toBe(
      "Sorry, the model endpoint refused the API key (401): check OPENAI_API_KEY.",
    );
  });

  it("says why a message was set aside, how long the outage lasted, and what to do", () => {
    expect(giveUpNotice("outage", "the model endpoint could not be reached", 26 * 3_600_000)).toBe(
      "Sorry, the model has not answered for 26 h (the model endpoint could not be reached), so I have set your message aside. Please send it again when the model is back.",
    );
    expect(giveUpNotice("outage", "x", 90 * 60_000)).toContain("for 90 min");
    expect(giveUpNotice("refused", "the model endpoint answered 500: boom", 60_000)).toBe(
      "Sorry, I could not get an answer to your message: the model endpoint answered 500: boom. I have set it aside; send it again rephrased, or /new to start over.",
    );
    expect(giveUpNotice("refused", "the model did not answer within 5 s", 60_000, true)).toBe(
      "Sorry, a scheduled task could not run: the model did not answer within 5 s. I have set it aside.",
    );
  });
});
