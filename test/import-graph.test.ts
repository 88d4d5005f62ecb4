import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// The layering rules of docs/operations.md ("How it works"), checked on the real sources:
// no import cycle in src/ and channels/, no import that points up the floors below, and a channel
// reaches outside its own folder only for the bus contract (src/bus) and, as types, the configuration.
const root = resolve(import.meta.dirname, "..");

/**
 * The floors, lowest first: a file may import its own floor and the ones below, never one above. A path belongs to the
 * floor of its longest matching prefix. The tool kit (the tool contract, the sandboxed file and process access, the
 * result cap) sits below memory and the scheduler, which read files through it; the model's tools built on memory and
 * the scheduler (memory_search, cron) sit above them.
 */
const FLOORS: Array<{ floor: string; paths: string[] }> = [
  {
    floor: "base: utilities, configuration, the bus contract",
    paths: [
      "src/log.ts",
      "src/paths.ts",
      "src/coalesced.ts",
      "src/slots.ts",
      "src/attempt.ts",
      "src/time-zone.ts",
      "src/text.ts",
      "src/turn-facts.ts",
    ].concat(["src/bus/", "src/config/"]),
  },
  { floor: "store", paths: ["src/store/"] },
  { floor: "model client, access, cluster", paths: ["src/llm/", "src/access/", "src/cluster/"] },
  {
    floor: "tool kit",
    paths: [
      "src/tools/tool.ts",
      "src/tools/files/",
      "src/tools/exec/",
      "src/tools/result-cap.ts",
      "src/tools/worker-pool.ts",
    ],
  },
  { floor: "usage", paths: ["src/usage/"] },
  {
    floor: "memory, scheduler, voice, approvals",
    paths: ["src/memory/", "src/scheduler/", "src/voice/", "src/approvals/"],
  },
  { floor: "the model's tools", paths: ["src/tools/"] },
  { floor: "agent", paths: ["src/agent/"] },
  {
    floor: "app, cli, web, setup, channels",
    paths: ["src/app.ts", "src/app/", "src/cli/", "src/web/", "src/setup/", "channels/"],
  },
];

/** The index of a file's floor in FLOORS; a file no floor claims is an error, so a new folder must be placed. */
function floorOf(file: string): number {
  let best = -1;
  let length = -1;
  FLOORS.forEach(({ paths }, i) => {
    for (const p of paths) {
      if ((file === p || (p.endsWith("/") && file.startsWith(p))) && p.length > length) [best, length] = [i, p.length];
    }
  });
  if (best < 0) throw new Error(`${file} is on no floor: add it to FLOORS in test/import-graph.test.ts`);
  return best;
}

/** Imports that point up a floor, with the floors named. */
function upward(files: Map<string, Edge[]>): string[] {
  const found: string[] = [];
  for (const [file, list] of files) {
    for (const edge of list) {
      const [from, to] = [floorOf(file), floorOf(edge.to)];
      if (to > from) found.push(`${file} (${FLOORS[from].floor}) -> ${edge.to} (${FLOORS[to].floor})`);
    }
  }
  return found.sort();
}

interface Edge {
  to: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts") && !f.endsWith(".d.ts"))
    .map((f) => join(dir, f));
}

/** `./x.js` from `src/a/b.ts` is `src/a/x.ts` (or `src/a/x/index.ts`); packages are not followed. */
function resolveSpecifier(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  const base = join(dirname(from), spec).replace(/\.js$/, "");
  for (const candidate of [`${base}.ts`, join(base, "index.ts")]) {
    if (existsSync(join(root, candidate))) return candidate;
  }
  throw new Error(`${from}: cannot resolve ${spec}`);
}

