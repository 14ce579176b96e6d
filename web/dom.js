// Building the page's elements. Server data only ever becomes text
// (textContent, attribute values): no innerHTML of anything the server
// sent. The one exception is an SVG picture Troupe drew (`troupe graph`,
// `troupe plot`), which Troupe escapes itself; it is parsed as XML and
// cleaned of scripts, foreign objects, event handlers and outside links
// before it is shown (docs/web.md "Safety").

/** An element: h("li", {class: "x", onclick: f}, "text", child, …). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Empties `el` and appends `children`. */
export function fill(el, ...children) {
  el.replaceChildren();
  for (const c of children.flat()) {
    if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** An SVG document from the server as a clean element, or null. */
export function svgElement(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const root = doc.documentElement;
  if (!root || root.localName !== "svg" || doc.getElementsByTagName("parsererror").length) return null;
  for (const bad of [...root.querySelectorAll("script, foreignObject, iframe, object, embed")]) bad.remove();
  for (const el of [root, ...root.querySelectorAll("*")]) {
    for (const a of [...el.attributes]) {
      const name = a.name.toLowerCase();
      const value = a.value.trim().toLowerCase();
      if (name.startsWith("on")) el.removeAttribute(a.name);
      else if ((name === "href" || name === "xlink:href") && !value.startsWith("#")) el.removeAttribute(a.name);
    }
  }
  return document.importNode(root, true);
}

/** Saves `text` as a file named `name` (a Blob link clicked). */
export function download(name, text, type) {
  const blob = new Blob([text], { type: type || "application/octet-stream" });
  const a = h("a", { href: URL.createObjectURL(blob), download: name, hidden: true });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}
