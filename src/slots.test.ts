import { describe, expect, it } from "vitest";
import { Slots } from "./slots.js";

describe("Slots", () => {
  it("lets `size` holders in at once, the next in arrival order, and a waiter give up without taking a slot", async () => {
    const slots = new Slots(1);
    const never = new AbortController().signal;
    const first = await slots.acquire(never);
    const order: string[] = [];
    const impatient = new AbortController();
    const gaveUp = slots.acquire(impatient.signal).catch(() => order.push("gave up"));
    const second = slots.acquire(never).then((release) => {
      order.push("second");
      return release;
    });
    impatient.abort(new Error("too slow"));
    await gaveUp;
    first();
    first(); // a second release of the same slot frees nothing more
    const release = await second;
    const third = slots.acquire(never).then(() => order.push("third"));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).toEqual(["gave up", "second"]);
    release();
    await third;
    expect(order).toEqual(["gave up", "second", "third"]);
  });
});
