import { describe, expect, it } from "vitest";
import { formatDay, formatLocal } from "./context.js";

describe("local dates", () => {
  const lateNewYearsEveUtc = Date.UTC(2026, 0, 1, 23, 30);

  it("gives the day in the user's zone, not the server's", () => {
    expect(formatDay(lateNewYearsEveUtc, "UTC")).toBe("2026-01-01");
    expect(formatDay(lateNewYearsEveUtc, "Asia/Tokyo")).toBe("2026-01-02");
    expect(formatDay(lateNewYearsEveUtc, "America/Los_Angeles")).toBe("2026-01-01");
  });

  it("gives weekday, date and 24-hour time for the prompt", () => {
    expect(formatLocal(new Date(lateNewYearsEveUtc), "UTC")).toBe("Thu 2026-01-01 23:30");
    expect(formatLocal(lateNewYearsEveUtc, "Asia/Tokyo")).toBe("Fri 2026-01-02 08:30");
  });
});
