import type { UsageGroup, UsageSums } from "../store/store.js";

const KEYS = ["calls", "promptTokens", "completionTokens", "cachedTokens", "cost", "unpriced", "estimated"] as const;
const zero = () => Object.fromEntries(KEYS.map((key) => [key, 0])) as Record<(typeof KEYS)[number], number>;

/** Adds a group's sums into `into` (PostgreSQL's sums may come as text), and returns it. */
function add(into: UsageSums, group: UsageSums): UsageSums {
  for (const key of KEYS) into[key] += Number(group[key]);
  return into;
}

/** What /usage and `pincer usage` show: today and this month (in `timezone`), for one chat and overall. */
export type UsageReport = ReturnType<typeof foldGroups>;
/** One scope's calls: in all, by kind of run and by model. */
type UsagePart = UsageReport["today"]["all"];

/** Folds the store's groups (this month's, see SqlUsage.groups) into the four scopes. */
export function foldGroups(
  groups: UsageGroup[],
  head: { timezone: string; day: string; month: string; sessionKey?: string; person?: string },
) {
  const part = (pick: (g: UsageGroup) => boolean) => {
    const result = { total: zero(), byKind: {} as Record<string, UsageSums>, byModel: {} as Record<string, UsageSums> };
    for (const g of groups.filter(pick)) {
      add(result.total, g);
      result.byKind[g.kind] = add(result.byKind[g.kind] ?? zero(), g);
      result.byModel[g.model] = add(result.byModel[g.model] ?? zero(), g);
    }
    return result;
  };
  const chat = head.sessionKey !== undefined;
  return {
    ...head,
    today: { chat: chat ? part((g) => g.here && g.today) : undefined, all: part((g) => g.today) },
    thisMonth: { chat: chat ? part((g) => g.here) : undefined, all: part(() => true) },
  };
}

const tokensOf = (s: UsageSums) => s.promptTokens + s.completionTokens;
const number = (n: number) => n.toLocaleString("en-US");

export const money = (cost: number) => cost.toFixed(cost < 1 ? 4 : 2);

/** Cost as known: "unknown" where no call had a price, a lower bound where some had none. */
export function costText(s: UsageSums): string {
  if (s.calls === 0) return "0";
  if (s.unpriced === s.calls) return "cost unknown";
  const cost = money(s.cost);
  return s.unpriced > 0 ? `${cost} + unknown (${s.unpriced} call${s.unpriced > 1 ? "s" : ""} without a price)` : cost;
}

/** The prompt's share the server served from its cache ("" when it served none, or never said). */
function cachedText(s: Pick<UsageSums, "promptTokens" | "cachedTokens">): string {
  const [cached, prompt] = [Number(s.cachedTokens), Number(s.promptTokens)];
  return cached > 0 && prompt > 0 ? `${Math.round((100 * cached) / prompt)}% of the prompt from the cache` : "";
}

export function sumsText(s: UsageSums): string {
  const notes = [s.estimated > 0 ? `${s.estimated} of ${s.calls} calls estimated` : "", cachedText(s)].filter(Boolean);
  return `${number(tokensOf(s))} tokens${notes.length ? ` (${notes.join("; ")})` : ""}, ${costText(s)}`;
}

function partLines(title: string, part: UsagePart): string[] {
  if (part.total.calls === 0) return [`${title}: nothing`];
  const split = (by: Record<string, UsageSums>) =>
    Object.entries(by)
      .sort(([, a], [, b]) => tokensOf(b) - tokensOf(a))
      .map(([name, s]) => `${name} ${number(tokensOf(s))}`)
      .join(", ");
  return [`${title}: ${sumsText(part.total)}`, `  ${split(part.byKind)} · ${split(part.byModel)}`];
}

/** The compact text of /usage and `pincer usage`; a person's own report (a guest's) says "yours", nothing else. */
export function reportText(report: UsageReport): string {
  const scopes: Array<[string, UsagePart | undefined]> =
    report.person === undefined
      ? [
          [`Today (${report.day}), this chat`, report.today.chat],
          ["Today, all chats", report.today.all],
          [`This month (${report.month}), this chat`, report.thisMonth.chat],
          ["This month, all chats", report.thisMonth.all],
        ]
      : [
          [`Today (${report.day}), yours`, report.today.all],
          [`This month (${report.month}), yours`, report.thisMonth.all],
        ];
  return [
    `Model usage (${report.timezone}; costs in the price table's currency):`,
    ...scopes.flatMap(([title, part]) => (part ? partLines(title, part) : [])),
  ].join("\n");
}
