/** V8 grows the heap to 4× what survived a full collection where Node may use 2 GB (~8 GB of RAM), 2× below: the busy
 * daemon kept ~280 MB for ~35 MB live. 2× everywhere gives ~200 MB (docs/benchmarks.md, "The soak"); owners' flags win. */
export const HEAP_GROWTH_FLAG = "--heap-growing-percent=100";
const OWNERS_HEAP_FLAG = /^--(heap[-_]growing[-_]percent|max[-_]old[-_]space[-_]size)\b/;

/** The V8 flags to set at start: none when the owner chose the heap's size or growth. */
export function heapGrowthFlags(execArgv: readonly string[], nodeOptions = ""): string[] {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)];
  return given.some((arg) => OWNERS_HEAP_FLAG.test(arg)) ? [] : [HEAP_GROWTH_FLAG];
}
