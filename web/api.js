// The page's only way out: `/api/v1` of the server that served it
// (docs/web.md). Errors come back as {status, code, detail}, the RFC 9457
// problem's fields, so the page can show their plain message and code.

let auth = { ws: "", token: "" };

/** Sets the workspace and token (kept in memory and sessionStorage). */
export function login(ws, token) {
  auth = { ws, token };
  try {
    sessionStorage.setItem("troupe.ws", ws);
    sessionStorage.setItem("troupe.token", token);
  } catch (_) { /* storage refused: memory only */ }
}

/** The workspace and token kept in sessionStorage, if any. */
export function saved() {
  try {
    return { ws: sessionStorage.getItem("troupe.ws") || "", token: sessionStorage.getItem("troupe.token") || "" };
  } catch (_) {
    return { ws: "", token: "" };
  }
}

export class Problem extends Error {
  constructor(status, code, detail) {
    super(`${detail} (${code}, HTTP ${status})`);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

function url(path) {
  return `/api/v1/workspaces/${encodeURIComponent(auth.ws)}${path}`;
}

async function call(method, path, body, type) {
  const headers = { Authorization: `Bearer ${auth.token}` };
  if (body !== undefined) headers["Content-Type"] = type || "application/json";
  let res;
  try {
    res = await fetch(url(path), {
      method,
      headers,
      body: body === undefined ? undefined : (type ? body : JSON.stringify(body)),
      cache: "no-store",
    });
  } catch (e) {
    throw new Problem(0, "NETWORK", `the server did not answer: ${e.message}`);
  }
  if (!res.ok) {
    let code = "HTTP", detail = res.statusText || "error";
    try {
      const p = await res.json();
      if (p && typeof p === "object") {
        code = String(p.code || code);
        detail = String(p.detail || p.title || detail);
        if (Array.isArray(p.diagnostics) && p.diagnostics.length) {
          detail += ": " + p.diagnostics.slice(0, 5).map((d) => `${d.code || ""} ${d.message || ""}`.trim()).join("; ");
        }
      }
    } catch (_) { /* not JSON */ }
    throw new Problem(res.status, code, detail);
  }
  return res;
}

export const get = async (path) => (await call("GET", path)).json();
export const text = async (path) => (await call("GET", path)).text();
export const post = async (path, body) => (await call("POST", path, body || {})).json();
export const postBytes = async (path, bytes, type) => (await call("POST", path, bytes, type)).json();
export const put = async (path, bytes) => (await call("PUT", path, bytes, "application/octet-stream")).json();
