import { describe, expect, it } from "vitest";
import { inOrderPerKey } from "./in-order.js";

describe("inOrderPerKey", () => {
  it("runs one key's tasks in order, other keys beside them, and goes on after a failure", async () => {
    const inOrder = inOrderPerKey();
    const events: string[] = [];
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = inOrder("a", async () => {
      await held;
      events.push("a1");
      throw new Error("a1 failed");
    });
    const second = inOrder("a", async () => events.push("a2"));
    await inOrder("b", async () => events.push("b1"));
    expect(events).toEqual(["b1"]);
    release();
    await expect(first).rejects.toThrow("a1 failed");
    await second;
    expect(events).toEqual(["b1", "a1", "a2"]);
  });
});
