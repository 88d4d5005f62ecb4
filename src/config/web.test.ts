import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.js";

const home = mkdtempSync(join(tmpdir(), "pincer-web-config-"));
let files = 0;

function load(web: unknown, env: Record<string, string> = {}) {
  const file = join(home, `config-${++files}.json`);
  writeFileSync(file, JSON.stringify({ web }));
  return loadConfig({ OPENAI_API_KEY: "k", PINCER_HOME: home, PINCER_TIMEZONE: "UTC", PINCER_CONFIG: file, ...env });
}

function errorOf(web: unknown, env: Record<string, string> = {}): string {
  try {
    load(web, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("the web section", () => {
  it("has safe defaults and no search provider", () => {
    const { web } = load({});
    expect(web).toEqual({
      allow: [],
      timeoutSeconds: 20,
      maxBytes: 2 * 1024 * 1024,
      maxChars: 20000,
      maxRedirects: 5,
      search: { timeoutSeconds: 15 },
    });
  });

  it("uses Brave when BRAVE_API_KEY is set, at its public address unless told otherwise", () => {
    expect(load({}, { BRAVE_API_KEY: " key " }).web.search).toEqual({
      provider: "brave",
      apiKey: "key",
      baseUrl: "https://api.search.brave.com",
      timeoutSeconds: 15,
    });
    expect(load({ search: { baseUrl: "http://127.0.0.1:9/" } }, { BRAVE_API_KEY: "k" }).web.search.baseUrl).toBe(
      "http://127.0.0.1:9/",
    );
  });

  it("takes a SearXNG instance and a LAN allowlist", () => {
    const { web } = load({
      allow: ["192.168.1.0/24", "nas.home", "fd00::1"],
      search: { provider: "searxng", baseUrl: "http://searx.lan:8080" },
    });
    expect(web.allow).toEqual(["192.168.1.0/24", "nas.home", "fd00::1"]);
    expect(web.search).toEqual({ provider: "searxng", baseUrl: "http://searx.lan:8080", timeoutSeconds: 15 });
  });

  it("stops the start with one sentence naming the setting", () => {
    expect(errorOf({ search: { provider: "brave" } })).toBe(
      "BRAVE_API_KEY is not set, but web.search.provider is brave: set the key or drop the provider.",
    );
    expect(errorOf({ search: { provider: "searxng" } })).toBe(
      "PINCER_CONFIG web.search.baseUrl must name your SearXNG instance when the provider is searxng.",
    );
    expect(errorOf({ search: { provider: "searxng", baseUrl: "searx.lan" } })).toBe(
      'PINCER_CONFIG web.search.baseUrl must be an http(s) URL, not "searx.lan".',
    );
    expect(errorOf({ allow: ["10.0.0.0/40"] })).toBe(
      'PINCER_CONFIG web.allow entry "10.0.0.0/40" is neither an IP address, a CIDR range (10.0.0.0/8) nor a host name.',
    );
    expect(errorOf({ allow: ["http://nas"] })).toMatch(/web\.allow entry "http:\/\/nas" is neither/);
    expect(errorOf({ maxRedirects: 9 })).toMatch(/web\.maxRedirects must be <= 5\.$/);
    expect(errorOf({ search: { provider: "google" } })).toMatch(/web\.search\.provider must be equal to one of/);
  });
});
