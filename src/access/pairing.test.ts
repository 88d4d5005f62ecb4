import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../store/database.js";
import { checkAccess } from "./access.js";
import { PairingStore } from "./pairing.js";

describe("pairing and access", () => {
  const db = openDatabase(":memory:");
  let now = 1_000_000;
  const pairing = new PairingStore(db, { now: () => now, ttlMs: 60_000, maxPending: 2 });
  afterEach(() => {
    db.exec("DELETE FROM pairing_requests; DELETE FROM approved_users;");
  });
  const ask = (userId: string, allowFrom: string[] = []) =>
    checkAccess({ channel: "telegram", allowFrom, pairing, userId, userName: `user ${userId}` });

  it("lets allowlisted users and everyone under * through without a code", () => {
    expect(ask("42", ["1", "42"])).toEqual({ allowed: true });
    expect(ask("7", ["*"])).toEqual({ allowed: true });
    expect(pairing.pending()).toHaveLength(0);
  });

  it("gives a stranger a code once, and approval lets them in", () => {
    const first = ask("99");
    expect(first.allowed).toBe(false);
    const code = /code is ([A-Z2-9]{8})/.exec((first as { reply: string }).reply)?.[1] ?? "";
    expect(code).toHaveLength(8);
    expect(ask("99")).toEqual({ allowed: false });
    expect(pairing.approve("discord", code)).toBeUndefined();
    expect(pairing.approve("telegram", code.toLowerCase())?.userId).toBe("99");
    expect(ask("99")).toEqual({ allowed: true });
    expect(pairing.approved()).toEqual([{ channel: "telegram", userId: "99", userName: "user 99" }]);
  });

  it("expires codes and rate-limits open requests", () => {
    const code = pairing.request("telegram", "1", "a")?.code ?? "";
    expect(pairing.request("telegram", "2", "b")).toBeDefined();
    expect(pairing.request("telegram", "3", "c")).toBeUndefined();
    now += 61_000;
    expect(pairing.approve("telegram", code)).toBeUndefined();
    expect(pairing.request("telegram", "3", "c")).toBeDefined();
    expect(pairing.request("telegram", "1", "a")?.code).not.toBe(code);
  });
});
