import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createPidsCgroup, inCgroup, ownPidsCgroup } from "./cgroup.js";

describe("ownPidsCgroup", () => {
  it("finds the v1 pids hierarchy", () => {
    expect(ownPidsCgroup("9:name=systemd:/\n8:pids:/user.slice/x\n4:memory:/m\n0::/\n", "/cg")).toBe(
      "/cg/pids/user.slice/x",
    );
  });

  it("uses v2 only where pids is enabled for the subtree (delegated)", () => {
    const fs = mkdtempSync(join(tmpdir(), "pincer-cgroup-"));
    try {
      writeFileSync(join(fs, "cgroup.controllers"), "cpu memory pids\n");
      mkdirSync(join(fs, "app"));
      writeFileSync(join(fs, "app", "cgroup.subtree_control"), "memory\n");
      expect(ownPidsCgroup("0::/app\n", fs)).toBeUndefined();
      writeFileSync(join(fs, "app", "cgroup.subtree_control"), "memory pids\n");
      expect(ownPidsCgroup("0::/app\n", fs)).toBe(join(fs, "app"));
    } finally {
      rmSync(fs, { recursive: true, force: true });
    }
  });

  it("starts a command that first moves itself into the cgroup", () => {
    expect(inCgroup("/cg/pids/p-1", "/usr/bin/bwrap", ["--ro-bind", "/usr", "/usr"])).toEqual({
      file: "/bin/sh",
      args: [
        "-c",
        'echo $$ > "$0/cgroup.procs" && exec "$@"',
        "/cg/pids/p-1",
        "/usr/bin/bwrap",
        "--ro-bind",
        "/usr",
        "/usr",
      ],
    });
  });
});

describe("createPidsCgroup", () => {
  it("leaves alone a folder that already has the name, and makes none", () => {
    const parent = mkdtempSync(join(tmpdir(), "pincer-cgroup-"));
    try {
      mkdirSync(join(parent, "pincer-1-1"));
      expect(createPidsCgroup(parent, "pincer-1-1", 64)).toBeUndefined();
      expect(existsSync(join(parent, "pincer-1-1"))).toBe(true);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});
