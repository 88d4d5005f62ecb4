import type { HistoryEntry } from "../store/store.js";
import { clip } from "../text.js";
import { withoutTurnFacts } from "../turn-facts.js";
import { esc, formatSpan, postButton, type TimeFormat, timeFormat } from "./html.js";
import { jobRow } from "./jobs-section.js";
import type { DashboardState } from "./state.js";
import { renderUsage } from "./usage-section.js";

/** The page's live parts as HTML fragments: the first paint and every SSE update use these, so escaping is in one place. */
export function renderSections(state: DashboardState, now: number) {
  const formatTime = timeFormat();
  return {
    status: renderStatus(state, now, formatTime),
    agents: renderAgents(state.agents),
    conversations: rows(state.conversations, "No conversations yet.", (c) => conversation(c, now)),
    jobs: rows(state.jobs, "No jobs. Ask pincer to remind you of something to make one.", (j) =>
      jobRow(j, now, formatTime),
    ),
    pairing: rows(state.pairing, "Nobody is waiting.", (p) => pairingRequest(p, now)),
    people: rows(state.people, "Nobody has written yet.", (p) => person(p, state.roles)),
    approvals: renderApprovals(state, now),
    skills: rows(state.skills, "No skills installed.", skill),
    usage: renderUsage(state.usage),
  };
}

function rows<T>(items: T[], empty: string, row: (item: T) => string): string {
  return items.length ? `<ul class="rows">${items.map(row).join("")}</ul>` : `<p class="empty">${empty}</p>`;
}

function pill(state: string): string {
  const tone = state === "connected" || state === "ok" ? "good" : state === "connecting" ? "warn" : "bad";
  return `<span class="pill ${tone}">${esc(state)}</span>`;
}

function renderStatus(state: DashboardState, now: number, formatTime: TimeFormat): string {
  const channels = state.channels
    .map((c) => `<li><b>${esc(c.name)}</b> ${pill(c.state)}${c.detail ? ` <small>${esc(c.detail)}</small>` : ""}</li>`)
    .join("");
  const running = state.running.map((key) => `<a href="/?c=${encodeURIComponent(key)}">${esc(key)}</a>`);
  const helpers = state.helpers.map(
    (x) => `${esc(x.label ?? x.id)} (${esc(x.sessionKey)}, ${formatSpan(now - x.startedAt)})`,
  );
  return `<ul class="plain">${channels || "<li>No channel is running.</li>"}<li><b>database</b> ${pill(state.database ? "ok" : "down")}</li></ul>
<dl class="facts">
<dt>Running turns</dt><dd>${state.running.length} <small>${running.join(", ") || "none"}</small></dd>
<dt>Helpers</dt><dd>${state.helpers.length} <small>${helpers.join(", ") || "none"}</small></dd>
<dt>Queued</dt><dd>${state.queued}</dd>
<dt>Inbox / outbox pending</dt><dd>${state.inboxPending} / ${state.outboxPending}</dd>
<dt>Model</dt><dd>${esc(state.model)}</dd>
<dt>Up since</dt><dd>${esc(formatTime(state.startedAt, state.timezone))} <small>(${formatSpan(now - state.startedAt)} ago)</small></dd>
${state.cluster ? `<dt>Cluster</dt><dd><pre class="cluster">${esc(state.cluster.join("\n"))}</pre></dd>` : ""}
</dl>`;
}

function renderAgents({ agents, accounts, bindings }: DashboardState["agents"]): string {
  const li = (b: string, small: string, more = "") => `<li><b>${esc(b)}</b> <small>${esc(small)}</small>${more}</li>`;
  return `<ul class="plain">${agents.map((a) => li(a.name, `${a.model} · ${a.workspace}`)).join("")}</ul>
<h3>Bots</h3><ul class="plain">${accounts.map((a) => li(a.route, `agent ${a.agent}`, ` ${pill(a.state)}`)).join("") || "<li>None.</li>"}</ul>
<h3>Bindings</h3><ul class="plain">${bindings.map((b) => `<li>${esc(b)}</li>`).join("") || "<li>None: each bot's own agent answers.</li>"}</ul>`;
}

type Item<K extends keyof DashboardState> = NonNullable<DashboardState[K]> extends Array<infer T> ? T : never;

