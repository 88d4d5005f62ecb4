import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "./database.js";
import { SqlitePairing } from "./pairing.js";

describe("pairing store", () => {
  const db = openDatabase(":memory:");
  let now = 1_000_000;
  const pairing = new SqlitePairing(db, { now: () => now, ttlMs: 60_000, maxPending: 10 });
  afterEach(() => {
    db.exec("DELETE FROM pairing_requests; DELETE FROM approved_users;");
  });

  it("gives one stranger one open code: asking again returns the same one until it expires", async () => {
    const first = await pairing.request("telegram", "99", "Eve");
    expect(first).toMatchObject({ isNew: true, userId: "99" });
    expect(first.code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
    await pairing.markTold("telegram", "99");
    now += 1000;
    const again = await pairing.request("telegram", "99", "Eve");
    expect(again).toMatchObject({ isNew: false, code: first.code, toldAt: now - 1000 });
    expect(await pairing.pending()).toHaveLength(1);
    now += 60_000;
    const later = await pairing.request("telegram", "99", "Eve");
    expect(later.isNew).toBe(true);
    expect(await pairing.approve("telegram", first.code)).toBeUndefined();
  });

  it("under a flood the oldest open request makes room, so the newest stranger still gets a code", async () => {
    const codes: string[] = [];
    for (let i = 0; i < 25; i++) {
      now += 1;
      codes.push((await pairing.request("telegram", `s${i}`, `stranger ${i}`)).code);
    }
    const open = await pairing.pending();
    expect(open).toHaveLength(10);
    expect(open.map((p) => p.userId)).toEqual(Array.from({ length: 10 }, (_, i) => `s${i + 15}`));
    expect((await pairing.approve("telegram", codes[24]))?.user.userId).toBe("s24");
    expect(await pairing.approve("telegram", codes[0])).toBeUndefined();
    // Another channel's cap is its own.
    expect((await pairing.request("discord", "d1", "d")).isNew).toBe(true);
    expect(await pairing.pending()).toHaveLength(10);
  });

  it("approves case-insensitively on the right channel only, and revokes", async () => {
    const { code } = await pairing.request("telegram", "7", "Ann");
    expect(await pairing.approve("discord", code)).toBeUndefined();
    expect((await pairing.approve("telegram", code.toLowerCase()))?.user.userId).toBe("7");
    expect(await pairing.isApproved("telegram", "7")).toBe(true);
    expect(await pairing.approved()).toEqual([{ channel: "telegram", userId: "7", userName: "Ann" }]);
    expect(await pairing.revoke("telegram", "7")).toEqual({ revoked: true, pausedJobs: 0 });
    expect(await pairing.isApproved("telegram", "7")).toBe(false);
    expect(await pairing.revoke("telegram", "7")).toEqual({ revoked: false, pausedJobs: 0 });
  });
});
