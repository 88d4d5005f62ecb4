import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "channels/**/*.test.ts", "test/**/*.test.ts"],
    // Deadlines for a machine busy with other work: a daemon test starts up to four processes,
    // each a few seconds when two cores are shared; a passing test never waits for them.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file gets its own process so fake servers and SQLite files never leak between files.
    pool: "forks",
    // Tests that start the built daemon never run an old build (`npx vitest run FILE` after an edit).
    globalSetup: ["test/helpers/fresh-dist.ts"],
  },
});
