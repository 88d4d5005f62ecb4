/**
 * One bot alone through the soak's waves, with the Node options given, printing its memory every
 * 1,500 turns and 3, 15 and 30 s after the last reply: for trying V8 settings one at a time.
 *
 *   npx tsx bench/soak-alone.ts [NODE_OPTIONS] [turns=6000] [pincer|baseline] [config.json as JSON] [chats=300]
 *   npx tsx bench/soak-alone.ts "--max-semi-space-size=64" 3000
 *   npx tsx bench/soak-alone.ts "" 3000 pincer '{"agent":{"maxConcurrentTurns":1}}'
 */
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { soakWave } from "./figures.js";
import { drainTelegram, type Kind, startBot, startPlatforms } from "./processes.js";

const [nodeOptions = "", turnsArg = "6000", kindArg = "pincer", configArg = "", chatsArg = "300"] =
  process.argv.slice(2);
const turns = Number(turnsArg);
const chats = Number(chatsArg);
const model = await startFakeOpenAI();
model.respond(() => ({ content: "ok" }));
const places = await startPlatforms();
const env = nodeOptions ? { NODE_OPTIONS: nodeOptions } : undefined;
const config = configArg ? (JSON.parse(configArg) as Record<string, unknown>) : undefined;
const bot = await startBot(kindArg as Kind, { model, platforms: places, probe: true, env, config });
const show = async (label: string) => {
  const m = await bot.memory();
  const mb = (v = 0) => (v / 2 ** 20).toFixed(0);
  const s = m.spaces;
  console.log(
    `${label}: rss ${mb(bot.rssBytes())} heapTotal ${mb(m.heapTotal)} heapUsed ${mb(m.heapUsed)} arrayBuffers ${mb(m.arrayBuffers)} new ${mb(s.new_space)} old ${mb(s.old_space)} code ${mb(s.code_space)} large ${mb(s.large_object_space)}`,
  );
};
try {
  for (let sent = 0; sent < turns; sent += chats) {
    await soakWave(places.telegram, Math.min(chats, turns - sent), sent);
    model.requests.length = 0;
    if (Math.floor((sent + chats) / 1500) > Math.floor(sent / 1500)) await show(`${sent + chats} turns`);
  }
  await drainTelegram(places.telegram);
  let waited = 0;
  for (const at of [3, 15, 30]) {
    await new Promise((resolve) => setTimeout(resolve, (at - waited) * 1000));
    waited = at;
    await show(`idle ${at} s`);
  }
} finally {
  await bot.stop();
  await places.close();
  await model.close();
}
