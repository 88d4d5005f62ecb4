import { describe, expect, it } from "vitest";
import { planBatches } from "./batching.js";

const ro = (name: string) => name.startsWith("r");

describe("planBatches", () => {
  it.each([
    [[], []],
    [["r1"], [[0]]],
    [["r1", "r2", "r3"], [[0, 1, 2]]],
    [["w1"], [[0]]],
    [
      ["w1", "w2"],
      [[0], [1]],
    ],
    [
      ["r1", "r2", "w1", "r3"],
      [[0, 1], [2], [3]],
    ],
    [
      ["w1", "r1", "r2", "w2", "w3", "r3", "r4"],
      [[0], [1, 2], [3], [4], [5, 6]],
    ],
  ])("%j -> %j", (calls, expected) => {
    expect(planBatches(calls, ro)).toEqual(expected);
  });
});
