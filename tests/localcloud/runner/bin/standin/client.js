'use strict';
// HTTP for the runner: JSON/form requests through fetch with an abort signal (the shutdown
// token) and a timeout, and the OAuth client-credentials exchange with an RS256 client
// assertion signed by the runner's own key.
const crypto = require('node:crypto');

const fs = require('node:fs');
const path = require('node:path');

// The runner's version: 2.336.0, or what bin/standin/VERSION says (a package the GitHub stand-in
// made for a self-update carries one).
function ownVersion() {
  try { return fs.readFileSync(path.join(__dirname, 'VERSION'), 'utf8').trim() || '2.336.0'; } catch { return '2.336.0'; }
}
const VERSION = ownVersion();
const USER_AGENT = `GitHubActionsRunner-linux-x64/${VERSION} (stand-in)`;
const STATUS_NAMES = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 409: 'Conflict', 422: 'UnprocessableEntity', 500: 'InternalServerError', 502: 'BadGateway' };

// -> { status, body } (body parsed JSON, or {} when empty/not JSON). Throws on network errors,
// aborts and timeouts (err.name AbortError / TimeoutError).
async function call(method, url, { auth, json, form, signal, timeoutMs = 30000 } = {}) {
  const headers = { 'user-agent': USER_AGENT, accept: 'application/json' };
  if (auth) headers.authorization = auth;
  let body;
  if (json !== undefined) { headers['content-type'] = 'application/json'; body = JSON.stringify(json); }
  if (form !== undefined) { headers['content-type'] = 'application/x-www-form-urlencoded'; body = new URLSearchParams(form).toString(); }
  const signals = [AbortSignal.timeout(timeoutMs)];
  if (signal) signals.push(signal);
  const res = await fetch(url, { method, headers, body, signal: AbortSignal.any(signals) });
  const text = await res.text();
  let parsed = {};
  try { parsed = text ? JSON.parse(text) : {}; } catch { parsed = { raw: text }; }
  return { status: res.status, body: parsed };
}

const b64url = (s) => Buffer.from(s).toString('base64url');

// Exchanges a client assertion for an access token. Throws err.deleted when the service no
// longer knows this registration.
async function accessToken(credentials, privateKey, signal) {
  const { clientId, authorizationUrl } = credentials.data;
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub: clientId, iss: clientId, aud: authorizationUrl, jti: crypto.randomUUID(), nbf: now - 30, iat: now, exp: now + 300 };
  const input = `${b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}`;
  const assertion = `${input}.${crypto.sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
  const r = await call('POST', authorizationUrl, {
    form: { grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion },
    signal, timeoutMs: 30000,
  });
  if (r.status === 200 && r.body.access_token) return r.body.access_token;
  const err = new Error(`OAuth token request failed: ${r.status} ${r.body.error_description || r.body.error || ''}`);
  err.deleted = r.body.error === 'invalid_client' && /not found or is not active/.test(r.body.error_description || '');
  throw err;
}

module.exports = { call, accessToken, VERSION, STATUS_NAMES };
