import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ChatRequest } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, pincer } from "./helpers/daemon.js";
import { hasSystemPackage } from "./helpers/system-packages.js";

/**
 * Issue 29 finding 6, through the built daemon with the real bwrap: the owner (named in
 * TELEGRAM_ALLOW_FROM) and a guest (approved with `pincer pairing approve`) talk to the same
 * pincer. The guest's chat, and a group the owner speaks in, get neither the owner's MEMORY.md
 * (prompt, memory_search, read_file, grep, exec) nor the owner's received files; the owner's
 * direct chat gets its memory and its own files, not the guest's.
 */

const bwrap = hasSystemPackage("bwrap", "bubblewrap");
const fakes = gatewayOnFakes({ PINCER_SANDBOX: "bwrap" });
const { model, gateway, until } = fakes;

const OWNER = 42;
const GUEST = 43;
const MEMORY_SECRET = "blue-notebook-77";

const lastUser = (request: ChatRequest) =>
  String(request.messages.filter((m) => m.role === "user").at(-1)?.content ?? "");

function sendDocument(from: number, fileName: string, content: string): void {
  const file = fakes.telegram.addFile(content, { fileName });
  fakes.telegram.pushUpdate({
    message: {
      message_id: 0,
      date: 0,
      chat: { id: from, type: "private", first_name: "P" },
      from: { id: from, is_bot: false, first_name: "P" },
      caption: "keep this",
      document: { ...file, file_name: fileName, mime_type: "text/plain" },
    },
  });
}

const GROUP = -1009;

function say(from: number, text: string, inGroup = false): void {
  fakes.telegram.pushUpdate({
    message: {
      message_id: 0,
      date: 0,
      chat: inGroup ? { id: GROUP, type: "group", title: "family" } : { id: from, type: "private", first_name: "P" },
      from: { id: from, is_bot: false, first_name: "P" },
      text,
    },
  });
}

describe.skipIf(!bwrap)("who sees what, with the real daemon and bwrap", () => {
  it("keeps the owner's memory and each chat's received files to their own chat", async () => {
    const home = tempHome("pincer-sharing-");
    const media = join(home, "media");
    mkdirSync(join(home, "workspace"), { recursive: true });
    writeFileSync(join(home, "workspace", "MEMORY.md"), `# Memory\n\n- The owner's PIN hint: ${MEMORY_SECRET}\n`);
    model.respond((request) => {
      if (request.messages.at(-1)?.role === "tool") return { content: "looked" };
      if (!lastUser(request).endsWith("probe")) return { content: "noted" };
      return {
        toolCalls: [
          { name: "read_file", arguments: { path: "MEMORY.md" } },
          { name: "grep", arguments: { pattern: "notebook" } },
          { name: "memory_search", arguments: { query: "notebook" } },
          {
            name: "exec",
            arguments: {
              command: `cat MEMORY.md; echo; ls ${media}; cat ${media}/telegram_${OWNER}/*; cat ${media}/telegram_${GUEST}/*`,
            },
          },
        ],
      };
    });
    gateway(home);
    // The guest asks, gets a pairing code, and the owner approves it.
    say(GUEST, "hello?");
    const notice = await until(() => fakes.telegram.sent.find((m) => m.chatId === String(GUEST)), "the code", 30_000);
    const code = /pairing code is (\S+)/.exec(notice.text)?.[1] ?? "";
    expect((await pincer(["pairing", "approve", "telegram", code], home)).code).toBe(0);
    sendDocument(OWNER, "owner.txt", "OWNER-DOCUMENT-TEXT");
    await until(() => fakes.telegram.sent.length >= 2, "the owner's document noted", 30_000);
    sendDocument(GUEST, "guest.txt", "GUEST-DOCUMENT-TEXT");
    await until(() => fakes.telegram.sent.length >= 3, "the guest's document noted", 30_000);

    const probe = async (from: number, replies: number, inGroup = false) => {
      const before = model.requests.length;
      say(from, inGroup ? "@pincer_test_bot probe" : "probe", inGroup);
      await until(() => fakes.telegram.sent.length >= replies, `the probe of ${from} answered`, 60_000);
      const request = model.requests.slice(before).find((r) => r.messages.at(-1)?.role === "tool");
      if (!request) throw new Error("no request carried the tool results");
      return {
        prompt: String(request.messages[0].content),
        results: request.messages.filter((m) => m.role === "tool").map((m) => String(m.content)),
      };
    };

    const guest = await probe(GUEST, 4);
    expect(guest.prompt).not.toContain(MEMORY_SECRET);
    const [read, grep, search, exec] = guest.results;
    // The guest works in a space of their own (issue 40), where no MEMORY.md has been written yet.
    expect(read).toBe(`Error: "MEMORY.md" does not exist.`);
    expect(grep).toMatch(/^No matches/);
    expect(search).not.toContain("MEMORY.md");
    expect(exec).not.toContain(MEMORY_SECRET);
    expect(exec).not.toContain("OWNER-DOCUMENT-TEXT");
    expect(exec).toMatch(new RegExp(`^telegram_${GUEST}$`, "m")); // ls media: only its own folder
    expect(exec).not.toMatch(new RegExp(`^telegram_${OWNER}$`, "m"));
    expect(exec).toContain("GUEST-DOCUMENT-TEXT");

    // The owner in a group (memory.shareWithGroups is false): the group's answers are read by all.
    const group = await probe(OWNER, 5, true);
    expect(group.prompt).not.toContain(MEMORY_SECRET);
    expect(group.results[0]).toMatch(/^Error: "MEMORY.md" is the owner's private memory/);
    expect(group.results[3]).not.toContain(MEMORY_SECRET);
    expect(group.results[3]).not.toContain("OWNER-DOCUMENT-TEXT");

    const owner = await probe(OWNER, 6);
    expect(owner.prompt).toContain(MEMORY_SECRET);
    expect(owner.results[0]).toContain(MEMORY_SECRET);
    expect(owner.results[2]).toContain("· MEMORY.md] - The owner's PIN hint");
    expect(owner.results[3]).toContain(MEMORY_SECRET);
    expect(owner.results[3]).toContain("OWNER-DOCUMENT-TEXT");
    expect(owner.results[3]).not.toContain("GUEST-DOCUMENT-TEXT");
  }, 180_000);
});
