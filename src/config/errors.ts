/** A configuration problem, worded as one sentence that names the variable. */
export class ConfigError extends Error {}
