import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { hasSystemPackage } from "../../../test/helpers/system-packages.js";
import type { Config } from "../../config/config.js";
import { checkSandbox, findExecutable, INSTALL_BWRAP, inspectHost } from "./sandbox-check.js";

const bwrap = hasSystemPackage("bwrap", "bubblewrap");

const config = {
  sandbox: "bwrap",
  home: "/nonexistent/pincer-home",
  exec: { network: false },
} as Pick<Config, "sandbox" | "home" | "exec">;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pincer-sandbox-check-test-"));
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

describe("checkSandbox", () => {
  it.skipIf(!bwrap)("passes on this host, where bwrap works, and names the bwrap it found", async () => {
    const status = await checkSandbox(config);
    expect(status.ok).toBe(true);
    expect(status.sandboxed).toBe(true);
    expect(status.bwrap).toMatch(/\/bwrap$/);
  });

  it("says how to install bubblewrap when it is missing from PATH", async () => {
    vi.stubEnv("PATH", dir);
    expect(await checkSandbox(config)).toEqual({
      ok: false,
      sandboxed: false,
      detail: INSTALL_BWRAP,
    });
  });

  it("explains a bwrap that cannot create namespaces, quoting its error", async () => {
    // A stand-in for bwrap on a host that forbids unprivileged user namespaces.
    const fake = join(dir, "bwrap");
    writeFileSync(fake, "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n");
    chmodSync(fake, 0o755);
    vi.stubEnv("PATH", dir);
    const status = await checkSandbox(config);
    expect(status.ok).toBe(false);
    expect(status.detail).toContain("cannot create a sandbox here (bwrap: setting up uid map: Permission denied)");
    expect(status.detail).toContain("unprivileged user namespaces");
    expect(status.detail).toContain("PINCER_SANDBOX=none");
  });

  it("reports PINCER_SANDBOX=none as working but unsandboxed, with the warning", async () => {
    vi.stubEnv("PATH", dir);
    const status = await checkSandbox({ ...config, sandbox: "none" });
    expect(status).toMatchObject({ ok: true, sandboxed: false });
    expect(status.detail).toMatch(/^PINCER_SANDBOX=none: exec runs commands directly on this host/);
  });
});

describe("findExecutable and inspectHost", () => {
  it("finds only executable files on the search path", () => {
    writeFileSync(join(dir, "tool"), "#!/bin/sh\n");
    expect(findExecutable("tool", dir)).toBeUndefined();
    chmodSync(join(dir, "tool"), 0o755);
    expect(findExecutable("tool", `/nonexistent:${dir}`)).toBe(join(dir, "tool"));
  });

  it("describes links as links and folders as folders", () => {
    const layout = inspectHost(["/usr", "/proc/self", "/nonexistent"]);
    expect(layout["/usr"]).toEqual({ type: "dir" });
    expect(layout["/proc/self"]?.type).toBe("symlink");
    expect(layout["/nonexistent"]).toBeUndefined();
  });
});
