/**
 * The build's second step (`npm run build`): writes the config file's validator as plain code
 * next to the compiled config modules, with the schema it was made from, so file-validator.ts
 * can use it only while it still matches.
 */
import { writeFileSync } from "node:fs";
import { Ajv } from "ajv";
import standalone from "ajv/dist/standalone/index.js";
import { fileSchema } from "./file-schema.js";
import { VALIDATOR_OPTIONS, WRITTEN_VALIDATOR } from "./file-validator.js";

// ajv's standalone module is CommonJS: under NodeNext its default import is the module object.
const standaloneCode = standalone as unknown as typeof standalone.default;

const ajv = new Ajv({ ...VALIDATOR_OPTIONS, code: { source: true } });
const code = standaloneCode(ajv, ajv.compile(fileSchema));
writeFileSync(
  new URL(WRITTEN_VALIDATOR, import.meta.url),
  `${code}\nmodule.exports.schemaJson = ${JSON.stringify(JSON.stringify(fileSchema))};\n`,
);
