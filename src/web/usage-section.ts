import type { Store } from "../store/store.js";
import { SLOT_MS } from "../store/usage.js";
import { formatDay } from "../time-zone.js";
import { periodsAt } from "../usage/periods.js";
import { costText } from "../usage/report.js";
import { esc } from "./html.js";

type UsageView = Awaited<ReturnType<typeof collectUsage>>;

const DAYS = 30;

/** The page's usage: tokens and cost of each of the last 30 days (local days), and this month's chats. */
export async function collectUsage(store: Store["usage"], timezone: string, now: number) {
  const starts = [periodsAt(now, timezone).dayStart];
  while (starts.length < DAYS) starts.unshift(periodsAt(starts[0] - 1, timezone).dayStart);
  const days = starts.map((start) => ({ day: formatDay(start, timezone), tokens: 0, cost: 0 }));
  const index = new Map(days.map((d, i) => [d.day, i]));
  const [slots, chats] = await Promise.all([store.slots(starts[0]), store.chats(periodsAt(now, timezone).monthStart)]);
  for (const { slot, tokens, cost } of slots) {
    const day = days[index.get(formatDay(slot * SLOT_MS, timezone)) ?? -1];
    if (day) {
      day.tokens += tokens;
      day.cost += cost;
    }
  }
  return { days, chats };
}

const W = 600;
const H = 150;
const number = (n: number) => n.toLocaleString("en-US");

/** A bar chart drawn here (no library): per day a token bar and, beside it, a cost bar, each to its own scale. */
export function usageChart(days: UsageView["days"]): string {
  const maxTokens = Math.max(1, ...days.map((d) => d.tokens));
  const maxCost = Math.max(Number.MIN_VALUE, ...days.map((d) => d.cost));
  const step = W / days.length;
  const bar = (kind: string, x: number, share: number) => {
    const h = Math.round(share * (H - 20) * 10) / 10;
    return `<rect class="${kind}" x="${x.toFixed(1)}" y="${(H - 16 - h).toFixed(1)}" width="${(step * 0.4).toFixed(1)}" height="${h}"/>`;
  };
  const bars = days.map((d, i) => {
    const title = `${d.day}: ${number(d.tokens)} tokens, cost ${d.cost.toFixed(4)}`;
    return `<g><title>${esc(title)}</title>${bar("tokens", i * step + step * 0.1, d.tokens / maxTokens)}${bar("cost", i * step + step * 0.5, d.cost / maxCost)}</g>`;
  });
  const label = (x: number, anchor: string, text: string) =>
    `<text x="${x}" y="${H - 3}" text-anchor="${anchor}">${esc(text)}</text>`;
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="Tokens and cost per day, last ${days.length} days">
${bars.join("")}${label(0, "start", days[0]?.day ?? "")}${label(W, "end", days.at(-1)?.day ?? "")}
<text x="0" y="10">most in a day: ${esc(number(maxTokens))} tokens</text></svg>`;
}

/** The prompt's share served from the server's cache ("" when none was, or the server never said). */
function cachedShare(c: { promptTokens: number; cachedTokens: number }): string {
  const [cached, prompt] = [Number(c.cachedTokens), Number(c.promptTokens)];
  return cached > 0 && prompt > 0 ? ` (${Math.round((100 * cached) / prompt)}% cached)` : "";
}

export function renderUsage(view: UsageView | undefined): string {
  if (!view) return '<p class="empty">The database does not answer.</p>';
  const rows = view.chats.map(
    (c) =>
      `<tr><td>${esc(c.sessionKey)}</td><td>${c.calls}</td><td>${esc(number(c.promptTokens + c.completionTokens) + cachedShare(c))}</td><td>${esc(costText(c))}</td></tr>`,
  );
  return `${usageChart(view.days)}<p><small><span class="key tokens"></span> tokens <span class="key cost"></span> cost</small></p>
${rows.length ? `<table class="usage"><thead><tr><th>Chat (this month)</th><th>Calls</th><th>Tokens</th><th>Cost</th></tr></thead><tbody>${rows.join("")}</tbody></table>` : '<p class="empty">No model calls this month.</p>'}`;
}
