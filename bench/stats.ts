/** Median and percentiles of a sample, in the sample's unit. */
export function summary(samples: number[]): { median: number; p90: number; p99: number; min: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { median: at(0.5), p90: at(0.9), p99: at(0.99), min: sorted[0] };
}

export function ms(value: number): string {
  return `${value.toFixed(3)} ms`;
}
