import { describe, expect, it } from "vitest";
import { withTurnFacts } from "../turn-facts.js";
import { renderChatLog } from "./sections.js";

describe("the page's messages", () => {
  it("show what the person wrote, without the time line pincer appends for the model", () => {
    const text = withTurnFacts("water <the> plants", Date.UTC(2026, 11, 2, 8, 15), "UTC");
    expect(text).toContain("[pincer metadata: current time Wed 2026-12-02 08:15 (UTC)]");
    const html = renderChatLog([{ kind: "message", role: "user", text, at: 0 }]);
    expect(html).toBe('<li class="msg user"><div class="text">water &lt;the&gt; plants</div></li>');
  });
});
