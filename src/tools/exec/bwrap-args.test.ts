import { describe, expect, it } from "vitest";
import { isInside } from "../files/safe-open.js";
import { buildBwrapArgs, type HostLayout, limitArgs, type SandboxSpec, sandboxEnv } from "./bwrap-args.js";

const mergedUsr: HostLayout = {
  "/usr": { type: "dir" },
  "/bin": { type: "symlink", target: "usr/bin" },
  "/lib": { type: "symlink", target: "usr/lib" },
  "/lib64": { type: "symlink", target: "usr/lib64" },
  "/etc/ssl": { type: "dir" },
  "/etc/resolv.conf": { type: "symlink", target: "../run/systemd/resolve/stub-resolv.conf" },
  "/etc/passwd": { type: "file" },
};

const spec: SandboxSpec = {
  workspace: "/home/u/.pincer/workspace",
  workingDir: "/home/u/.pincer/workspace/project",
  media: "/home/u/.pincer/media",
  hidden: ["/home/u/.pincer"],
  network: false,
  env: { HOME: "/home/u/.pincer/workspace", PATH: "/usr/bin:/bin" },
};

/** The [flag, ...operands] groups of an argument list, for order-insensitive lookups. */
function mounts(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag === "--ro-bind" || flag === "--bind" || flag === "--symlink")
      out.push(`${flag} ${args[i + 1]} ${args[i + 2]}`);
    if (flag === "--tmpfs" || flag === "--proc" || flag === "--dev" || flag === "--remount-ro") {
      out.push(`${flag} ${args[i + 1]}`);
    }
  }
  return out;
}