const conversation = (c: Item<"conversations">, now: number) =>
  `<li><a class="conv" href="/?c=${encodeURIComponent(c.sessionKey)}"><b>${esc(c.sessionKey)}</b>
<small>${c.messages} messages · ~${c.tokens} tokens · ${formatSpan(now - c.lastAt)} ago</small>
<span class="last">${c.lastText ? `${esc(c.lastRole ?? "")}: ${esc(clip(withoutTurnFacts(c.lastText), 160))}` : "—"}</span></a></li>`;

const pairingRequest = (p: Item<"pairing">, now: number) =>
  `<li><div><b>${esc(p.userName)}</b> <small>${esc(p.channel)} user ${esc(p.userId)} · code ${esc(p.code)} · expires in ${formatSpan(p.expiresAt - now)}</small></div>
<span class="buttons">${postButton("Approve", "/api/pairing/approve", { channel: p.channel, code: p.code })}
${postButton("Deny", "/api/pairing/deny", { channel: p.channel, userId: p.userId }, true)}</span></li>`;

const person = (p: Item<"people">, roles: string[]) =>
  `<li><div><b>${esc(p.name)}</b> <small>${esc(p.id)} · role ${esc(p.role)} · ${p.identities.map((i) => esc(`${i.route} ${i.userId}`)).join(", ")}</small></div>
<span class="buttons">${roles.map((role) => postButton(role, "/api/people/role", { id: p.id, role })).join("")}${postButton("Remove", "/api/people/remove", { id: p.id }, true)}</span></li>`;

const skill = (s: Item<"skills">) =>
  `<li><div><span><b>${esc(s.name)}</b> ${pill(s.missing.length ? "unavailable" : "ok")}</span>
<small>${esc(clip(s.description, 200))}</small>${s.missing.length ? `<span class="last">Left out of the prompt: ${esc(s.missing.join("; "))}</span>` : ""}</div></li>`;

const CHOICES = [
  ["once", "Allow once"],
  ["always", "Always allow"],
  ["deny", "Deny"],
] as const;

type Approvals = NonNullable<DashboardState["approvals"]>;

const pendingCall = (a: Approvals["pending"][number], now: number) =>
  `<li class="approval"><div><b>${esc(a.tool)}</b> <small>${esc(a.sessionKey)} · expires in ${formatSpan(a.expiresAt - now)}</small>
<pre>${esc(a.summary)}</pre></div><span class="buttons">${CHOICES.map(([choice, label]) => postButton(label, "/api/approvals/decide", { id: a.id, choice }, choice === "deny")).join("")}</span></li>`;

const allowedEntry = (e: Approvals["allowed"][number]) =>
  `<li><div><code>${esc(e.entry)}</code> <small>always allowed in ${esc(e.sessionKey)} by ${esc(e.addedBy)}</small></div>
${postButton("Revoke", "/api/approvals/revoke", { sessionKey: e.sessionKey, entry: e.entry }, true)}</li>`;

function renderApprovals({ approvals }: DashboardState, now: number): string {
  if (!approvals) return "";
  const items = [...approvals.pending.map((a) => pendingCall(a, now)), ...approvals.allowed.map(allowedEntry)];
  return rows(items, "Nothing waits for a decision; nothing is always allowed.", (item) => item);
}

/** One conversation: messages and, between them, the tool calls as the audit recorded them. */
export function renderHistory(sessionKey: string, entries: HistoryEntry[], timezone: string): string {
  const formatTime = timeFormat();
  const items = entries
    .map((e) => {
      const when = `<time>${esc(formatTime(e.at, timezone))}</time>`;
      if (e.kind === "message") return message(e, when);
      return `<li class="tool ${e.ok ? "" : "failed"}">${when}<details><summary><code>${esc(e.tool)}</code> ${e.ok ? "ok" : "failed"} · ${e.durationMs} ms</summary>
<pre>${esc(e.arguments)}</pre><pre>${esc(e.result)}</pre></details></li>`;
    })
    .join("");
  return `<h2>${esc(sessionKey)} <a class="close" href="/">close</a></h2>${items ? `<ol class="history">${items}</ol>` : '<p class="empty">No messages in this conversation.</p>'}`;
}

/** The web chat's stored messages (the page appends live ones over SSE). */
export function renderChatLog(entries: HistoryEntry[]): string {
  return entries.flatMap((e) => (e.kind === "message" ? [message(e)] : [])).join("");
}

const message = (e: HistoryEntry, when = "") =>
  `<li class="msg ${e.role === "user" ? "user" : "bot"}">${when}<div class="text">${esc(withoutTurnFacts(e.text ?? ""))}</div></li>`;
