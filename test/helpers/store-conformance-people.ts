import { expect, it, vi } from "vitest";
import type { Person, Store } from "../../src/store/store.js";
import type { OpenStore } from "./store-conformance.js";

type Fresh = () => Promise<{ store: Store; open: OpenStore }>;
const anyone = () => true;

/** People, their accounts and /link's codes (issue 40), the same on both engines. */
export function describePeopleConformance(fresh: Fresh): void {
  it("makes a person of an account on first sight, once, even from two processes at once; per agent", async () => {
    const { store, open } = await fresh();
    const other = await open();
    // An upgraded home: a guest's model calls were counted under `channel:userId` before people existed.
    const call = { kind: "conversation" as const, model: "m", promptTokens: 1, completionTokens: 1, cachedTokens: 0 };
    await store.usage.record({
      ...call,
      sessionKey: "telegram:42",
      estimated: false,
      at: Date.now(),
      person: "telegram:42",
    });
    const [a, b] = await Promise.all([
      store.people.identify("main", "telegram", "42", "Ada"),
      other.people.identify("main", "telegram", "42", "Ada"),
    ]);
    expect(a).toEqual(b);
    // The id is what the usage rows of an upgraded home already carry for this account (`channel:userId`).
    expect(a).toMatchObject({ id: "telegram:42", agent: "main", name: "Ada" });
    expect(a.identities).toEqual([{ route: "telegram", userId: "42", name: "Ada" }]);
    expect(a.role).toBeUndefined();
    expect(await store.people.stored(a)).toEqual({ modelCalls: 1, chats: 1, jobs: 0 });
    const shop = await store.people.identify("shop", "telegram@shop", "42", "Ada");
    expect(shop.id).toBe("shop/telegram@shop:42");
    expect((await store.people.list("main")).map((p) => p.id)).toEqual(["telegram:42"]);
    expect(await store.people.list()).toHaveLength(2);
  });

  it("links an account to whoever asked for the code, once; /unlink undoes it", async () => {
    const { store } = await fresh();
    const ada = await store.people.identify("main", "telegram", "42", "Ada");
    await store.people.identify("main", "discord", "900", "ada#1");
    // What the joining account's own person had (its model calls) goes with it, in the same transaction; its role does
    // not (the joined person's stands: a member sending a guest's code must not make the guest a member).
    const call = { kind: "conversation" as const, model: "m", promptTokens: 1, completionTokens: 1, cachedTokens: 0 };
    await store.usage.record({
      ...call,
      sessionKey: "discord:5",
      estimated: false,
      at: Date.now(),
      person: "discord:900",
    });
    await store.people.setRole("discord:900", "member");
    await store.people.offerLink("discord:900");
    const { code } = await store.people.offerLink(ada.id);
    expect(code).toMatch(/^[A-Z0-9]{6,12}$/);
    const joined = await store.people.redeem("main", { route: "discord", userId: "900" }, code.toLowerCase(), anyone);
    expect(joined).toMatchObject({ joined: { id: ada.id } });
    const both = await store.people.identify("main", "discord", "900", "ada#1");
    expect(both.id).toBe(ada.id);
    expect(both.identities.map((i) => i.route)).toEqual(["discord", "telegram"]);
    // Used up: the same code again, even from a third account, joins nobody.
    await store.people.identify("main", "web", "owner", "web");
    expect(await store.people.redeem("main", { route: "web", userId: "owner" }, code, anyone)).toEqual({
      refused: "wrong",
    });
    expect(await store.people.stored(both)).toEqual({ modelCalls: 1, chats: 1, jobs: 0 });
    expect(both.role).toBeUndefined();
    expect(await store.people.show("discord:900")).toBeUndefined();
    expect((await store.people.list()).map((p) => p.id)).toEqual([ada.id, "web:owner"]);
    expect(await store.people.unlink(ada.id)).toBe(1);
    expect((await store.people.identify("main", "discord", "900", "ada#1")).id).toBe("discord:900");
    expect((await store.people.show(ada.id))?.identities).toHaveLength(1);
  });

  it("joins one account by a code, though two send it at once (PostgreSQL: in two transactions at once)", async () => {
    const { store } = await fresh();
    const ada = await store.people.identify("main", "telegram", "42", "Ada");
    await store.people.identify("main", "discord", "900", "ada#1");
    await store.people.identify("main", "web", "owner", "web");
    const { code } = await store.people.offerLink(ada.id);
    const outcomes = await Promise.all([
      store.people.redeem("main", { route: "discord", userId: "900" }, code, anyone),
      store.people.redeem("main", { route: "web", userId: "owner" }, code, anyone),
    ]);
    expect(outcomes.filter((o) => "joined" in o)).toHaveLength(1);
    expect((await store.people.show(ada.id))?.identities).toHaveLength(2);
  });

  it("refuses another agent's code, an expired one, a refused join; locks an account out after five wrong codes", async () => {
    const { store } = await fresh();
    const ada = await store.people.identify("main", "telegram", "42", "Ada");
    const mallory = { route: "discord", userId: "666" };
    await store.people.identify("main", mallory.route, mallory.userId, "mallory");
    await store.people.identify("shop", mallory.route, mallory.userId, "mallory");
    const { code } = await store.people.offerLink(ada.id);
    expect(await store.people.redeem("shop", mallory, code, anyone)).toEqual({ refused: "wrong" });
    expect(await store.people.redeem("main", mallory, code, () => false)).toEqual({ refused: "refused" });
    expect(await store.people.redeem("main", { route: "telegram", userId: "42" }, code, anyone)).toEqual({
      refused: "already",
    });
    for (let i = 0; i < 5; i++) {
      expect(await store.people.redeem("main", mallory, "WRONGCODE1", anyone)).toEqual({ refused: "wrong" });
    }
    // Five wrong codes: now even the right one is refused, for an hour.
    expect(await store.people.redeem("main", mallory, code, anyone)).toEqual({ refused: "locked" });
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61 * 60_000 });
    try {
      // An hour on, the code has expired (ten minutes) and says no more than a wrong one.
      expect(await store.people.redeem("main", mallory, code, anyone)).toEqual({ refused: "wrong" });
      const fresh = await store.people.offerLink(ada.id);
      expect(await store.people.redeem("main", mallory, fresh.code, anyone)).toMatchObject({ joined: { id: ada.id } });
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps a role set by the owner, and forgets a person with their accounts and codes", async () => {
    const { store } = await fresh();
    const bob = await store.people.identify("main", "telegram", "7", "Bob");
    expect(await store.people.setRole(bob.id, "member")).toBe(true);
    expect(await store.people.setRole("nobody", "member")).toBe(false);
    expect((await store.people.show(bob.id)) as Person).toMatchObject({ role: "member" });
    await store.people.offerLink(bob.id);
    expect(await store.people.remove(bob.id)).toBe(true);
    expect(await store.people.show(bob.id)).toBeUndefined();
    expect(await store.people.list()).toEqual([]);
    expect((await store.people.identify("main", "telegram", "7", "Bob")).role).toBeUndefined();
  });
}
