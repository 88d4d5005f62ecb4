import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadWebToken, secretsEqual, webTokenPath } from "./token.js";

describe("web token", () => {
  it("is generated once, kept with mode 0600, and narrowed again if someone widened it", () => {
    const home = join(mkdtempSync(join(tmpdir(), "pincer-token-")), "home");
    const first = loadWebToken(home, undefined);
    expect(first).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(statSync(webTokenPath(home)).mode & 0o777).toBe(0o600);
    expect(loadWebToken(home, undefined)).toBe(first);
    chmodSync(webTokenPath(home), 0o644);
    expect(loadWebToken(home, undefined)).toBe(first);
    expect(statSync(webTokenPath(home)).mode & 0o777).toBe(0o600);
  });

  it("prefers PINCER_WEB_TOKEN and replaces a file too short to be a token", () => {
    const home = mkdtempSync(join(tmpdir(), "pincer-token-"));
    expect(loadWebToken(home, "from-the-environment-123")).toBe("from-the-environment-123");
    writeFileSync(webTokenPath(home), "short\n");
    const token = loadWebToken(home, undefined);
    expect(token).not.toBe("short");
    expect(readFileSync(webTokenPath(home), "utf8").trim()).toBe(token);
  });

  it("compares secrets of any length without throwing", () => {
    expect(secretsEqual("abc", "abc")).toBe(true);
    expect(secretsEqual("abd", "abc")).toBe(false);
    expect(secretsEqual("", "abc")).toBe(false);
    expect(secretsEqual("a".repeat(10_000), "abc")).toBe(false);
  });
});
