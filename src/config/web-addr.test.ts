import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";

const base = {
  OPENAI_API_KEY: "k",
  PINCER_HOME: mkdtempSync(join(tmpdir(), "pincer-web-cfg-")),
  PINCER_TIMEZONE: "UTC",
};
const load = (env: Record<string, string>) => loadConfig({ ...base, ...env });

describe("PINCER_WEB_ADDR", () => {
  it("defaults to 127.0.0.1:7390 and can be turned off", () => {
    expect(load({}).webAddr).toEqual({ host: "127.0.0.1", port: 7390 });
    expect(load({ PINCER_WEB_ADDR: "off" }).webAddr).toBeUndefined();
    expect(load({ PINCER_WEB_ADDR: "[::1]:8080" }).webAddr).toEqual({ host: "::1", port: 8080 });
    expect(load({ PINCER_WEB_ADDR: "localhost:1" }).webAddr).toEqual({ host: "localhost", port: 1 });
  });

  it("refuses addresses other machines reach unless PINCER_WEB_TOKEN is set", () => {
    for (const addr of ["0.0.0.0:7390", "192.168.1.5:80", "[::]:7390", "example.org:7390"]) {
      expect(() => load({ PINCER_WEB_ADDR: addr })).toThrow(/PINCER_WEB_ADDR .* set PINCER_WEB_TOKEN/);
    }
    expect(load({ PINCER_WEB_ADDR: "0.0.0.0:7390", PINCER_WEB_TOKEN: "a-long-enough-token" }).webAddr?.host).toBe(
      "0.0.0.0",
    );
  });

  it("names the variable for malformed values", () => {
    for (const addr of ["7390", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:x", "http://127.0.0.1:7390"]) {
      expect(() => load({ PINCER_WEB_ADDR: addr })).toThrow(/^PINCER_WEB_ADDR must be host:port/);
    }
    expect(() => load({ PINCER_WEB_TOKEN: "short" })).toThrow(/^PINCER_WEB_TOKEN must be at least 16 characters/);
  });
});
