import { describe, expect, it } from "vitest";
import { HEAP_GROWTH_FLAG, heapGrowthFlags } from "./heap-growth.js";

describe("heapGrowthFlags", () => {
  it("caps the heap's growth when the owner gave node no heap flag", () => {
    expect(heapGrowthFlags([], "")).toEqual([HEAP_GROWTH_FLAG]);
    expect(heapGrowthFlags(["--enable-source-maps"], "--stack-trace-limit=50")).toEqual([HEAP_GROWTH_FLAG]);
  });

  it("leaves the heap alone when the owner sized it or chose its growth, on node's command line or in NODE_OPTIONS", () => {
    expect(heapGrowthFlags(["--max-old-space-size=512"])).toEqual([]);
    expect(heapGrowthFlags(["--heap_growing_percent=50"])).toEqual([]);
    expect(heapGrowthFlags([], "--enable-source-maps  --max_old_space_size=256")).toEqual([]);
  });
});