describe("buildBwrapArgs", () => {
  it("binds system folders read-only and recreates merged-/usr links as links", () => {
    const m = mounts(buildBwrapArgs(mergedUsr, spec, ["sh", "-c", "true"]));
    expect(m).toContain("--ro-bind /usr /usr");
    expect(m).toContain("--symlink usr/bin /bin");
    expect(m).toContain("--symlink usr/lib64 /lib64");
    expect(m).toContain("--ro-bind /etc/ssl /etc/ssl");
    // A linked file in /etc is bound (which follows the link), not recreated as a dangling link.
    expect(m).toContain("--ro-bind /etc/resolv.conf /etc/resolv.conf");
    expect(m).toContain("--ro-bind /etc/passwd /etc/passwd");
  });

  it("binds real /bin and /lib folders when the host has no merged /usr", () => {
    const host: HostLayout = { "/usr": { type: "dir" }, "/bin": { type: "dir" }, "/lib": { type: "dir" } };
    const m = mounts(buildBwrapArgs(host, spec, ["true"]));
    expect(m).toContain("--ro-bind /bin /bin");
    expect(m).toContain("--ro-bind /lib /lib");
  });

  it("skips what the host does not have", () => {
    const args = buildBwrapArgs({ "/usr": { type: "dir" } }, spec, ["true"]);
    expect(args.join(" ")).not.toContain("/etc/pki");
    expect(args.join(" ")).not.toContain("/lib32");
  });

  it("gives fresh /proc, /dev and /tmp, the workspace read-write, media read-only and never PINCER_HOME", () => {
    const args = buildBwrapArgs(mergedUsr, spec, ["true"]);
    const m = mounts(args);
    expect(m).toEqual(expect.arrayContaining(["--proc /proc", "--dev /dev", "--tmpfs /tmp"]));
    expect(m).toContain("--bind /home/u/.pincer/workspace /home/u/.pincer/workspace");
    expect(m).toContain("--ro-bind /home/u/.pincer/media /home/u/.pincer/media");
    // The home folder is never a bind source, so its database, config and .env do not exist inside.
    expect(m.filter((x) => x.split(" ")[1] === "/home/u/.pincer")).toEqual([]);
    expect(m.some((x) => x.startsWith("--bind /home/u/.pincer ") || x.startsWith("--ro-bind /home/u "))).toBe(false);
  });

  it("mounts the workspace after /tmp so a workspace under /tmp stays visible", () => {
    const args = buildBwrapArgs(
      mergedUsr,
      { ...spec, workspace: "/tmp/x/ws", workingDir: "/tmp/x/ws", media: undefined, hidden: ["/tmp/x"] },
      ["true"],
    );
    const m = mounts(args);
    expect(m.indexOf("--bind /tmp/x/ws /tmp/x/ws")).toBeGreaterThan(m.indexOf("--tmpfs /tmp"));
    // /tmp/x is not exposed by any bind, so it needs no cover.
    expect(m).not.toContain("--tmpfs /tmp/x");
  });

  it("covers PINCER_HOME with an empty tmpfs when it sits inside the workspace, then re-mounts media", () => {
    const inside: SandboxSpec = {
      ...spec,
      workspace: "/home/u",
      workingDir: "/home/u",
      media: "/home/u/.pincer/media",
      hidden: ["/home/u/.pincer"],
    };
    const m = mounts(buildBwrapArgs(mergedUsr, inside, ["true"]));
    const cover = m.indexOf("--tmpfs /home/u/.pincer");
    expect(cover).toBeGreaterThan(m.indexOf("--bind /home/u /home/u"));
    expect(m.lastIndexOf("--ro-bind /home/u/.pincer/media /home/u/.pincer/media")).toBeGreaterThan(cover);
  });

  it("shows a masked file (MEMORY.md for a guest) as /dev/null, mounted after the workspace and any cover", () => {
    const memory = "/home/u/MEMORY.md";
    const inside: SandboxSpec = { ...spec, workspace: "/home/u", workingDir: "/home/u", masked: [memory] };
    const m = mounts(buildBwrapArgs(mergedUsr, inside, ["true"]));
    const mask = m.indexOf(`--ro-bind /dev/null ${memory}`);
    expect(mask).toBeGreaterThan(m.indexOf("--tmpfs /home/u/.pincer"));
    expect(mask).toBeLessThan(m.indexOf("--remount-ro /"));
  });

  it("covers PINCER_HOME when it sits inside a system folder", () => {
    const m = mounts(buildBwrapArgs(mergedUsr, { ...spec, hidden: ["/usr/local/pincer"] }, ["true"]));
    expect(m).toContain("--tmpfs /usr/local/pincer");
  });

  it("refuses a workspace that is PINCER_HOME itself", () => {
    expect(() =>
      buildBwrapArgs(mergedUsr, { ...spec, workspace: "/h", workingDir: "/h", hidden: ["/h"] }, ["true"]),
    ).toThrow(/PINCER_HOME itself/);
  });

  it("refuses a working directory outside the workspace", () => {
    expect(() => buildBwrapArgs(mergedUsr, { ...spec, workingDir: "/home/u/.pincer" }, ["true"])).toThrow(/outside/);
  });

  it("unshares everything, shares the network only when asked, and isolates the session", () => {
    const off = buildBwrapArgs(mergedUsr, spec, ["true"]);
    expect(off).toContain("--unshare-all");
    expect(off).not.toContain("--share-net");
    for (const flag of ["--new-session", "--die-with-parent", "--clearenv"]) expect(off).toContain(flag);
    expect(off.join(" ")).toContain("--cap-drop ALL");
    expect(off.join(" ")).toContain("--remount-ro /");
    const on = buildBwrapArgs(mergedUsr, { ...spec, network: true }, ["true"]);
    expect(on.indexOf("--share-net")).toBeGreaterThan(on.indexOf("--unshare-all"));
  });

  it("sets exactly the given environment, the working directory, and ends with the command", () => {
    const args = buildBwrapArgs(mergedUsr, spec, ["sh", "-c", "echo hi"]);
    const setenv = args.flatMap((a, i) => (a === "--setenv" ? [`${args[i + 1]}=${args[i + 2]}`] : []));
    expect(setenv).toEqual(["HOME=/home/u/.pincer/workspace", "PATH=/usr/bin:/bin"]);
    expect(args.indexOf("--clearenv")).toBeLessThan(args.indexOf("--setenv"));
    expect(args.slice(args.indexOf("--chdir"), args.indexOf("--chdir") + 2)).toEqual([
      "--chdir",
      "/home/u/.pincer/workspace/project",
    ]);
    expect(args.slice(-4)).toEqual(["--", "sh", "-c", "echo hi"]);
  });
});

