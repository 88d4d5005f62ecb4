/** After a full collection V8 lets the heap grow to a multiple of what survived: up to 4× where Node may use 2 GB or
 * more (machines from about 8 GB), at most 2× where it may use less. Busy for minutes, the daemon settles at the big
 * machine's multiple and keeps the pages: ~280 MB after the bench's 6,000 turns, of which ~35 MB live. It asks for
 * the small machine's 2× everywhere (~200 MB there), for about one more full collection every four seconds while
 * busy (docs/benchmarks.md, "The soak"). A heap flag the owner gave node (ExecStart=, NODE_OPTIONS) wins. */
export const HEAP_GROWTH_FLAG = "--heap-growing-percent=100";

/** The V8 flag to set at start, or undefined when the owner chose the heap's size or growth. */
export function heapGrowthFlag(execArgv: readonly string[], nodeOptions = ""): string | undefined {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)];
  const chosen = given.some((arg) => /^--(heap[-_]growing[-_]percent|max[-_]old[-_]space[-_]size)\b/.test(arg));
  return chosen ? undefined : HEAP_GROWTH_FLAG;
}
