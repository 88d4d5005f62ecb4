/** The page's style and script, inlined (one request, no build step); CSP admits them by nonce. */

export const STYLE = `
:root{color-scheme:light dark;--bg:#f6f7f9;--card:#fff;--fg:#1d2330;--muted:#5f6b7a;--line:#dde2e8;--accent:#2f6fde;--good:#1f8a4c;--warn:#b7791f;--bad:#c53030;--me:#e3edff}
@media (prefers-color-scheme:dark){:root{--bg:#11151b;--card:#1a2029;--fg:#e4e8ee;--muted:#97a3b3;--line:#2c3440;--accent:#6ea0ff;--good:#48bb78;--warn:#ecc94b;--bad:#fc8181;--me:#22324d}}
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;background:var(--bg);color:var(--fg)}
header{display:flex;align-items:center;gap:.6rem;padding:.7rem 1rem;border-bottom:1px solid var(--line);background:var(--card);position:sticky;top:0;z-index:1}
header h1{font-size:1.1rem;margin:0}header .live{margin-left:auto;font-size:.8rem;color:var(--muted)}header .live.good{color:var(--good)}header .live.warn{color:var(--warn)}
main{display:grid;gap:1rem;padding:1rem;grid-template-columns:1fr;max-width:1400px;margin:0 auto}
@media (min-width:900px){main{grid-template-columns:1fr 1fr}.wide{grid-column:1/-1}}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:.8rem 1rem;min-width:0}
h2{font-size:1rem;margin:.1rem 0 .6rem;display:flex;gap:.5rem;align-items:baseline}h2 .close,h2 select{margin-left:auto;font-size:.85rem;font-weight:normal}h3{font-size:.9rem;margin:.6rem 0 .2rem}
a{color:var(--accent)}small,.empty,time{color:var(--muted)}small{font-size:.82rem}
ul.plain,ul.rows,ol.history,ol.chat{list-style:none;margin:0;padding:0}
ul.plain li{padding:.15rem 0}
ul.rows li{display:flex;gap:.6rem;align-items:center;justify-content:space-between;padding:.5rem 0;border-top:1px solid var(--line)}
ul.rows li:first-child{border-top:0}ul.rows li>div,a.conv{display:flex;flex-direction:column;min-width:0;flex:1}
a.conv{color:inherit;text-decoration:none}a.conv:hover b{text-decoration:underline}
.last{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;color:var(--muted)}
dl.facts{display:grid;grid-template-columns:auto 1fr;gap:.2rem .8rem;margin:.6rem 0 0}dt{color:var(--muted)}dd{margin:0}
.pill{display:inline-block;font-size:.75rem;padding:0 .45rem;border-radius:99px;border:1px solid currentColor}
.good{color:var(--good)}.warn{color:var(--warn)}.bad{color:var(--bad)}
button{font:inherit;padding:.35rem .8rem;border-radius:7px;border:1px solid var(--line);background:var(--bg);color:var(--fg);cursor:pointer;min-height:2.2rem}
button.danger{color:var(--bad)}button:disabled{opacity:.5}.buttons{display:flex;flex-wrap:wrap;gap:.4rem}
ol.history li,ol.chat li{margin:.45rem 0}.msg .text{white-space:pre-wrap;overflow-wrap:anywhere;padding:.45rem .7rem;border-radius:10px;background:var(--bg);border:1px solid var(--line);display:inline-block;max-width:100%}
.msg.user{text-align:right}.msg.user .text{background:var(--me);text-align:left}.msg time{display:block;font-size:.75rem}
.tool details{border-left:3px solid var(--line);padding:.1rem .6rem}.tool.failed details{border-color:var(--bad)}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.4rem;font-size:.82rem;max-height:20rem;overflow:auto}
ol.chat{max-height:50vh;overflow:auto;padding:.2rem}.msg.progress .text,.msg.notice .text{font-style:italic;color:var(--muted)}
form.chat{display:flex;gap:.5rem;margin-top:.5rem}form.chat textarea{flex:1;font:inherit;padding:.45rem;border-radius:7px;border:1px solid var(--line);background:var(--bg);color:var(--fg);resize:vertical;min-height:2.4rem}
#thinking{font-size:.85rem;color:var(--muted);min-height:1.2rem}
svg.chart{width:100%;height:auto;font-size:10px;fill:var(--muted)}.tokens{fill:var(--accent);background:var(--accent)}.cost{fill:var(--warn);background:var(--warn)}
li.job form{display:grid;gap:.3rem;margin-top:.4rem}li.job label{display:grid;font-size:.85rem}li.job .error{color:var(--bad)}
li.job textarea,li.job input{font:inherit;padding:.3rem;border-radius:6px;border:1px solid var(--line);background:var(--bg);color:var(--fg)}
.key{display:inline-block;width:.7rem;height:.7rem;border-radius:2px}table.usage{border-collapse:collapse;width:100%}table.usage td,table.usage th{text-align:left;padding:.2rem .5rem;border-top:1px solid var(--line)}
`;

