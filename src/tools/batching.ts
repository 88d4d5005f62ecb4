/** Consecutive read-only calls form one concurrent batch; any other call runs alone. Batches of indexes, in order. */
export function planBatches<T>(calls: readonly T[], isReadOnly: (call: T) => boolean): number[][] {
  const batches: number[][] = [];
  calls.forEach((call, index) => {
    const last = batches.at(-1);
    if (last && isReadOnly(call) && isReadOnly(calls[last[0]])) last.push(index);
    else batches.push([index]);
  });
  return batches;
}
