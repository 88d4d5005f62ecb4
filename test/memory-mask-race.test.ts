import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/config.js";
import { appendMemoryFacts } from "../src/memory/memory-file.js";
import { createExecTool } from "../src/tools/exec/exec-tool.js";
import { tempHome } from "./helpers/app.js";
import { hasSystemPackage } from "./helpers/system-packages.js";
import { toolContext } from "./helpers/tools.js";
import { until } from "./helpers/until.js";

/**
 * "Renames during a command": a guest's exec under the real bwrap sees the owner's MEMORY.md as
 * /dev/null, a mount on that name. A file renamed over the name on the host detaches the mount in
 * the sandbox, so the owner's consolidation adding a fact while a guest's command waits must keep
 * the file (its inode) in place.
 */

const bwrap = hasSystemPackage("bwrap", "bubblewrap");
let home = "";
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe.skipIf(!bwrap)("the owner's MEMORY.md while a guest's command runs", () => {
  it("stays hidden from the guest's exec when the owner's chat adds a fact meanwhile", async () => {
    home = realpathSync(tempHome("pincer-mask-"));
    const config = loadConfig({ OPENAI_API_KEY: "t", PINCER_HOME: home, PINCER_SANDBOX: "bwrap", LOG_LEVEL: "silent" });
    const workspace = config.workspace;
    mkdirSync(workspace, { recursive: true });
    const memory = join(workspace, "MEMORY.md");
    writeFileSync(memory, "# Long-term memory\n\n- the safe's code is 4711\n");
    const inode = statSync(memory).ino;
    const exec = createExecTool({ config });
    const guest = { ...toolContext("guest", workspace), seesOwnerMemory: false };
    // Says it is waiting, waits (up to 3 s) for anything to show up under the name, then prints it.
    const command =
      'touch waiting; for i in $(seq 30); do [ -s MEMORY.md ] && break; sleep 0.1; done; echo "seen: $(cat MEMORY.md)"';
    const running = exec.execute({ command, timeout: 20 }, guest);
    await until(() => existsSync(join(workspace, "waiting")), "the guest's command waiting in the sandbox");
    expect(appendMemoryFacts(workspace, ["the owner's passport is in the blue drawer"], "2026-12-01")).toHaveLength(1);
    expect(readFileSync(memory, "utf8")).toContain("blue drawer");
    const output = String(await running);
    expect(output).toContain("seen:");
    expect(output).not.toContain("4711");
    expect(output).not.toContain("blue drawer");
    expect(statSync(memory).ino).toBe(inode);
  }, 30_000);
});