describe("sandboxEnv", () => {
  const host = {
    LANG: "de_DE.UTF-8",
    TERM: "xterm-256color",
    OPENAI_API_KEY: "sk-secret",
    TELEGRAM_BOT_TOKEN: "123:abc",
    GIT_AUTHOR_NAME: "Ada",
    HOME: "/root",
    PATH: "/root/bin:/usr/bin",
  };

  it("passes HOME (the folder given: the sandbox's fresh /tmp, not the workspace), PATH, LANG and TERM only", () => {
    const env = sandboxEnv(host, "/w", []);
    expect(Object.keys(env).sort()).toEqual(["HOME", "LANG", "PATH", "TERM"]);
    expect(env.HOME).toBe("/w");
    expect(env.LANG).toBe("de_DE.UTF-8");
    expect(env.PATH).not.toContain("/root");
  });

  it("adds allowlisted names that are set, but never pincer's own credentials or the fixed four", () => {
    const env = sandboxEnv(host, "/w", ["GIT_AUTHOR_NAME", "MISSING", "OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "HOME"]);
    expect(env).toEqual({ HOME: "/w", PATH: env.PATH, LANG: "de_DE.UTF-8", TERM: "dumb", GIT_AUTHOR_NAME: "Ada" });
  });

  it("falls back to C.UTF-8 without a LANG", () => {
    expect(sandboxEnv({}, "/w", []).LANG).toBe("C.UTF-8");
  });
});

describe("isInside", () => {
  it.each([
    ["/a", "/a", true],
    ["/a", "/a/b", true],
    ["/a", "/ab", false],
    ["/a/b", "/a", false],
    ["/", "/x", true],
  ])("isInside(%s, %s) is %s", (parent, child, expected) => {
    expect(isInside(parent, child)).toBe(expected);
  });
});

describe("sandbox limits", () => {
  const limits = { prlimit: "/usr/bin/prlimit", maxProcesses: 256, maxFileSizeMB: 1, maxMemoryMB: 2 };

  it("runs the command under prlimit with each limit, hard and soft alike", () => {
    const args = buildBwrapArgs(mergedUsr, { ...spec, limits }, ["sh", "-c", "make"]);
    expect(args.slice(args.indexOf("--") + 1)).toEqual([
      "/usr/bin/prlimit",
      "--nproc=256",
      "--fsize=1048576",
      "--data=2097152",
      "--",
      "sh",
      "-c",
      "make",
    ]);
  });

  it("leaves out a limit set to 0, and prlimit entirely when all are", () => {
    expect(limitArgs({ ...limits, maxFileSizeMB: 0 })).toEqual([
      "/usr/bin/prlimit",
      "--nproc=256",
      "--data=2097152",
      "--",
    ]);
    expect(limitArgs({ ...limits, maxProcesses: 0, maxFileSizeMB: 0, maxMemoryMB: 0 })).toEqual([]);
    const args = buildBwrapArgs(mergedUsr, spec, ["true"]);
    expect(args.slice(args.indexOf("--") + 1)).toEqual(["true"]);
  });

  it("forbids nested user namespaces when bwrap supports it, with the --unshare-user it requires", () => {
    const args = buildBwrapArgs(mergedUsr, { ...spec, disableUserns: true }, ["true"]);
    const at = args.indexOf("--disable-userns");
    expect(at).toBeGreaterThan(args.indexOf("--unshare-all"));
    expect(args[at - 1]).toBe("--unshare-user");
    expect(buildBwrapArgs(mergedUsr, spec, ["true"])).not.toContain("--disable-userns");
  });
});
