/** V8 lets the heap grow to 4× what survived a full collection where Node may use 2 GB or more (from ~8 GB of RAM),
 * 2× below: busy for minutes, the daemon kept ~280 MB for ~35 MB live. It asks for 2× everywhere (~200 MB), for full
 * collections twice as often (docs/benchmarks.md, "The soak"). A heap flag the owner gave node wins. */
export const HEAP_GROWTH_FLAG = "--heap-growing-percent=100";

/** The V8 flag to set at start, or undefined when the owner chose the heap's size or growth. */
export function heapGrowthFlag(execArgv: readonly string[], nodeOptions = ""): string | undefined {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)];
  const chosen = given.some((arg) => /^--(heap[-_]growing[-_]percent|max[-_]old[-_]space[-_]size)\b/.test(arg));
  return chosen ? undefined : HEAP_GROWTH_FLAG;
}
