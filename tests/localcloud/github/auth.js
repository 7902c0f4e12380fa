'use strict';
// Who is calling the REST API, and how much of their hourly budget is left. Credentials: a PAT
// registered through control, a live App installation token, or an App's RS256 JWT (verified
// against the App's public key). Budgets are per PAT, per installation and per App, as on GitHub.
const crypto = require('node:crypto');
const { decode, verifyRs256 } = require('./jwt');
const { randomToken, isoSec } = require('./http');
const { lc } = require('./model');

const DOCS = 'https://docs.github.com/rest';
const JWT_MSG = {
  decode: 'A JSON web token could not be decoded',
  iss: 'Integration not found',
  iat: "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
  exp: "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
  far: "'Expiration time' claim ('exp') is too far in the future",
};
const SKEW_S = 60;       // tolerated clock skew for iat
const MAX_JWT_S = 600;   // exp at most 10 minutes ahead of the server's clock (GitHub's rule)

class Auth {
  constructor(model) {
    this.model = model;
    this.apps = new Map();          // appId(string) -> { appId, clientId, slug, publicKey }
    this.installations = new Map(); // id -> { id, appId, owner, createdAt }
    this.instTokens = new Map();    // token -> { installationId, expiresAt }
    this.windows = new Map();       // principal key -> { resetAt (epoch s), used }
    this.nextAppId = 1001;
    this.nextInstallationId = 5001;
  }

  addApp({ appId, clientId, privateKeyPem, slug } = {}) {
    let privatePem = privateKeyPem;
    if (!privatePem) {
      const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
      privatePem = privateKey.export({ type: 'pkcs1', format: 'pem' });
    }
    const publicKey = crypto.createPublicKey(privatePem);
    const id = String(appId ?? this.nextAppId++);
    if (this.apps.has(id)) throw new Error(`app ${id} exists`);
    const app = { appId: id, clientId: clientId || `Iv23${randomToken('', undefined, 16, 16)}`, slug: slug || `app-${id}`, publicKey };
    this.apps.set(id, app);
    return { appId: Number(id), clientId: app.clientId, slug: app.slug, privateKeyPem: privatePem };
  }

  addInstallation(appId, owner) {
    const app = this.apps.get(String(appId));
    if (!app) throw Object.assign(new Error(`no app ${appId}`), { status: 404 });
    this.model.addOwner(owner);
    for (const i of this.installations.values()) if (i.appId === app.appId && lc(i.owner) === lc(owner)) return { id: i.id, appId: Number(app.appId), owner: i.owner };
    const inst = { id: this.nextInstallationId++, appId: app.appId, owner, createdAt: Date.now() };
    this.installations.set(inst.id, inst);
    return { id: inst.id, appId: Number(app.appId), owner };
  }

  installationFor(app, owner) {
    for (const i of this.installations.values()) if (i.appId === app.appId && lc(i.owner) === lc(owner)) return i;
    return null;
  }

  issueInstallationToken(inst) {
    const token = randomToken('ghs_', undefined, 36, 52);
    const expiresAt = Date.now() + this.model.settings.installationTokenTtlMs;
    this.instTokens.set(token, { installationId: inst.id, expiresAt });
    return { token, expires_at: isoSec(expiresAt) };
  }

  // -> { principal } (principal null when no Authorization header) or { status, message }.
  authenticate(header) {
    if (!header) return { principal: null };
    const m = /^(Bearer|token)\s+(\S+)\s*$/i.exec(header);
    if (!m) return { status: 401, message: 'Bad credentials' };
    const [, scheme, tok] = m;
    const pat = this.model.pats.get(tok);
    if (pat) return { principal: { kind: 'pat', key: `pat:${tok}`, token: tok, owners: pat.owners } };
    const it = this.instTokens.get(tok);
    if (it) {
      if (it.expiresAt <= Date.now()) return { status: 401, message: 'Bad credentials' };
      const inst = this.installations.get(it.installationId);
      return { principal: { kind: 'installation', key: `installation:${inst.id}`, token: tok, installation: inst } };
    }
    const jwt = /^bearer$/i.test(scheme) ? decode(tok) : null;
    if (jwt) return this.checkJwt(jwt, tok);
    return { status: 401, message: 'Bad credentials' };
  }

  checkJwt(jwt, tok) {
    const { iss, iat, exp } = jwt.payload;
    const app = [...this.apps.values()].find((a) => a.appId === String(iss) || a.clientId === iss);
    if (!app) return { status: 401, message: JWT_MSG.iss };
    if (!verifyRs256(jwt, app.publicKey)) return { status: 401, message: JWT_MSG.decode };
    const now = Math.floor(Date.now() / 1000);
    if (!Number.isInteger(iat) || iat > now + SKEW_S) return { status: 401, message: JWT_MSG.iat };
    if (typeof exp !== 'number' || !Number.isFinite(exp) || exp <= now) return { status: 401, message: JWT_MSG.exp };
    if (exp > now + MAX_JWT_S) return { status: 401, message: JWT_MSG.far };
    return { principal: { kind: 'app', key: `app:${app.appId}`, token: tok, app } };
  }

  // Counts one request against the principal's hourly budget (when `count`), and returns the
  // x-ratelimit-* headers plus whether the budget was already spent.
  rate(principal, count = true) {
    const key = principal ? principal.key : 'anonymous';
    const limit = principal ? this.model.settings.primaryLimit : 60;
    const now = Math.floor(Date.now() / 1000);
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) this.windows.set(key, (w = { resetAt: now + 3600, used: 0 }));
    const exceeded = w.used >= limit;
    if (count && !exceeded) w.used++;
    const headers = {
      'x-ratelimit-limit': String(limit),
      'x-ratelimit-remaining': String(Math.max(0, limit - w.used)),
      'x-ratelimit-used': String(Math.min(w.used, limit)),
      'x-ratelimit-reset': String(w.resetAt),
      'x-ratelimit-resource': 'core',
    };
    return { headers, exceeded };
  }

  exceededMessage(principal) {
    if (principal?.kind === 'installation') return `API rate limit exceeded for installation ID ${principal.installation.id}.`;
    if (principal?.kind === 'app') return `API rate limit exceeded for app ID ${principal.app.appId}.`;
    return 'API rate limit exceeded for user ID 1.';
  }
}

module.exports = { Auth, DOCS };
