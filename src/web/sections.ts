import type { HistoryEntry } from "../store/store.js";
import { clip, esc, formatAgo, type TimeFormat, timeFormat } from "./html.js";
import type { DashboardState } from "./state.js";
import { renderUsage } from "./usage-section.js";

/**
 * The page's live parts, each rendered to an HTML fragment on the server. The first paint and
 * every SSE update use these same functions, so escaping lives in one place.
 */
export type SectionId = "status" | "conversations" | "reminders" | "pairing" | "approvals" | "skills" | "usage";

export function renderSections(state: DashboardState, now: number): Record<SectionId, string> {
  const formatTime = timeFormat();
  return {
    status: renderStatus(state, now, formatTime),
    conversations: renderConversations(state, now),
    reminders: renderReminders(state, formatTime),
    pairing: renderPairing(state, now),
    approvals: renderApprovals(state, now),
    skills: renderSkills(state),
    usage: renderUsage(state.usage),
  };
}

function pill(state: string): string {
  const tone = state === "connected" || state === "ok" ? "good" : state === "connecting" ? "warn" : "bad";
  return `<span class="pill ${tone}">${esc(state)}</span>`;
}

function renderStatus(state: DashboardState, now: number, formatTime: TimeFormat): string {
  const channels = state.channels
    .map((c) => `<li><b>${esc(c.name)}</b> ${pill(c.state)}${c.detail ? ` <small>${esc(c.detail)}</small>` : ""}</li>`)
    .join("");
  const running = state.running.length
    ? state.running.map((key) => `<a href="/?c=${encodeURIComponent(key)}">${esc(key)}</a>`).join(", ")
    : "none";
  return `<ul class="plain">${channels || "<li>No channel is running.</li>"}<li><b>database</b> ${pill(state.database ? "ok" : "down")}</li></ul>
<dl class="facts">
<dt>Running turns</dt><dd>${state.running.length} <small>${running}</small></dd>
<dt>Helpers</dt><dd>${state.helpers.length} <small>${state.helpers.map((x) => `${esc(x.label ?? x.id)} (${esc(x.sessionKey)}, ${esc(formatAgo(x.startedAt, now).replace(" ago", ""))})`).join(", ") || "none"}</small></dd>
<dt>Queued</dt><dd>${state.queued}</dd>
<dt>Inbox / outbox pending</dt><dd>${state.inboxPending} / ${state.outboxPending}</dd>
<dt>Model</dt><dd>${esc(state.model)}</dd>
<dt>Up since</dt><dd>${esc(formatTime(state.startedAt, state.timezone))} <small>(${esc(formatAgo(state.startedAt, now))})</small></dd>
${state.cluster ? `<dt>Cluster</dt><dd><pre class="cluster">${esc(state.cluster.join("\n"))}</pre></dd>` : ""}
</dl>`;
}

function renderConversations(state: DashboardState, now: number): string {
  if (state.conversations.length === 0) return '<p class="empty">No conversations yet.</p>';
  return `<ul class="rows">${state.conversations
    .map(
      (c) => `<li><a class="conv" href="/?c=${encodeURIComponent(c.sessionKey)}"><b>${esc(c.sessionKey)}</b>
<small>${c.messages} messages · ~${c.tokens} tokens · ${esc(formatAgo(c.lastAt, now))}</small>
<span class="last">${c.lastText ? `${esc(c.lastRole ?? "")}: ${esc(clip(c.lastText, 160))}` : "—"}</span></a></li>`,
    )
    .join("")}</ul>`;
}

function renderReminders(state: DashboardState, formatTime: TimeFormat): string {
  if (state.reminders.length === 0) return '<p class="empty">No reminders.</p>';
  return `<ul class="rows">${state.reminders
    .map(
      (r) => `<li class="reminder" data-job="${esc(r.id)}"><div><b>${esc(r.name ?? clip(r.message, 80))}</b>
<small>${r.paused ? "paused (its owner lost access) · " : ""}next ${esc(formatTime(r.nextRunAt, r.tz))} (${esc(r.tz)}) · ${esc(r.schedule)} · ${esc(r.sessionKey)}</small>
${r.name ? `<span class="last">${esc(clip(r.message, 160))}</span>` : ""}</div>
<button type="button" class="danger" data-action="remove-job" data-id="${esc(r.id)}">Remove</button></li>`,
    )
    .join("")}</ul>`;
}

