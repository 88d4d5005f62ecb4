/**
 * The batching rule for one model reply with several tool calls: walk the calls in order;
 * consecutive read-only calls form one batch that runs concurrently; any other call ends the
 * batch and runs alone. Returns batches of indexes into `calls`, in order.
 */
export function planBatches<T>(calls: readonly T[], isReadOnly: (call: T) => boolean): number[][] {
  const batches: number[][] = [];
  calls.forEach((call, index) => {
    const last = batches.at(-1);
    if (last && isReadOnly(call) && isReadOnly(calls[last[0]])) last.push(index);
    else batches.push([index]);
  });
  return batches;
}
