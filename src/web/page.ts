import { agentOf } from "../bus/types.js";
import { SCRIPT, STYLE } from "./assets.js";
import { esc } from "./html.js";
import { renderSections } from "./sections.js";
import type { DashboardState } from "./state.js";

/** What anyone without a session sees, whatever they sent: no data, and no hint whether a token was close. */
const LOCKED_TEXT =
  "This page needs its token. Run <code>pincer dashboard</code> on the machine pincer runs on and open the address it prints.";

/** The page as served to anyone: no data. Its script logs in (`?token=` or this tab's session), then fetches renderMain. */
export function renderShell(nonce: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>pincer</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<header><h1>pincer</h1><small id="model"></small><span id="live" class="live">connecting…</span><button type="button" id="logout" hidden>Log out</button></header>
<p id="locked" hidden>${LOCKED_TEXT}</p>
<main id="main"></main>
<script nonce="${nonce}">${SCRIPT}</script>
</body></html>`;
}

/** The page's content, rendered on the server: it paints complete the moment the script inserts it. */
export function renderMain(input: {
  state: DashboardState;
  now: number;
  /** The web chat's conversation: `web:ID`, or `AGENT/web:ID`. */
  conversation: string;
  chatLog: string;
  history?: string;
}) {
  const sections = renderSections(input.state, input.now);
  const card = (id: keyof typeof sections, title: string, wide = false) =>
    `<section${wide ? ' class="wide"' : ""} aria-labelledby="h-${id}"><h2 id="h-${id}">${title}</h2><div id="${id}">${sections[id]}</div></section>`;
  return `${input.history ? `<section class="wide" id="history">${input.history}</section>` : ""}
${card("status", "Status")}
<section aria-labelledby="h-chat"><h2 id="h-chat">Chat <small>${esc(input.conversation)}</small>${agentPicker(input)}</h2>
<ol class="chat" id="chat-log">${input.chatLog}</ol>
<div id="thinking" aria-live="polite"></div>
<form class="chat" id="chat-form"><textarea name="text" rows="1" maxlength="16000" placeholder="Message pincer…" aria-label="Message"></textarea><button type="submit">Send</button></form>
</section>
${card("agents", "Agents")}
${card("conversations", "Conversations")}
${card("jobs", "Jobs", true)}
${card("pairing", "Pairing requests")}
${card("people", "People", true)}
${input.state.approvals ? card("approvals", "Approvals") : ""}
${card("skills", "Skills")}
${card("usage", "Model usage", true)}`;
}

/** The web chat's agent: choosing one loads the page with `?agent=NAME`. */
function agentPicker({ state, conversation }: { state: DashboardState; conversation: string }): string {
  if (state.agents.agents.length < 2) return "";
  const option = (name: string) => `<option${name === agentOf(conversation) ? " selected" : ""}>${esc(name)}</option>`;
  return `<select id="agent" aria-label="Agent">${state.agents.agents.map((a) => option(a.name)).join("")}</select>`;
}

export const LOCKED_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>pincer</title></head>
<body><h1>pincer</h1><p>${LOCKED_TEXT}</p></body></html>`;
