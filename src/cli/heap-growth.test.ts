import { describe, expect, it } from "vitest";
import { HEAP_GROWTH_FLAG, heapGrowthFlag } from "./heap-growth.js";

describe("heapGrowthFlag", () => {
  it("caps the heap's growth when the owner gave node no heap flag", () => {
    expect(heapGrowthFlag([], "")).toBe(HEAP_GROWTH_FLAG);
    expect(heapGrowthFlag(["--enable-source-maps"], "--stack-trace-limit=50")).toBe(HEAP_GROWTH_FLAG);
  });

  it("leaves the heap alone when the owner sized it or chose its growth, on node's command line or in NODE_OPTIONS", () => {
    expect(heapGrowthFlag(["--max-old-space-size=512"])).toBeUndefined();
    expect(heapGrowthFlag(["--heap_growing_percent=50"])).toBeUndefined();
    expect(heapGrowthFlag([], "--enable-source-maps  --max_old_space_size=256")).toBeUndefined();
  });
});
