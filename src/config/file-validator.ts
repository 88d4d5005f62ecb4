import { createRequire } from "node:module";
import type { ValidateFunction } from "ajv";
import { type FileConfig, fileSchema } from "./file-schema.js";

export const VALIDATOR_OPTIONS = { useDefaults: true, allErrors: false, strict: false } as const;

/** Written by `npm run build` next to the compiled modules (see write-validator.ts). */
export const WRITTEN_VALIDATOR = "./file-validator.cjs";

/** The validator the build wrote as code, so a start neither loads ajv (~30 ms) nor compiles the schema (~50 ms); from
 * the sources, or when it is of another schema or unloadable (plain tsc, a cut-off build), compiled here instead. */
export function fileValidator(written: string = WRITTEN_VALIDATOR): ValidateFunction<FileConfig> {
  const require = createRequire(import.meta.url);
  try {
    const loaded = require(written) as ValidateFunction<FileConfig> & { schemaJson?: string };
    if (typeof loaded === "function" && loaded.schemaJson === JSON.stringify(fileSchema)) return loaded;
  } catch {
    // Missing or broken: a start must not fail on a build artefact the schema can replace.
  }
  const { Ajv } = require("ajv") as typeof import("ajv");
  return new Ajv(VALIDATOR_OPTIONS).compile<FileConfig>(fileSchema);
}
