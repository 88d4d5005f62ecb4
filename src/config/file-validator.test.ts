import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import { describe, expect, it } from "vitest";
import { tempHome } from "../../test/helpers/app.js";
import { packageRoot } from "../paths.js";
import { fileSchema } from "./file-schema.js";
import { fileValidator, VALIDATOR_OPTIONS } from "./file-validator.js";

/** What `npm run build` wrote (dist/), against the schema compiled here from the sources. */
const writtenPath = join(packageRoot(), "dist/src/config/file-validator.cjs");

const samples: unknown[] = [
  {},
  { agent: { maxIterations: 5 }, exec: { network: true } },
  { agent: { maxIterations: "5" } },
  { agnet: {} },
  { cron: { tools: ["read_file"] } },
  { mcp: { servers: { files: { command: "npx", args: ["-y", "server"] } } } },
  { mcp: { servers: { web: { url: "http://127.0.0.1:1/mcp", headers: { a: 1 } } } } },
  { retention: { mediaDays: -1 } },
  [],
  null,
];

function run(validate: ValidateFunction, sample: unknown) {
  const data = structuredClone(sample);
  const ok = validate(data);
  return { ok, data, errors: validate.errors ?? null };
}

describe("the config file's validator written by the build", () => {
  it("exists in dist, is of the current schema, and answers every sample like ajv compiling the schema", () => {
    expect(existsSync(writtenPath), "run npm run build").toBe(true);
    const written = createRequire(import.meta.url)(writtenPath) as ValidateFunction & { schemaJson: string };
    expect(written.schemaJson).toBe(JSON.stringify(fileSchema));
    expect(readFileSync(writtenPath, "utf8"), "compiled as it loads").toMatch(
      /const validate\d+ = \(function validate/,
    );
    const compiled = new Ajv(VALIDATOR_OPTIONS).compile(fileSchema);
    for (const sample of samples) expect(run(written, sample), JSON.stringify(sample)).toEqual(run(compiled, sample));
  });

  it("fills fresh defaults on every call: a config changed in place does not change the next one", () => {
    const written = createRequire(import.meta.url)(writtenPath) as ValidateFunction;
    const first = {} as { agent: { maxIterations: number } };
    written(first);
    first.agent.maxIterations = 1;
    const second = {} as { agent: { maxIterations: number } };
    written(second);
    expect(second.agent.maxIterations).toBe(40);
  });
});

describe("a written validator that cannot be trusted", () => {
  const good = () => readFileSync(writtenPath, "utf8");
  const variants: Record<string, () => string> = {
    "of an older schema (built by plain tsc)": () =>
      `module.exports = () => true;\nmodule.exports.schemaJson = ${JSON.stringify(JSON.stringify({ type: "object" }))};\n`,
    "cut off while the build wrote it": () => good().slice(0, 3000),
    "cut off before its schema line": () => good().slice(0, good().lastIndexOf("module.exports.schemaJson")),
    empty: () => "",
    "throwing when loaded": () => 'throw new Error("broken install");\n',
    "not a function, with the current schema": () =>
      `module.exports = { schemaJson: ${JSON.stringify(JSON.stringify(fileSchema))} };\n`,
  };

  it.each(Object.keys(variants))("one %s is replaced by the schema compiled from the sources", (name) => {
    const dir = tempHome("pincer-validator-");
    const path = join(dir, "file-validator.cjs");
    try {
      writeFileSync(path, variants[name]());
      const validate = fileValidator(path);
      const compiled = new Ajv(VALIDATOR_OPTIONS).compile(fileSchema);
      for (const sample of samples)
        expect(run(validate, sample), JSON.stringify(sample)).toEqual(run(compiled, sample));
      expect(validate({ agnet: {} })).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a missing one too, and the written one is used as it is", () => {
    expect(fileValidator("./no-such-validator.cjs")({ agnet: {} })).toBe(false);
    expect(fileValidator(writtenPath)).toBe(createRequire(import.meta.url)(writtenPath));
  });
});
