import { readdirSync, readFileSync } from "node:fs";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { describe, expect, it } from "vitest";
import { packageRoot } from "../paths.js";
import { estimateTokens } from "./estimate-tokens.js";

const root = packageRoot();
const read = (path: string) => readFileSync(`${root}/${path}`, "utf8");
const exact = (text: string) => countTokens(text, { disallowedSpecial: new Set() });

/** What a chat carries: the project's own prose, code and JSON, and messages in other scripts. */
const KINDS: Record<string, string> = {
  "English prose and Markdown": [
    "README.md",
    ...readdirSync(`${root}/docs`)
      .filter((f) => f.endsWith(".md"))
      .map((f) => `docs/${f}`),
  ]
    .map(read)
    .join("\n"),
  "workspace prompt files": readdirSync(`${root}/workspace`)
    .map((f) => read(`workspace/${f}`))
    .join("\n"),
  TypeScript: ["src/agent/loop.ts", "src/tools/files/safe-open.ts", "src/llm/tokens.ts"].map(read).join("\n"),
  JSON: [read("package.json"), read("tsconfig.json"), read("biome.json")].join("\n"),
  Chinese:
    "明天下午三点我要去医院看牙医，请提醒我提前半小时出发。另外，帮我查一下周末北京的天气怎么样，如果下雨的话我们就不去爬山了，改成在家看电影。",
  Japanese:
    "来週の月曜日に東京で会議があります。新幹線の切符を予約して、ホテルも駅の近くで探してください。会議の資料は金曜日までに準備しておく必要があります。",
  Korean: "내일 아침 아홉 시에 회의가 있어요. 회의 자료를 미리 준비하고, 끝나면 점심을 같이 먹을 식당을 예약해 주세요.",
  Russian:
    "Напомни мне завтра в девять утра позвонить маме. Ещё найди, пожалуйста, хороший рецепт борща и составь список покупок на выходные.",
  German:
    "Kannst du mir bitte morgen früh um acht Uhr eine Erinnerung schicken? Ich muss die Unterlagen für das Finanzamt fertig machen.",
  emoji: "Happy birthday!! 🎂🎉🎈 Love you ❤️❤️ see you soon 👋😘 🇩🇪 👨‍👩‍👧",
  "ids and numbers":
    "chat 4242, message 1733051234567, sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
};

describe("estimateTokens", () => {
  // A count too low sends more than the window holds; too high only leaves room unused.
  it("comes close to o200k_base for every kind of text a chat carries, and rather above it", () => {
    const ratios = Object.fromEntries(
      Object.entries(KINDS).map(([kind, text]) => [kind, Math.round((estimateTokens(text) / exact(text)) * 100) / 100]),
    );
    for (const [kind, ratio] of Object.entries(ratios)) {
      expect(ratio, kind).toBeGreaterThanOrEqual(0.85);
      expect(ratio, kind).toBeLessThanOrEqual(1.5);
    }
  });
});