/** Every static import and re-export and every `import("…")`, type-only ones marked. */
function importsOf(file: string, text: string): Edge[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const edges: Edge[] = [];
  const add = (spec: ts.Expression | undefined, typeOnly: boolean) => {
    if (!spec || !ts.isStringLiteral(spec)) return;
    const to = resolveSpecifier(file, spec.text);
    if (to) edges.push({ to, typeOnly });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const allNamedTypes =
        !!named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
      add(node.moduleSpecifier, !!clause && (clause.isTypeOnly || (!clause.name && allNamedTypes)));
    } else if (ts.isExportDeclaration(node)) {
      const named = node.exportClause;
      const allTypes = !!named && ts.isNamedExports(named) && named.elements.every((e) => e.isTypeOnly);
      add(node.moduleSpecifier, node.isTypeOnly || allTypes);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

function graph(): Map<string, Edge[]> {
  const files = [...sourceFiles("src"), ...sourceFiles("channels")];
  return new Map(files.map((f) => [f, importsOf(f, readFileSync(join(root, f), "utf8"))]));
}

/** Each cycle once, as the path that closes it (Tarjan's strongly connected components). */
function cyclesOf(edges: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (edges.get(v) ?? []).includes(v)) components.push(component.sort());
    }
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) connect(v);
  return components;
}

describe("the import graph", () => {
  const files = graph();

  it("has no cycle in src/ and channels/, type-only imports included", () => {
    const edges = new Map([...files].map(([f, list]) => [f, list.map((e) => e.to)]));
    expect(cyclesOf(edges)).toEqual([]);
  });

  it("has no import that points up a floor, type-only imports included", () => {
    expect(upward(files)).toEqual([]);
  });

  it("places a file by its longest prefix and finds an upward import", () => {
    expect(FLOORS[floorOf("src/tools/files/safe-io.ts")].floor).toBe("tool kit");
    expect(FLOORS[floorOf("src/tools/cron-tool.ts")].floor).toBe("the model's tools");
    expect(FLOORS[floorOf("src/time-zone.ts")].floor).toMatch(/^base/);
    expect(() => floorOf("src/nowhere/x.ts")).toThrow(/on no floor/);
    const sample = new Map<string, Edge[]>([
      ["src/store/jobs.ts", [{ to: "src/scheduler/schedule.ts", typeOnly: true }]],
      ["src/agent/loop.ts", [{ to: "src/store/store.ts", typeOnly: false }]],
    ]);
    expect(upward(sample)).toEqual([
      "src/store/jobs.ts (store) -> src/scheduler/schedule.ts (memory, scheduler, voice, approvals)",
    ]);
  });

  it("lets a channel import only its own folder, src/bus and the configuration's types", () => {
    const strays: string[] = [];
    for (const [file, list] of files) {
      const own = file.match(/^channels\/[^/]+\//)?.[0];
      if (!own) continue;
      for (const edge of list) {
        const allowed =
          edge.to.startsWith(own) ||
          edge.to.startsWith("src/bus/") ||
          (edge.typeOnly && edge.to.startsWith("src/config/"));
        if (!allowed) strays.push(`${file} -> ${edge.to}${edge.typeOnly ? " (types)" : ""}`);
      }
    }
    expect(strays).toEqual([]);
  });

  it("sees what it checks: a cycle, a type-only import and a dynamic import are all found", () => {
    expect(
      cyclesOf(
        new Map([
          ["a", ["b"]],
          ["b", ["c"]],
          ["c", ["a"]],
          ["d", ["a"]],
        ]),
      ),
    ).toEqual([["a", "b", "c"]]);
    expect(cyclesOf(new Map([["a", ["a"]]]))).toEqual([["a"]]);
    expect(
      cyclesOf(
        new Map([
          ["a", ["b"]],
          ["b", []],
        ]),
      ),
    ).toEqual([]);
    const text = [
      'import type { Switchboard } from "../../src/bus/switchboard.js";',
      'import { type Config } from "../../src/config/config.js";',
      'import { mediaDir, type X } from "../../src/paths.js";',
      'export { sessionKeyOf } from "../../src/bus/types.js";',
      'const m = await import("../../src/app.js");',
      'import { readFileSync } from "node:fs";',
    ].join("\n");
    expect(importsOf("channels/telegram/x.ts", text)).toEqual([
      { to: "src/bus/switchboard.ts", typeOnly: true },
      { to: "src/config/config.ts", typeOnly: true },
      { to: "src/paths.ts", typeOnly: false },
      { to: "src/bus/types.ts", typeOnly: false },
      { to: "src/app.ts", typeOnly: false },
    ]);
  });
});
