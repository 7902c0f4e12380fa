'use strict';
// The GitHub stand-in's state: settings, owners, credentials and runner registrations. Names
// compare case-insensitively (as on GitHub); a scope is an owner (organization runners) or an
// owner/repo pair (repository runners). Everything lives in memory for the process's lifetime.
const crypto = require('node:crypto');
const { randomToken } = require('./http');

const DEFAULT_SETTINGS = {
  pollMs: 3000,                    // how long the broker holds an empty long poll (real: ~50 s)
  lockExpiryMs: 3000,              // dispatched-but-unacquired / unrenewed job lock (real: 10-15 min)
  sessionIdleMs: 8000,             // a session with no open poll or call for this long is gone (offline)
  sessionConflictMs: 15000,        // how long a Listener retries a session conflict before exit 5 (real ~4 min)
  ackLatencyMs: 0,                 // added latency of acknowledge: widens the ack->acquire window
  registrationTokenTtlMs: 3600000, // registration and remove tokens (real: 1 h)
  installationTokenTtlMs: 3600000, // App installation tokens (real: 1 h)
  primaryLimit: 5000,              // REST requests per hour per PAT / installation / App
};

const SYSTEM_LABELS = ['self-hosted', 'Linux', 'X64'];
const lc = (s) => String(s).toLowerCase();

class Model {
  constructor() {
    this.settings = { ...DEFAULT_SETTINGS };
    this.owners = new Map();      // lc(owner) -> display name
    this.pats = new Map();        // token -> { token, owners: Set(lc) | null }
    this.runnerTokens = new Map();// registration/remove token -> { kind, scope, expiresAt }
    this.adminTokens = new Map(); // runner-registration result -> { event, scope, expiresAt }
    this.accessTokens = new Map();// runner OAuth access token -> { runnerId, clientId, expiresAt }
    this.runners = new Map();     // id -> runner
    this.byClientId = new Map();  // OAuth client id -> runner id
    this.labelIds = new Map();    // lc(label) -> id
    this.nextRunnerId = 1;
    this.onRunnerDeleted = () => {};
  }

  setSettings(patch) {
    for (const [k, v] of Object.entries(patch || {})) {
      if (!(k in DEFAULT_SETTINGS)) throw new Error(`unknown setting ${JSON.stringify(k)}`);
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`${k} must be a number >= 0`);
      this.settings[k] = v;
    }
    return { ...this.settings };
  }

  addOwner(owner) {
    if (typeof owner !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9-]*$/.test(owner)) throw new Error(`bad owner ${JSON.stringify(owner)}`);
    if (!this.owners.has(lc(owner))) this.owners.set(lc(owner), owner);
  }
  hasOwner(owner) { return this.owners.has(lc(owner)); }

  // A scope key: 'owner' or 'owner/repo', lower-case.
  static scopeKey(owner, repo) { return repo ? `${lc(owner)}/${lc(repo)}` : lc(owner); }

  issueRunnerToken(kind, owner, repo) {
    const token = randomToken('', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 29, 36);
    const expiresAt = Date.now() + this.settings.registrationTokenTtlMs;
    this.runnerTokens.set(token, { kind, owner, repo: repo || null, expiresAt });
    return { token, expiresAt };
  }

  labelId(name) {
    if (!this.labelIds.has(lc(name))) this.labelIds.set(lc(name), this.labelIds.size + 1);
    return this.labelIds.get(lc(name));
  }

  findByName(owner, repo, name) {
    const key = Model.scopeKey(owner, repo);
    for (const r of this.runners.values()) if (r.scopeKey === key && lc(r.name) === lc(name)) return r;
    return null;
  }

  // labels: [{ name, type: 'read-only' | 'custom' }]; publicKey: a node KeyObject.
  createRunner({ owner, repo, name, labels, ephemeral = false, disableUpdate = false, publicKey, workFolder }) {
    const r = {
      id: this.nextRunnerId++, name, owner, repo: repo || null, scopeKey: Model.scopeKey(owner, repo),
      os: 'Linux', labels: dedupe(labels), ephemeral: !!ephemeral, disableUpdate: !!disableUpdate,
      workFolder: workFolder || '_work', createdAt: Date.now(), busy: false, currentJob: null,
      ephemeralUsed: false, session: null,
    };
    this.rekey(r, publicKey);
    this.runners.set(r.id, r);
    return r;
  }

  // New key pair for a runner (registration or --replace): old OAuth credentials stop working.
  rekey(r, publicKey) {
    if (r.clientId) this.byClientId.delete(r.clientId);
    r.clientId = crypto.randomUUID();
    r.publicKey = publicKey;
    this.byClientId.set(r.clientId, r.id);
  }

  deleteRunner(r) {
    if (!this.runners.has(r.id)) return;
    this.runners.delete(r.id);
    this.byClientId.delete(r.clientId);
    r.deleted = true;
    r.session = null;
    this.onRunnerDeleted(r);
  }

  issueAccessToken(r) {
    const token = randomToken('', undefined, 48, 64);
    this.accessTokens.set(token, { runnerId: r.id, clientId: r.clientId, expiresAt: Date.now() + 3600000 });
    return token;
  }
}

function dedupe(labels) {
  const seen = new Set();
  return labels.filter((l) => !seen.has(lc(l.name)) && seen.add(lc(l.name)));
}

module.exports = { Model, DEFAULT_SETTINGS, SYSTEM_LABELS, lc, dedupe };
