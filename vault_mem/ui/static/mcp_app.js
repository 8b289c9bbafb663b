// The MCP Apps view of memory_search (docs/ui.md): JSON-RPC over postMessage with the host,
// which renders this page in a sandboxed frame; search calls go through the host (tools/call).
// Every value from an answer goes into the page as text only.
"use strict";
(function () {
  let nextId = 1;
  const pending = new Map();
  const host = window.parent;
  let agent = "person";  // the model's own agent name once its call is seen (tool-input)
  let heard = false;  // the host has said how the model's call ended (a result, or cancelled)
  // Only inline: the view never asks to change mode, so a host never moves it (SEP-1865's MUST).
  const DISPLAY_MODES = ["inline"];

  function request(method, params) {
    const id = nextId++;
    host.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  }
  function notify(method, params) { host.postMessage({ jsonrpc: "2.0", method, params }, "*"); }

  function el(tag, cls, text) { const n = document.createElement(tag); if (cls) n.className = cls; if (text !== undefined) n.textContent = text; return n; }

  function answerOf(result) {
    if (!result) return null;
    if (result.structuredContent) return result.structuredContent;
    const block = (result.content || []).find((c) => c && c.type === "text");
    try { return block ? JSON.parse(block.text) : null; } catch (e) { return null; }
  }

  function render(result) {
    const answer = answerOf(result) || {};
    const rows = answer.notes || [];
    const list = document.getElementById("results");
    list.replaceChildren();
    for (const row of rows) {
      const li = el("li");
      li.append(el("span", "kind", String(row.kind || row.type || "note")), el("span", "title", String(row.title || row.permalink || "")));
      li.append(el("div", "meta", String(row.permalink || "")));
      if (row.excerpt) li.append(el("div", "meta", String(row.excerpt)));
      list.append(li);
    }
    document.getElementById("summary").textContent = rows.length
      ? rows.length + (rows.length === 1 ? " note" : " notes") + (answer.truncated ? " (more match)" : "")
      : String(answer.message || "nothing found");
  }

  // The view's size, each time it changes, so that a host sizing its frame to the content can
  // follow (ui/notifications/size-changed); only once the handshake is done, and only changes.
  let sent = "";
  function reportSize() {
    const size = { width: document.body.scrollWidth, height: document.body.scrollHeight };
    if (JSON.stringify(size) === sent) return;
    sent = JSON.stringify(size);
    notify("ui/notifications/size-changed", size);
  }

  function theme(context) {
    if (context && context.theme) document.documentElement.classList.toggle("dark", context.theme === "dark");
  }

  window.addEventListener("message", (event) => {
    if (event.source !== host) return;
    const msg = event.data;
    if (!msg || msg.jsonrpc !== "2.0") return;
    if (msg.id !== undefined && pending.has(msg.id) && !msg.method) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(msg.error.message || "error")); else resolve(msg.result);
      return;
    }
    const params = msg.params || {};
    if (msg.method === "ui/notifications/tool-result") { heard = true; render(params.result || params); }
    else if (msg.method === "ui/notifications/tool-cancelled") {
      heard = true;
      document.getElementById("results").replaceChildren();
      const reason = typeof params.reason === "string" && params.reason ? " (" + params.reason + ")" : "";
      document.getElementById("summary").textContent = "The model's search was cancelled" + reason + ". Ask a search.";
    }
    else if (msg.method === "ui/notifications/tool-input") {
      const args = params.arguments || {};
      if (typeof args.query === "string") document.querySelector("#search input").value = args.query;
      if (typeof args.agent === "string") agent = args.agent;
    } else if (msg.method === "ui/notifications/host-context-changed") theme(params);
    else if (msg.method === "ui/resource-teardown" && msg.id !== undefined) host.postMessage({ jsonrpc: "2.0", id: msg.id, result: {} }, "*");
  });

  // A button and Enter, not a form: a host's sandbox may not allow form submission.
  async function search() {
    const query = document.querySelector("#search input").value;
    document.getElementById("summary").textContent = "Searching…";
    try { render(await request("tools/call", { name: "memory_search", arguments: query ? { agent, query } : { agent } })); }
    catch (e) { document.getElementById("summary").textContent = "The host refused or failed the call: " + e.message; }
  }
  document.querySelector("#search button").addEventListener("click", search);
  document.querySelector("#search input").addEventListener("keydown", (e) => { if (e.key === "Enter") search(); });

  request("ui/initialize", { protocolVersion: "2026-01-26", appInfo: { name: "vault-mem", version: "1" },
                            appCapabilities: { availableDisplayModes: DISPLAY_MODES } })
    .then((result) => {
      theme(result && result.hostContext);
      if (!heard) document.getElementById("summary").textContent = "Ask a search, or wait for the model's.";
      notify("ui/notifications/initialized", {});
      reportSize();
      if (typeof ResizeObserver === "function") new ResizeObserver(reportSize).observe(document.body);
    })
    .catch((e) => { document.getElementById("summary").textContent = "The host did not start this view: " + e.message; });
})();
