import { createRequire } from "node:module";
import type { Ajv, ValidateFunction } from "ajv";
import type ajvFormats from "ajv-formats";
import type { ToolParameters } from "./tool.js";

/** Compiles tools' argument schemas for a registry and its views. ajv (~10 MB, ~40 ms) loads on the first call that
 * needs it; it is CommonJS, so this stays synchronous. Schemas are an MCP server's to choose and checks run on the
 * event loop, so no keyword may cost more than linear time: patterns run on RE2 (`^(a+)+$` cannot backtrack; one RE2
 * refuses leaves the tool out) and `uniqueItems` compares canonical JSON in a set (ajv's own takes 30 s for 20,000
 * objects). RE2's time per character grows with the pattern's program (`[a-z]{1000}` twenty times: 14 s for 100 KB),
 * hence MATCH_BUDGET and PROGRAM_BUDGET; SIZE_BUDGET counts each `$ref` as what it names (thirty levels of `allOf`
 * referring twice to the next are a few lines that ajv walks 2^30 times). */
export class SchemaCompiler {
  private ajv?: Ajv;
  /** The program sizes of the patterns of the schema being compiled. */
  private programs = 0;

  compile(schema: ToolParameters): ValidateFunction {
    if (!this.ajv) {
      const require = createRequire(import.meta.url);
      const { Ajv } = require("ajv") as typeof import("ajv");
      const addFormats = require("ajv-formats") as typeof ajvFormats.default;
      const regExp = Object.assign(
        (pattern: string) => {
          const re = (require("re2js") as typeof import("re2js")).RE2JS.compile(pattern);
          const size = re.programSize();
          this.programs += size;
          if (this.programs > PROGRAM_BUDGET) throw new Error("its patterns are too complex to check");
          return {
            test: (text: string) => text.length * size <= MATCH_BUDGET && re.test(text),
            toString: () => pattern,
          };
        },
        { code: "re2js" },
      );
      // Schemas from MCP servers use formats ("uri", "date-time"); unknown ones are ignored without console noise.
      const ajv = addFormats(
        new Ajv({ allErrors: true, useDefaults: true, strict: false, logger: false, code: { regExp } }),
      );
      ajv.removeKeyword("uniqueItems");
      ajv.addKeyword({
        keyword: "uniqueItems",
        type: "array",
        schemaType: "boolean",
        error: { message: "must not have duplicate items" },
        validate: (unique: boolean, items: unknown[]) => !unique || new Set(items.map(canonical)).size === items.length,
      });
      this.ajv = ajv;
    }
    this.programs = 0;
    if (expandedSize(schema) > SIZE_BUDGET)
      throw new Error("its schema is too large to check once its $refs are expanded");
    return this.ajv.compile(schema);
  }
}

/** Text length × program size one pattern check may cost (about 0.15 s); a longer text does not match. */
const MATCH_BUDGET = 20_000_000;
/** All patterns of one schema together (a realistic pattern is a few dozen): compiling costs time too. */
const PROGRAM_BUDGET = 20_000;
/** JSON values in a schema once its `$ref`s are expanded. */
const SIZE_BUDGET = 20_000;
/** Keywords whose values are data, not schemas: a `$ref` in them refers to nothing. */
const DATA_KEYWORDS = new Set(["enum", "const", "default", "examples"]);

/** JSON values in `root`, each `$ref` counted as what it names (a reference back into itself once: ajv follows it only
 * as deep as the data goes). Only `#…` pointers can be counted: another reference, or a nested `$id`, throws. */
function expandedSize(root: unknown): number {
  const sizes = new Map<string, number>();
  const open = new Set<string>();
  const data = (node: unknown): number =>
    node && typeof node === "object" ? Object.values(node).reduce((n: number, v) => n + data(v), 1) : 1;
  const schema = (node: unknown, top = false): number => {
    if (!node || typeof node !== "object") return 1;
    let size = 1;
    for (const [key, value] of Object.entries(node)) {
      if (key === "$id" && typeof value === "string" && !top) throw new Error("a nested $id is not supported");
      if (key === "$ref" && typeof value === "string") size += ref(value);
      else size += DATA_KEYWORDS.has(key) ? data(value) : schema(value);
      if (size > SIZE_BUDGET) return size;
    }
    return size;
  };
  const ref = (pointer: string): number => {
    if (!/^#(\/|$)/.test(pointer)) throw new Error(`its $ref "${pointer.slice(0, 80)}" is not a #/… pointer`);
    if (open.has(pointer)) return 1;
    let size = sizes.get(pointer);
    if (size === undefined) {
      let target: unknown = root;
      const keys = pointer.slice(2).split("/");
      for (const part of keys[0] === "" ? keys.slice(1) : keys) {
        const key = decodeURIComponent(part).replaceAll("~1", "/").replaceAll("~0", "~");
        target = target && typeof target === "object" ? (target as Record<string, unknown>)[key] : undefined;
      }
      open.add(pointer);
      size = schema(target);
      open.delete(pointer);
      sizes.set(pointer, size);
    }
    return size;
  };
  return schema(root, true);
}

/** JSON with object keys sorted: equal for values JSON Schema calls equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
