import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "./database.js";
import { PairingStore } from "./pairing.js";

describe("pairing store", () => {
  const db = openDatabase(":memory:");
  let now = 1_000_000;
  const pairing = new PairingStore(db, { now: () => now, ttlMs: 60_000, maxPending: 10 });
  afterEach(() => {
    db.exec("DELETE FROM pairing_requests; DELETE FROM approved_users;");
  });

  it("gives one stranger one open code: asking again returns the same one until it expires", () => {
    const first = pairing.request("telegram", "99", "Eve");
    expect(first).toMatchObject({ isNew: true, userId: "99" });
    expect(first.code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
    pairing.markTold("telegram", "99");
    now += 1000;
    const again = pairing.request("telegram", "99", "Eve");
    expect(again).toMatchObject({ isNew: false, code: first.code, toldAt: now - 1000 });
    expect(pairing.pending()).toHaveLength(1);
    now += 60_000;
    const later = pairing.request("telegram", "99", "Eve");
    expect(later.isNew).toBe(true);
    expect(pairing.approve("telegram", first.code)).toBeUndefined();
  });

  it("under a flood the oldest open request makes room, so the newest stranger still gets a code", () => {
    const codes = Array.from({ length: 25 }, (_, i) => {
      now += 1;
      return pairing.request("telegram", `s${i}`, `stranger ${i}`).code;
    });
    const open = pairing.pending();
    expect(open).toHaveLength(10);
    expect(open.map((p) => p.userId)).toEqual(Array.from({ length: 10 }, (_, i) => `s${i + 15}`));
    expect(pairing.approve("telegram", codes[24])?.userId).toBe("s24");
    expect(pairing.approve("telegram", codes[0])).toBeUndefined();
    // Another channel's cap is its own.
    expect(pairing.request("discord", "d1", "d").isNew).toBe(true);
    expect(pairing.pending()).toHaveLength(10);
  });

  it("approves case-insensitively on the right channel only, and revokes", () => {
    const { code } = pairing.request("telegram", "7", "Ann");
    expect(pairing.approve("discord", code)).toBeUndefined();
    expect(pairing.approve("telegram", code.toLowerCase())?.userId).toBe("7");
    expect(pairing.isApproved("telegram", "7")).toBe(true);
    expect(pairing.approved()).toEqual([{ channel: "telegram", userId: "7", userName: "Ann" }]);
    expect(pairing.revoke("telegram", "7")).toBe(true);
    expect(pairing.isApproved("telegram", "7")).toBe(false);
    expect(pairing.revoke("telegram", "7")).toBe(false);
  });
});
