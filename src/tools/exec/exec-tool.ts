import { closeSync } from "node:fs";
import { lstat, mkdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { conversationMediaDir } from "../../bus/types.js";
import { mediaDir } from "../../paths.js";
import { openInScope } from "../files/safe-open.js";
import { integerParam, objectSchema, type Tool, type ToolDeps, ToolError } from "../tool.js";
import { SANDBOX_HOME, sandboxEnv } from "./bwrap-args.js";
import { createPidsCgroup, inCgroup, removeWhenEmpty } from "./cgroup.js";
import { checkCommand, compilePatterns } from "./guard.js";
import { formatExecResult } from "./output.js";
import { runProcess } from "./run-process.js";
import { checkSandbox, type SandboxStatus, sandboxArgs } from "./sandbox-check.js";

export type ExecArgs = { command: string; working_dir?: string; timeout?: number };

/** Bytes kept per stream before a flood is stopped: plenty for 10,000 printable characters. */
const BYTES_PER_CHAR = 8;

export function createExecTool({ config }: Pick<ToolDeps, "config">): Tool<ExecArgs> {
  const { exec, home } = config;
  const media = mediaDir(home);
  const guard = {
    denyPatterns: compilePatterns(exec.denyPatterns, "exec.denyPatterns", config.agentName),
    // With approvals.exec "unlisted" the allowlist says what runs unasked; the rest is asked, not refused.
    allowPatterns:
      config.approvals.exec === "unlisted"
        ? []
        : compilePatterns(exec.allowPatterns, "exec.allowPatterns", config.agentName),
    restrictToWorkspace: exec.restrictToWorkspace,
    media,
    home,
  };
  // One probe per tool instance: the host does not change between calls, and a failed probe is re-tried.
  let sandboxReady: Promise<SandboxStatus> | undefined;
  let commands = 0;
  const sandboxStatus = () => {
    sandboxReady ??= checkSandbox(config).then((status) => {
      if (!status.ok) sandboxReady = undefined;
      return status;
    });
    return sandboxReady;
  };
  return {
    name: "exec",
    description:
      "Run a shell command (sh -c) in a sandbox. It sees the workspace (read-write, the default working directory; " +
      "HOME is an empty /tmp, new for each command), system programs (read-only) and this chat's received files in the media folder (read-only); " +
      `nothing else of the host, ${exec.network ? "with" : "and no"} network access. Each call starts fresh: ` +
      "background processes are killed when the command ends. Output is capped at " +
      `${exec.maxOutputChars} characters; stderr is marked STDERR:. Timeout ${exec.timeoutSeconds} s by default, ` +
      `at most ${exec.maxTimeoutSeconds} s.`,
    parameters: objectSchema(["command"], {
      command: { type: "string", minLength: 1, description: "The shell command to run." },
      working_dir: {
        type: "string",
        description: "Folder to run in, relative to the workspace (default: the workspace itself).",
      },
      timeout: integerParam(
        1,
        undefined,
        `Seconds before the command is killed (default ${exec.timeoutSeconds}, at most ${exec.maxTimeoutSeconds}).`,
      ),
    }),
    // Above exec's own limit, so exec's timeout (which kills the process group and reports) fires first.
    timeoutSeconds: exec.maxTimeoutSeconds + 30,
    async execute(args, ctx) {
      await mkdir(ctx.workspace, { recursive: true });
      const workspace = await realpath(ctx.workspace);
      // Checked here for a clear message; bwrap resolves --chdir again inside, so a later swap cannot lead out.
      const workingDir = workingFolder(args.working_dir, workspace, home);
      const real = async (paths: string[] = []) =>
        (await Promise.all(paths.map((path) => realpath(path).catch(() => "")))).filter((path) => path !== "");
      const shared = { read: await real(ctx.shared?.read), write: await real(ctx.shared?.write) };
      const refused = checkCommand(args.command, { ...guard, workspace, shared: [...shared.read, ...shared.write] });
      if (refused) throw new ToolError(`the command was blocked by the safety guard: ${refused}.`);
      // Without a sandbox there is no private /tmp to be HOME (PINCER_SANDBOX=none keeps no such promise).
      const env = sandboxEnv(process.env, config.sandbox === "none" ? workspace : SANDBOX_HOME, exec.envAllowlist);
      const timeoutSeconds = Math.min(args.timeout ?? exec.timeoutSeconds, exec.maxTimeoutSeconds);
      let [file, ...argv]: string[] = ["sh", "-c", args.command];
      let cgroup: string | undefined;
      if (config.sandbox !== "none") {
        const status = await sandboxStatus();
        if (!status.ok) throw new ToolError(status.detail);
        const features = status.features ?? { disableUserns: false };
        const memory = join(workspace, "MEMORY.md");
        const spec = {
          workspace,
          workingDir,
          media: await realpath(conversationMediaDir(media, ctx.sessionKey)).catch(() => undefined),
          shared,
          masked: !ctx.seesOwnerMemory && (await lstat(memory).catch(() => undefined))?.isFile() ? [memory] : [],
          hidden: [await realpath(home).catch(() => home)],
          network: exec.network,
          env,
        };
        argv = sandboxArgs(features, exec, spec, [file, ...argv]);
        file = status.bwrap ?? "bwrap";
        // Under root RLIMIT_NPROC does not bind; a pids cgroup (where the host allows one) does.
        if (features.pidsCgroup && exec.maxProcesses > 0) {
          cgroup = createPidsCgroup(features.pidsCgroup, `pincer-${process.pid}-${++commands}`, exec.maxProcesses);
          if (cgroup) ({ file, args: argv } = inCgroup(cgroup, file, argv));
        }
      }
      try {
        const outcome = await runProcess({
          file,
          args: argv,
          // The workspace, not working_dir: the host never needs to enter a folder the model chose.
          cwd: workspace,
          env,
          timeoutSeconds,
          signal: ctx.signal,
          maxBufferBytes: exec.maxOutputChars * BYTES_PER_CHAR,
        });
        return formatExecResult(outcome, exec.maxOutputChars);
      } finally {
        if (cgroup && !(await removeWhenEmpty(cgroup))) ctx.log.warn({ cgroup }, "could not remove a command's cgroup");
      }
    },
  };
}

function workingFolder(input: string | undefined, workspace: string, home: string): string {
  try {
    const opened = openInScope(input, { workspace, hidden: [home] }, { access: "write", want: "dir" });
    closeSync(opened.fd);
    return opened.path;
  } catch (err) {
    if (err instanceof ToolError && /is a file|does not exist/.test(err.message)) {
      throw new ToolError(`working_dir "${input}" is not a folder in the workspace.`);
    }
    throw err;
  }
}