export const SCRIPT = `
(() => {
  "use strict";
  // The session lives in localStorage, which no other origin (another port) can read; every tab of this origin shares it,
  // and goes out in a header, never in a cookie.
  const KEY = "pincer-session";
  const $ = (id) => document.getElementById(id);
  const live = $("live");
  const params = new URLSearchParams(location.search);
  const token = params.get("token");
  if (token !== null) {
    // The token came once in the address: traded for a session below, and kept out of history.
    params.delete("token");
    history.replaceState(null, "", location.pathname + (params.size ? "?" + params : "") + location.hash);
  }
  const locked = () => {
    localStorage.removeItem(KEY);
    $("main").replaceChildren();
    $("locked").hidden = false;
    $("logout").hidden = true;
    live.textContent = "";
  };
  const json = async (res) => {
    const body = await res.json().catch(() => ({}));
    if (res.status === 401) { locked(); throw new Error("logged out"); }
    if (!res.ok) throw new Error(body.error || res.statusText);
    return body;
  };
  const login = token === null ? Promise.resolve(localStorage.getItem(KEY))
    : fetch("/api/session", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ token }) })
        .then(json).then((body) => { localStorage.setItem(KEY, body.session); return body.session; });
  login.then((session) => (session ? start(session) : locked())).catch((err) => {
    if (err.message !== "logged out") live.textContent = "could not load: " + err.message;
  });

  async function start(session) {
    const headers = { "x-pincer-session": session };
    const post = (path, body) => fetch(path, {
      method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body),
    }).then(json);
    const page = await fetch("/api/page" + location.search, { headers }).then(json);
    $("model").textContent = page.model;
    $("main").innerHTML = page.main;
    $("logout").hidden = false;
    const chatId = page.chatId;
    const log = $("chat-log");
    const addMessage = (cls, text) => {
      const li = Object.assign(document.createElement("li"), { className: "msg " + cls });
      li.append(Object.assign(document.createElement("div"), { className: "text", textContent: text }));
      log.append(li);
      log.scrollTop = log.scrollHeight;
      return li;
    };
    log.scrollTop = log.scrollHeight;

    const events = new EventSource("/api/events?chat=" + encodeURIComponent(chatId) + "&session=" + encodeURIComponent(session));
    const show = (text, tone) => { live.textContent = text; live.className = "live " + tone; };
    events.addEventListener("open", () => show("live", "good"));
    events.addEventListener("error", () => {
      show("reconnecting…", "warn");
      // Refused for good (logged out, expired, pincer restarted): say so instead of retrying.
      if (events.readyState === EventSource.CLOSED) fetch("/api/state", { headers }).then(json).catch(() => {});
    });
    events.addEventListener("sections", (e) => {
      for (const [id, html] of Object.entries(JSON.parse(e.data))) {
        const el = $(id);
        // A job being edited keeps its form until it is saved or cancelled.
        if (el && !el.querySelector("form.job-edit:not([hidden])")) el.innerHTML = html;
      }
    });
    events.addEventListener("chat", (e) => {
      const msg = JSON.parse(e.data);
      if (msg.type === "busy") { $("thinking").textContent = msg.busy ? "pincer is working…" : ""; return; }
      const li = addMessage(msg.kind === "reply" ? "bot" : "bot " + msg.kind, msg.text);
      // A spoken reply: its note is fetched with the session header and played from memory.
      if (msg.audio) fetch("/api/voice?chat=" + encodeURIComponent(chatId) + "&id=" + encodeURIComponent(msg.audio.id), { headers })
        .then((r) => (r.ok ? r.blob() : Promise.reject(new Error(r.statusText))))
        .then((blob) => {
          const audio = Object.assign(document.createElement("audio"), { controls: true, src: URL.createObjectURL(blob) });
          audio.title = "Spoken reply, " + msg.audio.seconds + " s";
          li.append(audio);
          audio.play().catch(() => {});
        })
        .catch(() => li.append(Object.assign(document.createElement("div"), { className: "text", textContent: "(the spoken reply could not be loaded)" })));
    });
    $("logout").addEventListener("click", () => {
      events.close();
      post("/api/logout", {}).finally(locked);
    });

    const form = $("chat-form");
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const box = form.elements.text;
      const text = box.value.trim();
      if (!text) return;
      box.value = "";
      addMessage("user", text);
      post("/api/chat", { chatId, text }).catch((err) => addMessage("bot notice", "Not sent: " + err.message));
    });
    $("agent")?.addEventListener("change", (e) => {
      params.set("agent", e.target.value);
      location.search = params.toString();
    });
    form.elements.text.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
    });

    document.addEventListener("click", (e) => {
      const edit = e.target.closest('button[data-action="edit-job"]');
      if (edit) {
        const form = document.querySelector('form.job-edit[data-id="' + CSS.escape(edit.dataset.id) + '"]');
        if (form) form.hidden = !form.hidden;
        return;
      }
      const button = e.target.closest("button[data-post]");
      if (!button) return;
      const path = button.dataset.post;
      if (path === "/api/jobs/delete" && !confirm("Delete this job?")) return;
      if (path === "/api/people/remove" && !confirm("Remove this person and their accounts?")) return;
      button.disabled = true;
      // A job's row stays (the section's refresh shows its new state); other rows are done with.
      const stays = (path.startsWith("/api/jobs/") && path !== "/api/jobs/delete") || path === "/api/people/role";
      post(path, JSON.parse(button.dataset.body)).then(() => (stays ? (button.disabled = false) : button.closest("li").remove()))
        .catch((err) => { button.disabled = false; alert(err.message); });
    });
    document.addEventListener("submit", (e) => {
      const form = e.target.closest("form.job-edit");
      if (!form) return;
      e.preventDefault();
      const error = form.querySelector(".error");
      error.textContent = "";
      const body = { id: form.dataset.id };
      for (const el of form.elements) if (el.name) body[el.name] = el.value;
      post("/api/jobs/edit", body)
        .then(() => { form.hidden = true; })
        .catch((err) => { error.textContent = err.message; });
    });
  }
})();
`;