function renderPairing(state: DashboardState, now: number): string {
  if (state.pairing.length === 0) return '<p class="empty">Nobody is waiting.</p>';
  return `<ul class="rows">${state.pairing
    .map(
      (
        p,
      ) => `<li><div><b>${esc(p.userName)}</b> <small>${esc(p.channel)} user ${esc(p.userId)} · code ${esc(p.code)} · expires in ${esc(formatAgo(now, p.expiresAt).replace(" ago", ""))}</small></div>
<span class="buttons"><button type="button" data-action="approve" data-channel="${esc(p.channel)}" data-code="${esc(p.code)}">Approve</button>
<button type="button" class="danger" data-action="deny" data-channel="${esc(p.channel)}" data-user="${esc(p.userId)}">Deny</button></span></li>`,
    )
    .join("")}</ul>`;
}

const CHOICES = [
  ["once", "Allow once"],
  ["always", "Always allow"],
  ["deny", "Deny"],
] as const;

function renderApprovals({ approvals }: DashboardState, now: number): string {
  if (!approvals) return "";
  const pending = approvals.pending.map(
    (
      a,
    ) => `<li class="approval"><div><b>${esc(a.tool)}</b> <small>${esc(a.sessionKey)} · expires in ${esc(formatAgo(now, a.expiresAt).replace(" ago", ""))}</small>
<pre>${esc(a.summary)}</pre></div><span class="buttons">${CHOICES.map(([choice, label]) => `<button type="button"${choice === "deny" ? ' class="danger"' : ""} data-action="decide" data-id="${esc(a.id)}" data-choice="${choice}">${label}</button>`).join("")}</span></li>`,
  );
  const allowed = approvals.allowed.map(
    (
      e,
    ) => `<li><div><code>${esc(e.entry)}</code> <small>always allowed in ${esc(e.sessionKey)} by ${esc(e.addedBy)}</small></div>
<button type="button" class="danger" data-action="revoke" data-session="${esc(e.sessionKey)}" data-entry="${esc(e.entry)}">Revoke</button></li>`,
  );
  const rows = [...pending, ...allowed].join("");
  return rows
    ? `<ul class="rows">${rows}</ul>`
    : '<p class="empty">Nothing waits for a decision; nothing is always allowed.</p>';
}

function renderSkills(state: DashboardState): string {
  if (state.skills.length === 0) return '<p class="empty">No skills installed.</p>';
  return `<ul class="rows">${state.skills
    .map(
      (s) => `<li><div><span><b>${esc(s.name)}</b> ${pill(s.missing.length ? "unavailable" : "ok")}</span>
<small>${esc(clip(s.description, 200))}</small>${s.missing.length ? `<span class="last">Left out of the prompt: ${esc(s.missing.join("; "))}</span>` : ""}</div></li>`,
    )
    .join("")}</ul>`;
}

/** One conversation: messages and, between them, the tool calls as the audit recorded them. */
export function renderHistory(sessionKey: string, entries: HistoryEntry[], timezone: string): string {
  const formatTime = timeFormat();
  const items = entries
    .map((e) => {
      const when = `<time>${esc(formatTime(e.at, timezone))}</time>`;
      if (e.kind === "message") {
        return `<li class="msg ${e.role === "user" ? "user" : "bot"}">${when}<div class="text">${esc(e.text)}</div></li>`;
      }
      return `<li class="tool ${e.ok ? "" : "failed"}">${when}<details><summary><code>${esc(e.tool)}</code> ${e.ok ? "ok" : "failed"} · ${e.durationMs} ms</summary>
<pre>${esc(e.arguments)}</pre><pre>${esc(e.result)}</pre></details></li>`;
    })
    .join("");
  return `<h2>${esc(sessionKey)} <a class="close" href="/">close</a></h2>${items ? `<ol class="history">${items}</ol>` : '<p class="empty">No messages in this conversation.</p>'}`;
}

/** The web chat's stored messages (the page appends live ones over SSE). */
export function renderChatLog(entries: HistoryEntry[]): string {
  return entries
    .filter((e) => e.kind === "message")
    .map((e) => `<li class="msg ${e.role === "user" ? "user" : "bot"}"><div class="text">${esc(e.text)}</div></li>`)
    .join("");
}
