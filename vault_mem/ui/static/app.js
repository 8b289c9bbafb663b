// The page for people (docs/ui.md). Everything shown was written by an agent or an import:
// it is only ever put into the page as text (textContent, createElement), never as markup.
"use strict";
(function () {
  const $ = (sel) => document.querySelector(sel);
  // The session's second secret (docs/ui.md, "Logging in"): the login's answer gives it to this
  // script alone; sessionStorage keeps it per origin (port included) and per tab. The cookie,
  // which the browser also sends to other programs on this host, opens nothing without it.
  const PAGE_SECRET = "vault-mem-page-secret";
  let pageSecret = "";
  try { pageSecret = sessionStorage.getItem(PAGE_SECRET) || ""; } catch (e) { /* no storage: log in each time */ }
  let owner = false;
  let offset = 0;
  let current = "activity";  // the view shown
  // Several vaults (docs/ui.md, "Several vaults"): the ones this session reaches, when more than
  // one, and the one the views show, named in every /api call and in the address (?vault=NAME),
  // so that a reload keeps it. With one vault both stay empty and no call names a vault.
  let vaults = [];
  let vault = "";
  const STALE = "stale";  // an answer for a vault no longer shown: dropped, never drawn

  // What the address says: the vault asked for (checked by the server, never trusted here).
  function vaultInAddress() { return new URLSearchParams(location.search).get("vault") || ""; }
  function address(name) { return "/" + (name ? "?vault=" + encodeURIComponent(name) : ""); }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  // The status bar under the views (docs/ui.md): its own strip of the window, never over a list.
  function say(text) {
    $("#status").textContent = text;
    $("#status-bar").hidden = !text;
  }

  // A failed call's message in the status bar, unless it was for a vault no longer shown.
  function fail(e) { if (e.message !== STALE) say(e.message); }

  async function get(path, params) {
    const asked = vault;
    const query = new URLSearchParams({ ...(params || {}), ...(asked ? { vault: asked } : {}) }).toString();
    const response = await fetch("/api/" + path + (query ? "?" + query : ""),
      { credentials: "same-origin", headers: { "X-Page-Secret": pageSecret } });
    const body = await response.json();
    if (asked !== vault) throw new Error(STALE);
    if (response.status === 401) { showLogin(""); throw new Error("log in first"); }
    if (!response.ok || ["invalid", "forbidden", "error", "not_found"].includes(body.status)) {
      throw new Error(body.message || ("HTTP " + response.status));
    }
    return body;
  }

  async function post(path, data) {
    const named = vault && path !== "logout" ? "?vault=" + encodeURIComponent(vault) : "";
    const response = await fetch("/api/" + path + named, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Page-Secret": pageSecret }, body: JSON.stringify(data),
    });
    const body = await response.json();
    if (response.status === 401) { showLogin(""); throw new Error("log in first"); }
    if (!response.ok) throw new Error(body.message || ("HTTP " + response.status));
    return body;
  }

  // A one-time link's code or a token or key: "" when logged in, else why not.
  async function logIn(what) {
    let response, body;
    try {
      response = await fetch("/api/login", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(what),
      });
      body = await response.json();
    } catch (e) { return "the server does not answer: " + e.message; }
    if (!response.ok || !body.page_secret) return body.message || ("HTTP " + response.status);
    pageSecret = body.page_secret;
    try { sessionStorage.setItem(PAGE_SECRET, pageSecret); } catch (e) { /* kept for this page only */ }
    return "";
  }

  function showLogin(why) {
    $("#tabs").hidden = true;
    $("#vault-pick").hidden = true;
    document.querySelectorAll(".view").forEach((v) => { v.hidden = true; });
    $("#login").hidden = false;
    $("#login-why").textContent = why;
  }

  function show(name) {
    current = name;
    document.querySelectorAll("#tabs button[data-view]").forEach((b) => b.classList.toggle("on", b.dataset.view === name));
    document.querySelectorAll(".view").forEach((v) => { v.hidden = v.id !== "view-" + name; });
    if (name === "activity") loadActivity(false);
    if (name === "inbox") loadInbox();
    if (name === "agents") loadAgents();
    if (name === "search" && !$("#results").children.length) runSearch("");
  }

  // -- Activity ------------------------------------------------------------------------

  function filters() {
    const form = new FormData($("#filters"));
    const params = {};
    for (const key of ["agent", "folder", "since"]) { const v = String(form.get(key) || "").trim(); if (v) params[key] = v; }
    return params;
  }

  async function loadActivity(more) {
    offset = more ? offset : 0;
    let answer;
    try { answer = await get("activity", { ...filters(), offset: String(offset) }); } catch (e) { fail(e); return; }
    const list = $("#changes");
    if (!more) { list.replaceChildren(); $("#change").replaceChildren(el("p", { class: "muted" }, "Pick a change to see its diff.")); }
    $("#activity-count").textContent = answer.count + (answer.count === 1 ? " change" : " changes") + ", newest first";
    const select = $("#filters select[name=agent]");
    const chosen = select.value;
    select.replaceChildren(el("option", { value: "" }, "any"), ...answer.agents.map((a) => el("option", { value: a }, a)));
    select.value = answer.agents.includes(chosen) ? chosen : "";
    for (const row of answer.changes) {
      // The title the journal holds for the note as of this change (a note deleted since keeps it).
      const item = el("li", { "data-id": row.id, tabindex: "0" },
        el("span", { class: "kind" }, row.kind), row.title ? el("span", { class: "title" }, row.title) : null,
        el("span", { class: "path" }, row.path),
        el("div", { class: "meta" }, row.agent + " · " + row.time.replace("T", " ").replace("+00:00", "Z")
          + (row.trash ? " · moved to " + row.trash : "")));
      item.addEventListener("click", () => openChange(row.id, item));
      item.addEventListener("keydown", (e) => { if (e.key === "Enter") openChange(row.id, item); });
      list.append(item);
    }
    offset = answer.next_offset || offset;
    $("#more").hidden = answer.next_offset === null;
  }

  function diffView(lines) {
    const pre = el("pre", { class: "diff" });
    for (const line of lines) {
      const kind = line.startsWith("@@") ? "hunk" : line.startsWith("+") && !line.startsWith("+++") ? "add"
        : line.startsWith("-") && !line.startsWith("---") ? "del" : "";
      pre.append(el("span", kind ? { class: kind } : {}, line || " "));
    }
    return pre;
  }

  async function openChange(id, item) {
    document.querySelectorAll("#changes li").forEach((li) => li.classList.toggle("picked", li === item));
    let answer;
    try { answer = await get("change", { id }); } catch (e) { fail(e); return; }
    const c = answer.change;
    const box = $("#change");
    box.replaceChildren(
      el("h2", {}, c.title || c.path),
      el("p", { class: "meta" }, c.kind + " by " + c.agent + " at " + c.time + " · " + c.path),
    );
    if (!c.deleted) {
      const read = el("a", { href: "#" }, "Read the note");
      read.addEventListener("click", (e) => { e.preventDefault(); show("search"); openNote(c.path); });
      box.append(el("p", {}, read));
    }
    if (answer.diff) box.append(diffView(answer.diff));
    if (answer.diff_note) box.append(el("p", { class: "muted" }, answer.diff_note));
    if (answer.undo) {
      const u = answer.undo;
      if (u.action === "leave") {
        box.append(el("p", { class: "muted undo-left" }, "Undo would leave it alone: " + u.reason));
      } else {
        const button = el("button", { class: "undo-one" }, "Undo this change");
        button.addEventListener("click", () => confirmThen("Undo this change to " + c.path + "?", [u.action + ": " + u.reason],
          async () => { const r = await post("undo", { id }); report(r); loadActivity(false); }));
        box.append(button);
      }
    }
  }

  function report(result) {
    const done = (result.restored || []).length;
    const left = result.left || [];
    say("put back " + done + (done === 1 ? " note" : " notes") + (left.length ? ", left " + left.length + " alone: "
      + left.map((s) => s.path + " (" + s.reason + ")").join("; ") : ""));
  }

  function confirmThen(text, lines, action) {
    $("#confirm-text").textContent = text;
    $("#confirm-list").replaceChildren(...lines.map((line) => el("li", {}, line)));
    $("#confirm").hidden = false;
    const yes = $("#confirm-yes"), no = $("#confirm-no");
    const close = () => { $("#confirm").hidden = true; yes.onclick = null; no.onclick = null; };
    no.onclick = close;
    yes.onclick = async () => { close(); try { await action(); } catch (e) { fail(e); } };
  }

  async function undoWindow() {
    const { agent, since } = filters();
    if (!agent || !since) { say("pick an agent and a 'since' moment first: its changes since then are undone"); return; }
    let plan;
    try { plan = await post("undo-window", { agent, since, apply: false }); } catch (e) { fail(e); return; }
    const lines = plan.would_restore.map((s) => s.action + ": " + s.path).concat(plan.left.map((s) => "left alone: " + s.path + " (" + s.reason + ")"));
    if (!plan.would_restore.length) { say("nothing to undo: " + (lines.join("; ") || "no change by " + agent + " since " + since)); return; }
    confirmThen("Undo " + agent + "'s changes since " + since + "?", lines,
      async () => { report(await post("undo-window", { agent, since, apply: true })); loadActivity(false); });
  }

  // -- Inbox, agents -------------------------------------------------------------------

  async function loadInbox() {
    let answer;
    try { answer = await get("inbox"); } catch (e) { fail(e); return; }
    const box = $("#inboxes");
    box.replaceChildren();
    if (!answer.inboxes.length) box.append(el("p", { class: "muted" }, "No agent has a key or a note addressed to it yet."));
    for (const item of answer.inboxes) {
      const list = el("ol", { class: "list" });
      for (const row of item.inbox) {
        const li = el("li", {}, el("span", { class: "kind" }, row.kind || "note"), row.title || row.permalink,
          el("div", { class: "meta" }, "from " + (row.from || "unknown") + " · " + (row.updated || "") + " · " + row.permalink));
        li.addEventListener("click", () => { show("search"); openNote(row.permalink); });
        list.append(li);
      }
      box.append(el("div", { class: "inbox" }, el("h3", {}, item.agent + " (" + item.count + " waiting)"),
        item.count ? list : el("p", { class: "muted" }, "nothing waits")));
    }
  }

  async function loadAgents() {
    let answer;
    try { answer = await get("agents"); } catch (e) { fail(e); return; }
    const body = $("#agents tbody");
    const changes = (a) => !a.changes ? "none in the journal"
      : a.changes + " (" + Object.entries(a.kinds).map(([kind, n]) => kind + " " + n).join(", ") + ")";
    body.replaceChildren(...answer.agents.map((a) => el("tr", { class: a.key ? "keyed" : "keyless" },
      el("td", {}, a.agent), el("td", {}, a.key ? "yes" : a.own ? "no key: vault-mem's own command"
        : "no key: it named itself in its calls"),
      el("td", {}, a.key ? a.read.join(", ") : "—"), el("td", {}, a.key ? a.write.join(", ") : "—"),
      el("td", {}, a.key ? (a.read_only ? "yes" : "no") : "—"), el("td", {}, a.created || "—"),
      el("td", {}, changes(a)), el("td", {}, a.last_change || "—"))));
    if (!answer.agents.length) {
      body.append(el("tr", {}, el("td", { colspan: "8" }, "No agent has a key or a change in the journal yet (vault-mem agents add NAME).")));
    }
  }

  // -- Search and read -----------------------------------------------------------------

  async function runSearch(query) {
    let answer;
    try { answer = await get("search", query ? { query, limit: "30" } : { limit: "30" }); } catch (e) { fail(e); return; }
    const list = $("#results");
    list.replaceChildren();
    for (const row of answer.notes || []) {
      const li = el("li", {}, el("span", { class: "kind" }, row.kind || row.type || "note"), row.title || row.permalink,
        el("div", { class: "meta" }, row.permalink), row.excerpt ? el("div", { class: "meta" }, row.excerpt) : null);
      li.addEventListener("click", () => openNote(row.permalink));
      list.append(li);
    }
    if (!(answer.notes || []).length) list.append(el("li", { class: "muted" }, answer.message || "nothing found"));
  }

  function cell(value) {
    if (value === null || value === undefined) return "";
    if (Array.isArray(value)) return value.map(cell).join(", ");
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }

  async function openNote(ref) {
    let n;
    try { n = await get("note", { ref }); } catch (e) { fail(e); return; }
    const table = el("table", { class: "fm" });
    for (const key of ["path", "type", "tags", "created", "updated", "memory_status", "state", "agent", "to", "importance"]) {
      if (n[key] !== undefined && n[key] !== null && cell(n[key]) !== "") table.append(el("tr", {}, el("th", {}, key), el("td", {}, cell(n[key]))));
    }
    for (const [key, value] of Object.entries(n.metadata || {})) table.append(el("tr", {}, el("th", {}, key), el("td", {}, cell(value))));
    const article = $("#note");
    // markdown.js builds the body's nodes itself: text as text, links only to notes or the web.
    const body = window.vaultMarkdown.render(n.body || "", { open: openNote, here: n.path || "" });
    article.replaceChildren(el("h2", {}, n.title || n.permalink), table, el("div", { class: "body" }, ...body));
    if (n.next_offset) article.append(el("p", { class: "muted" }, "(the rest of this long note is in the file: " + n.path + ")"));
    if ((n.backlinks || []).length) {
      const back = el("p", { class: "muted" }, "Linked from: ");
      n.backlinks.forEach((b, k) => { const a = el("a", { href: "#" }, b); a.addEventListener("click", (e) => { e.preventDefault(); openNote(b); }); back.append(k ? ", " : "", a); });
      article.append(back);
    }
  }

  // -- Several vaults -------------------------------------------------------------------

  // The switcher: shown only when the session reaches more than one vault; names are text.
  function drawSwitcher() {
    const select = $("#vault");
    select.replaceChildren(...vaults.map((name) => el("option", { value: name }, name)));
    select.value = vault;
    $("#vault-pick").hidden = vaults.length < 2;
  }

  // Every view emptied, so that nothing of the vault left shows under the one chosen.
  function forgetViews() {
    offset = 0;
    $("#changes").replaceChildren();
    $("#change").replaceChildren(el("p", { class: "muted" }, "Pick a change to see its diff."));
    $("#activity-count").textContent = "";
    $("#more").hidden = true;
    $("#filters").reset();
    $("#filters select[name=agent]").replaceChildren(el("option", { value: "" }, "any"));
    $("#inboxes").replaceChildren();
    $("#agents tbody").replaceChildren();
    $("#results").replaceChildren();
    $("#note").replaceChildren();
    $("#search").reset();
    $("#confirm").hidden = true;
    say("");
  }

  function who(session) {
    owner = session.agent === null;
    $("#who").textContent = session.vault + (owner ? " · owner" : " · as agent " + session.agent + " (what it may read)");
    document.querySelectorAll(".owner").forEach((n) => { n.hidden = !owner; });
  }

  async function switchTo(name, remember) {
    if (!vaults.includes(name) || name === vault) return;
    vault = name;
    if (remember) history.pushState(null, "", address(name));
    drawSwitcher();
    forgetViews();
    let session;
    try { session = await get("session"); } catch (e) {
      if (e.message === STALE) return;
      vault = "";  // refused (its key went from that vault): back to what the session still reaches
      history.replaceState(null, "", "/");
      await enter("");
      say(e.message);
      return;
    }
    who(session);  // an agent may be named otherwise in another vault
    show(current);
  }

  // -- start ---------------------------------------------------------------------------

  async function start() {
    const code = new URLSearchParams(location.search).get("login");
    // The code leaves the address bar at once; a vault named there stays.
    if (location.search) history.replaceState(null, "", address(vaultInAddress()));
    document.querySelectorAll("#tabs button[data-view]").forEach((b) => b.addEventListener("click", () => show(b.dataset.view)));
    $("#logout").addEventListener("click", async () => {
      try { await post("logout", {}); } catch (e) { /* ended already */ }
      try { sessionStorage.removeItem(PAGE_SECRET); } catch (e) { /* nothing was kept */ }
      location.assign("/");
    });
    $("#filters").addEventListener("submit", (e) => { e.preventDefault(); loadActivity(false); });
    $("#more").addEventListener("click", () => loadActivity(true));
    $("#status-close").addEventListener("click", () => say(""));
    $("#undo-window").addEventListener("click", undoWindow);
    $("#vault").addEventListener("change", (e) => switchTo(e.target.value, true));
    window.addEventListener("popstate", () => { const name = vaultInAddress(); if (name) switchTo(name, false); });
    $("#search").addEventListener("submit", (e) => { e.preventDefault(); runSearch(String(new FormData(e.target).get("query") || "")); });
    $("#login form").addEventListener("submit", async (e) => {
      e.preventDefault();
      const field = e.target.elements.secret;
      const why = await logIn({ secret: field.value });
      field.value = "";
      if (why) $("#login-why").textContent = why; else enter("");
    });
    enter(code ? await logIn({ code }) : "");
  }

  async function enter(why) {
    if (why || !pageSecret) { showLogin(why); return; }
    const wanted = vaultInAddress();
    let response, session;
    try {
      response = await fetch("/api/session" + address(wanted).slice(1),
        { credentials: "same-origin", headers: { "X-Page-Secret": pageSecret } });
      session = await response.json();
    } catch (e) { say("the server does not answer: " + e.message); return; }
    if (response.status === 401) { showLogin("This session ended: log in again."); return; }
    if (!response.ok && wanted) {  // a vault this session does not reach: the default instead
      history.replaceState(null, "", "/");
      await enter("");
      say(session.message || "that vault is not on this page");
      return;
    }
    vaults = session.vaults || [];
    vault = vaults.length ? session.vault : "";
    if (vault) history.replaceState(null, "", address(vault));
    drawSwitcher();
    who(session);
    $("#login").hidden = true;
    $("#tabs").hidden = false;
    show("activity");
  }

  document.addEventListener("DOMContentLoaded", start);
})();
