/**
 * The batching rule for one model reply with several tool calls: walk the calls in order;
 * consecutive read-only calls form one batch that runs concurrently; any other call ends the
 * batch and runs alone. Returns batches of indexes into `calls`, in order.
 */
export function planBatches<T>(calls: readonly T[], isReadOnly: (call: T) => boolean): number[][] {
  const batches: number[][] = [];
  let current: number[] = [];
  calls.forEach((call, index) => {
    if (isReadOnly(call)) {
      current.push(index);
      return;
    }
    if (current.length > 0) batches.push(current);
    current = [];
    batches.push([index]);
  });
  if (current.length > 0) batches.push(current);
  return batches;
}
