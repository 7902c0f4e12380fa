'use strict';
// Routing and reply helpers for the GitHub stand-in. Routes are GitHub-style templates
// ('/repos/{owner}/{repo}/actions/runners/{runner_id}'); `{*_id}` parameters match digits only,
// so a literal segment such as `downloads` never collides with an id.
const crypto = require('node:crypto');

function compile(method, template, handler) {
  const names = [];
  const re = template.replace(/[.]/g, '\\.').replace(/\{([a-z_]+)\}/g, (_, n) => {
    names.push(n);
    return n.endsWith('_id') ? '(\\d+)' : '([^/]+)';
  });
  return { method, template, handler, names, re: new RegExp(`^${re}$`) };
}

// routes: [[method, template, handler], ...] -> match(method, path) -> {route, params} | null
function router(routes) {
  const compiled = routes.map(([m, t, h]) => compile(m, t, h));
  return (method, path) => {
    for (const r of compiled) {
      if (r.method !== method) continue;
      const m = r.re.exec(path);
      if (!m) continue;
      const params = {};
      r.names.forEach((n, i) => { params[n] = decodeURIComponent(m[i + 1]); });
      return { route: r, params };
    }
    return null;
  };
}

// Writes a JSON reply (no body for 204); a reply to a vanished client is dropped.
function send(res, status, obj, headers = {}) {
  if (res.writableEnded || res.destroyed) return;
  const body = obj === undefined || status === 204 ? '' : JSON.stringify(obj);
  res.writeHead(status, {
    ...(body ? { 'content-type': 'application/json; charset=utf-8' } : {}),
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

function parseJson(buf) {
  const s = buf.toString('utf8').trim();
  if (!s) return {};
  try { return JSON.parse(s); } catch { return undefined; }
}

// ISO-8601 without milliseconds, as GitHub prints expires_at.
const isoSec = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

// Random token; the random part's length varies so no client can rely on a fixed length.
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function randomToken(prefix = '', alphabet = ALNUM, min = 36, max = 52) {
  const len = min + crypto.randomInt(max - min + 1);
  let s = prefix;
  for (let i = 0; i < len; i++) s += alphabet[crypto.randomInt(alphabet.length)];
  return s;
}

module.exports = { router, send, parseJson, isoSec, randomToken };
