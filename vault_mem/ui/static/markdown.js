// A note's Markdown body as DOM nodes, for the page for people (docs/ui.md, "Search and read").
// Every body was written by an agent or an import: it is hostile. Nothing here ever parses
// markup: text goes in as text nodes, elements are made with createElement from a fixed set of
// tags, and the only attributes set are href (http:, https: or mailto: links, or "#" for a link
// that opens a note in the page), target, rel, start and class. Raw HTML and entities show as
// the characters written. Headings, emphasis, lists, block quotes, code, links, wikilinks,
// tables and rules; no images (an image shows as a link to it).
"use strict";
(function () {
  const MAX_DEPTH = 12;  // quotes and lists nested deeper show as text
  const LOOK_BACK = 1000;  // items an emphasis closer looks back through (a hostile run stays linear)
  const SAFE_LINK = /^(https?:|mailto:)/i;
  const PUNCT = /[\p{P}\p{S}]/u;
  const SPACE = /\s/u;

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const child of typeof children === "string" ? [children] : children || []) node.append(typeof child === "string" ? document.createTextNode(child) : child);
    return node;
  }

  // -- inline ------------------------------------------------------------------------------

  // What a link's destination does: open a note in the page, open a web page in a new tab, or nothing.
  function linkTo(url, label, ctx) {
    if (SAFE_LINK.test(url)) return el("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, label);
    const note = /^[^:?#]+\.md(#.*)?$/i.test(url) ? url.replace(/#.*$/, "") : null;  // a relative link to a note
    if (note !== null && ctx.open) {
      let path;
      try {
        const here = ctx.here.split("/").map(encodeURIComponent).join("/");
        path = decodeURIComponent(new URL(note, "http://vault.invalid/" + here).pathname.slice(1));
      } catch (e) { return null; }
      return noteLink(path, label, ctx);
    }
    return null;
  }

  function noteLink(ref, label, ctx) {
    const link = el("a", { href: "#", class: "wikilink" }, label);
    link.addEventListener("click", (e) => { e.preventDefault(); ctx.open(ref); });
    return link;
  }

  function flanking(text, start, end) {
    const before = start > 0 ? text[start - 1] : " ", after = end < text.length ? text[end] : " ";
    const left = !SPACE.test(after) && (!PUNCT.test(after) || SPACE.test(before) || PUNCT.test(before));
    const right = !SPACE.test(before) && (!PUNCT.test(before) || SPACE.test(after) || PUNCT.test(after));
    return { left, right, beforePunct: PUNCT.test(before), afterPunct: PUNCT.test(after) };
  }

  // Backtick runs: for each run's start, where the next run of the same length starts (code spans
  // are found in one pass, however many unmatched backticks a body holds).
  function codeSpans(text) {
    const runs = [];
    for (let i = 0; i < text.length;) {
      if (text[i] === "`") {
        let j = i;
        while (text[j] === "`") j += 1;
        runs.push([i, j - i]);
        i = j;
      } else i += 1;
    }
    const closes = new Map(), next = new Map();
    for (let k = runs.length - 1; k >= 0; k -= 1) {
      const [at, size] = runs[k];
      if (next.has(size)) closes.set(at, next.get(size));
      next.set(size, at);
    }
    return closes;
  }

  // Where each "[" closes (its "]"), in one pass.
  function brackets(text) {
    const open = [], closes = new Map();
    for (let i = 0; i < text.length; i += 1) {
      if (text[i] === "\\") { i += 1; continue; }
      if (text[i] === "[") open.push(i);
      else if (text[i] === "]" && open.length) closes.set(open.pop(), i);
    }
    return closes;
  }

  const URL_PART = /^\([ \t]*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*)/;

  // A link's "(destination "title")" at ``at``: {url, end} or null. By hand after the URL: two
  // runs of spaces side by side in a regular expression take quadratic time on a hostile line.
  function destination(text, at) {
    const m = URL_PART.exec(text.slice(at, at + 2048));
    if (!m) return null;
    let k = at + m[0].length;
    const spaces = () => { const from = k; while (text[k] === " " || text[k] === "\t") k += 1; return k > from; };
    if (spaces() && (text[k] === '"' || text[k] === "'")) {
      const quote = text.indexOf(text[k], k + 1);
      if (quote < 0 || text.slice(k, quote).includes("\n")) return null;
      k = quote + 1;
      spaces();
    }
    return text[k] === ")" ? { url: m[1].replace(/^<|>$/g, ""), end: k + 1 } : null;
  }
  const AUTOLINK = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i;
  const BARE_URL = /^https?:\/\/[^\s<>]*[^\s<>.,:;"'!?)\]*_~]/i;

  // ``text`` as a list of items: DOM nodes and text, and emphasis delimiter runs to pair up.
  function scan(text, ctx, inLink) {
    const items = [];
    let buffer = "";
    const flush = () => { if (buffer) { items.push(buffer); buffer = ""; } };
    const code = codeSpans(text), closing = brackets(text);
    let wikiClose = -2;
    let i = 0;
    while (i < text.length) {
      const c = text[i];
      if (c === "\\" && i + 1 < text.length && /[!-/:-@[-`{-~]/.test(text[i + 1])) {
        buffer += text[i + 1]; i += 2; continue;
      }
      if (c === "`") {
        let j = i;
        while (text[j] === "`") j += 1;
        const end = code.get(i);
        if (end !== undefined) {
          let inner = text.slice(j, end);
          if (inner.length > 2 && inner[0] === " " && inner[inner.length - 1] === " " && inner.trim()) inner = inner.slice(1, -1);
          flush(); items.push(el("code", {}, [inner]));
          i = end + (j - i);
        } else { buffer += text.slice(i, j); i = j; }
        continue;
      }
      if (!inLink && c === "[" && text[i + 1] === "[") {
        if (wikiClose !== -1 && wikiClose < i + 2) wikiClose = text.indexOf("]]", i + 2);
        if (wikiClose > i + 2) {
          const inner = text.slice(i + 2, wikiClose);
          if (inner.length <= 300 && !/[[\]\n]/.test(inner)) {
            const [target, label] = inner.split(/\|(.*)/s);
            const ref = target.replace(/#.*$/, "").trim();
            if (ref && ctx.open) {
              flush(); items.push(noteLink(ref, (label || target).trim(), ctx));
              i = wikiClose + 2; continue;
            }
          }
        }
      }
      if (!inLink && (c === "[" || (c === "!" && text[i + 1] === "["))) {
        const open = c === "!" ? i + 1 : i;
        const close = closing.get(open);
        const dest = close !== undefined && text[close + 1] === "(" ? destination(text, close + 1) : null;
        if (dest) {
          const url = dest.url;
          const label = text.slice(open + 1, close);
          const shown = c === "!" ? ["image: " + label] : inline(label, ctx, true);
          const link = linkTo(url, shown, ctx);
          if (link) { flush(); items.push(link); } else buffer += text.slice(i, dest.end);  // going nowhere safe: as written
          i = dest.end; continue;
        }
      }
      if (!inLink && c === "<") {
        const auto = AUTOLINK.exec(text.slice(i, i + 2048));
        if (auto) { flush(); items.push(el("a", { href: auto[1], target: "_blank", rel: "noopener noreferrer" }, [auto[1]])); i += auto[0].length; continue; }
      }
      if (!inLink && (c === "h" || c === "H") && (i === 0 || /[\s(]/.test(text[i - 1]))) {
        const bare = BARE_URL.exec(text.slice(i, i + 2048));
        if (bare) { flush(); items.push(el("a", { href: bare[0], target: "_blank", rel: "noopener noreferrer" }, [bare[0]])); i += bare[0].length; continue; }
      }
      if (c === "*" || c === "_" || c === "~") {
        let j = i;
        while (text[j] === c) j += 1;
        const f = flanking(text, i, j);
        let canOpen = f.left, canClose = f.right;
        if (c === "_") { canOpen = f.left && (!f.right || f.beforePunct); canClose = f.right && (!f.left || f.afterPunct); }
        if (c === "~" && j - i !== 2) { canOpen = false; canClose = false; }
        flush();
        items.push({ ch: c, count: j - i, size: j - i, canOpen, canClose });
        i = j; continue;
      }
      buffer += c;
      i += 1;
    }
    flush();
    return items;
  }

  function nodes(items) {
    return items.map((item) => (typeof item === "string" || item instanceof Node ? item : item.ch.repeat(item.count)));
  }

  // Pair emphasis delimiters as CommonMark does (its "process emphasis", with the rule of three).
  function emphasis(items) {
    let i = 0;
    while (i < items.length) {
      const closer = items[i];
      if (!closer.ch || !closer.canClose || closer.count === 0) { i += 1; continue; }
      let found = -1;
      for (let j = i - 1; j >= 0 && j >= i - LOOK_BACK; j -= 1) {
        const o = items[j];
        if (!o.ch) continue;
        if (o.ch !== closer.ch || !o.canOpen || o.count === 0) continue;
        if ((o.canClose || closer.canOpen) && (o.size + closer.size) % 3 === 0 && (o.size % 3 || closer.size % 3)) continue;
        if (o.ch === "~" && (o.count < 2 || closer.count < 2)) continue;
        found = j;
        break;
      }
      if (found < 0) { i += 1; continue; }
      const opener = items[found];
      const use = opener.ch === "~" || (opener.count >= 2 && closer.count >= 2) ? 2 : 1;
      const tag = opener.ch === "~" ? "del" : use === 2 ? "strong" : "em";
      const wrapped = el(tag, {}, nodes(items.slice(found + 1, i)));
      opener.count -= use;
      closer.count -= use;
      items.splice(found + 1, i - found - 1, wrapped);
      i = found + 2;  // the closer
      if (opener.count === 0) { items.splice(found, 1); i -= 1; }
      if (closer.count === 0) items.splice(i, 1);
    }
    return nodes(items);
  }

  function inline(text, ctx, inLink) {
    return emphasis(scan(text, ctx, inLink || false));
  }

  // -- blocks ------------------------------------------------------------------------------

  const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]|$)/;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const QUOTE = /^ {0,3}> ?/;
  const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)/;
  const LONGEST_RULE = 1000;  // a table's rule line longer than this is text (its pattern backtracks)
  const TABLE_RULE = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
  const BLANK = /^[ \t]*$/;

  function cells(line) {
    let row = line.trim();
    if (row.startsWith("|")) row = row.slice(1);
    if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
    const out = [];
    let cell = "";
    for (let i = 0; i < row.length; i += 1) {
      if (row[i] === "\\" && row[i + 1] === "|") { cell += "|"; i += 1; } else if (row[i] === "|") { out.push(cell.trim()); cell = ""; } else cell += row[i];
    }
    out.push(cell.trim());
    return out;
  }

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);
  }

  // An ATX heading's text: without its closing run of #s.
  function headingText(rest) {
    const text = rest.trim();
    let k = text.length;
    while (k > 0 && text[k - 1] === "#") k -= 1;
    return k === text.length ? text : k === 0 ? "" : /[ \t]/.test(text[k - 1]) ? text.slice(0, k).trimEnd() : text;
  }

  function blocks(lines, ctx, depth) {
    const out = [];
    let para = [];
    const endPara = () => { if (para.length) { out.push(el("p", {}, inline(para.join(" "), ctx))); para = []; } };
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (BLANK.test(line)) { endPara(); i += 1; continue; }
      if ((m = FENCE.exec(line))) {
        endPara();
        const fence = m[1], code = [];
        const indent = line.length - line.trimStart().length;
        i += 1;
        while (i < lines.length && !(new RegExp("^ {0,3}" + fence[0] + "{" + fence.length + ",}[ \\t]*$").test(lines[i]))) {
          code.push(lines[i].replace(new RegExp("^ {0," + indent + "}"), ""));
          i += 1;
        }
        i += 1;
        out.push(el("pre", {}, [el("code", {}, [code.join("\n")])]));
        continue;
      }
      if (para.length && /^ {0,3}=+[ \t]*$/.test(line)) { out.push(el("h2", {}, inline(para.join(" "), ctx))); para = []; i += 1; continue; }
      if (para.length && /^ {0,3}-+[ \t]*$/.test(line)) { out.push(el("h3", {}, inline(para.join(" "), ctx))); para = []; i += 1; continue; }
      if ((m = HEADING.exec(line))) {
        endPara();
        out.push(el("h" + Math.min(m[1].length + 1, 6), {}, inline(headingText(line.slice(m[0].length)), ctx)));  // h1: the page's, h2: the note's title
        i += 1; continue;
      }
      if (RULE.test(line)) { endPara(); out.push(el("hr", {}, [])); i += 1; continue; }
      if (!para.length && /^( {4}|\t)/.test(line)) {
        const code = [];
        while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || BLANK.test(lines[i]))) { code.push(lines[i].replace(/^( {4}|\t)/, "")); i += 1; }
        while (code.length && BLANK.test(code[code.length - 1])) code.pop();
        out.push(el("pre", {}, [el("code", {}, [code.join("\n")])]));
        continue;
      }
      if (QUOTE.test(line) && depth < MAX_DEPTH) {
        endPara();
        const inner = [];
        while (i < lines.length && (QUOTE.test(lines[i]) || (inner.length && !BLANK.test(lines[i]) && !startsBlock(lines[i])
            && !BLANK.test(inner[inner.length - 1])))) {
          inner.push(lines[i].replace(QUOTE, ""));
          i += 1;
        }
        out.push(el("blockquote", {}, blocks(inner, ctx, depth + 1)));
        continue;
      }
      if ((m = ITEM.exec(line)) && depth < MAX_DEPTH && !(para.length && /\d/.test(m[2]) && parseInt(m[2], 10) !== 1)) {
        endPara();
        const ordered = /\d/.test(m[2]);
        const marker = m[2].slice(-1);
        const list = el(ordered ? "ol" : "ul", ordered && parseInt(m[2], 10) !== 1 ? { start: String(parseInt(m[2], 10)) } : {}, []);
        const same = (text) => { const n = ITEM.exec(text); return n !== null && /\d/.test(n[2]) === ordered && n[2].slice(-1) === marker; };
        const items = [];
        let loose = false;
        while (i < lines.length && (m = ITEM.exec(lines[i])) && same(lines[i])) {
          const width = m[3] ? m[0].length : m[1].length + m[2].length + 1;
          const inner = [lines[i].slice(m[0].length)];
          i += 1;
          while (i < lines.length) {
            const next = lines[i];
            const indent = next.length - next.trimStart().length;
            if (BLANK.test(next)) {
              const after = i + 1 < lines.length ? lines[i + 1] : "";
              if (!BLANK.test(after) && after.length - after.trimStart().length >= width) { inner.push(""); loose = true; i += 1; continue; }
              break;
            }
            if (indent >= width) { inner.push(next.slice(width)); i += 1; continue; }
            if (!startsBlock(next) && !BLANK.test(inner[inner.length - 1])) { inner.push(next.trim()); i += 1; continue; }  // a lazy line
            break;
          }
          if (i + 1 < lines.length && BLANK.test(lines[i]) && same(lines[i + 1])) { loose = true; i += 1; }
          const task = /^\[([ xX])\][ \t]+/.exec(inner[0]);
          if (task) inner[0] = inner[0].slice(task[0].length);
          items.push([inner, task]);
        }
        for (const [inner, task] of items) {
          const item = el("li", task ? { class: "task" } : {}, task ? [task[1] === " " ? "\u2610 " : "\u2611 "] : []);
          for (const node of blocks(inner, ctx, depth + 1)) {
            if (!loose && node.tagName === "P") item.append(...node.childNodes); else item.append(node);
          }
          list.append(item);
        }
        out.push(list);
        continue;
      }
      if (line.includes("|") && i + 1 < lines.length && lines[i + 1].length <= LONGEST_RULE && lines[i + 1].includes("-")
          && TABLE_RULE.test(lines[i + 1]) && cells(line).length === cells(lines[i + 1]).length) {
        endPara();
        const head = cells(line);
        const align = cells(lines[i + 1]).map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : ""));
        const cell = (tag, text, k) => el(tag, align[k] ? { class: "align-" + align[k] } : {}, inline(text, ctx));
        const table = el("table", { class: "md" }, [el("thead", {}, [el("tr", {}, head.map((t, k) => cell("th", t, k)))])]);
        const body = el("tbody", {}, []);
        i += 2;
        while (i < lines.length && !BLANK.test(lines[i]) && lines[i].includes("|") && !startsBlock(lines[i])) {
          const row = cells(lines[i]);
          body.append(el("tr", {}, head.map((_, k) => cell("td", row[k] || "", k))));
          i += 1;
        }
        table.append(body);
        out.push(el("div", { class: "table" }, [table]));
        continue;
      }
      para.push(line.trim());
      i += 1;
    }
    endPara();
    return out;
  }

  // ``body`` as nodes; ``ctx.open(ref)`` opens a note in the page (wikilinks and relative links to
  // notes), ``ctx.here`` is the note's own path (relative links are resolved from its folder).
  function render(body, ctx) {
    const context = { open: ctx && ctx.open, here: (ctx && ctx.here) || "" };
    return blocks(String(body).replace(/\r\n?/g, "\n").split("\n"), context, 0);
  }

  window.vaultMarkdown = Object.freeze({ render });
})();
