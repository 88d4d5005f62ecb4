import { describe, expect, it } from "vitest";
import { databaseHost, databaseUrl } from "./database-url.js";
import { ConfigError } from "./errors.js";

function refusal(raw: string): string {
  try {
    databaseUrl(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`expected "${raw}" to be refused`);
}

describe("PINCER_DATABASE_URL", () => {
  it("is the embedded database when unset or blank, and a postgres:// URL as given otherwise", () => {
    expect(databaseUrl(undefined)).toBeUndefined();
    expect(databaseUrl("  ")).toBeUndefined();
    expect(databaseUrl(" postgres://pincer:pw@db:5432/pincer ")).toBe("postgres://pincer:pw@db:5432/pincer");
    expect(databaseUrl("postgresql://db/pincer")).toBe("postgresql://db/pincer");
    expect(databaseUrl("postgres:///pincer?host=/run/postgresql")).toBe("postgres:///pincer?host=/run/postgresql");
  });

  it("refuses anything else in one sentence that names the variable and never repeats the password", () => {
    for (const raw of [
      "db.example:5432",
      "mysql://u:hunter2@db/pincer",
      "postgres://u:hunter2@db",
      "postgres://u:hunter2@/x",
    ]) {
      const message = refusal(raw);
      expect(message).toMatch(/^PINCER_DATABASE_URL /);
      expect(message).not.toContain("hunter2");
      expect(message.split("\n")).toHaveLength(1);
    }
    expect(databaseHost("postgres://u:hunter2@db.example:5432/pincer")).toBe("db.example:5432/pincer");
  });
});
