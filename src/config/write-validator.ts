// The build's second step (`npm run build`): the config file's validator as code beside the compiled modules, with
// the schema it was made from, so file-validator.ts uses it only while it still matches.
import { renameSync, writeFileSync } from "node:fs";
import { Ajv } from "ajv";
import standalone from "ajv/dist/standalone/index.js";
import { fileSchema } from "./file-schema.js";
import { VALIDATOR_OPTIONS, WRITTEN_VALIDATOR } from "./file-validator.js";

// ajv's standalone module is CommonJS: under NodeNext its default import is the module object.
const standaloneCode = standalone as unknown as typeof standalone.default;

const ajv = new Ajv({ ...VALIDATOR_OPTIONS, code: { source: true } });
// ajv defines the root function last; as a parenthesized expression V8 compiles it as the file loads, where a plain
// declaration is parsed twice, the second time at its first call (~5-9 ms of every start). Left as is if ajv's differs.
const code = standaloneCode(ajv, ajv.compile(fileSchema)).replace(
  /^("use strict";)module\.exports = (\w+);module\.exports\.default = \2;([\s\S]*)function \2\(([\s\S]*)$/,
  "$1$3const $2 = (function $2($4);module.exports = $2;module.exports.default = $2;",
);
// Written aside and renamed into place: a build cut off midway leaves the old file or none, not half of one.
const target = new URL(WRITTEN_VALIDATOR, import.meta.url);
const partial = new URL(`${WRITTEN_VALIDATOR}.${process.pid}.tmp`, import.meta.url);
writeFileSync(partial, `${code}\nmodule.exports.schemaJson = ${JSON.stringify(JSON.stringify(fileSchema))};\n`);
renameSync(partial, target);
