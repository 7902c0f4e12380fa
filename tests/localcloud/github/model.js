'use strict';
// The GitHub stand-in's state: settings, owners, enterprises, repositories' ids and moves,
// runner groups, credentials and runner registrations. Names compare case-insensitively (as on
// GitHub); a scope is an owner (organization runners), an owner/repo pair (repository runners) or
// an enterprise, written as the owner "enterprise:<slug>" (no login has a ':'). Everything lives
// in memory for the process's lifetime.
const crypto = require('node:crypto');
const { randomToken } = require('./http');

const DEFAULT_SETTINGS = {
  pollMs: 3000,                    // how long the broker holds an empty long poll (real: ~50 s)
  lockExpiryMs: 3000,              // dispatched-but-unacquired / unrenewed job lock (real: 10-15 min)
  sessionIdleMs: 8000,             // a session with no open poll or call for this long is gone (offline)
  sessionConflictMs: 15000,        // how long a Listener retries a session conflict before exit 5 (real ~4 min)
  ackLatencyMs: 0,                 // added latency of acknowledge: widens the ack->acquire window
  // Whether job messages ask the runner to acknowledge them (RunnerJobRequestRef.ShouldAcknowledge,
  // a server-side feature flag; a plain bool the runner reads as false when the server omits it).
  shouldAcknowledge: false,
  listener: 'broker',              // the flow sessions get: 'broker' (BrokerMessageListener) or 'legacy' (MessageListener)
  channelTimeoutMs: 1000,          // a `workerSendTimeout` job: how long the send to the Worker hangs (real: 30-300 s)
  registrationTokenTtlMs: 3600000, // registration and remove tokens (real: 1 h)
  installationTokenTtlMs: 3600000, // App installation tokens (real: 1 h)
  primaryLimit: 5000,              // REST requests per hour per PAT / installation / App
  minRunnerVersion: '',            // 'x.y.z': older runners are refused a session (--disableupdate) or told to update; '': none
  adminTokenTtlMs: 3600000,        // runner-registration's admin token (a JWT; real lifetime unknown)
  // Runner scale sets (scalesets.js); the real values are unknown unless said.
  scaleSetPollMs: 3000,            // an empty message long poll is held this long, then 202 (real: ~50 s)
  scaleSetSessionIdleMs: 8000,     // a message session with no poll or call for this long has lapsed (real: unknown)
  // The 404 a call on a session the service no longer knows answers (its refresh; queue calls
  // answer 401 first): 'RunnerAdminException' as GitHub was reported to answer, or
  // 'RunnerScaleSetSessionNotFoundException', a name no authority attests, kept so that a client
  // is tested against both.
  scaleSetLostSession: 'RunnerAdminException',
  // Who moves a set's job from available to assigned (README, "Assignment"): 'service', as
  // github.com does (the service assigns, up to the X-ScaleSetMaxCapacity the listener polls with;
  // no JobAvailable), or 'acquire', as GitHub Enterprise Server does (JobAvailable, then the
  // listener's acquirejobs).
  scaleSetAssignment: 'service',
  queueTokenTtlMs: 3000000,        // a session's message-queue token (real: ~50 min reported)
  scaleSetAssignTimeoutMs: 20000,  // a job the set acquired that no runner takes: canceled and requeued
  scaleSetRequeueDelayMs: 1000,    // requeue n is offered again n times this later
  scaleSetMaxRequeues: 3,          // then the job is canceled for good
  // The RSA key (PKCS#8 or PKCS#1 PEM) every JIT configuration carries; '': a new 2048-bit key per
  // configuration, as GitHub makes. GitHub makes them on its own servers: a benchmark on a small
  // machine presets one so the stand-in's key generation does not take the CPU it measures.
  jitKeyPem: '',
};
const VERSION_RE = /^\d+\.\d+\.\d+$/;
const LOST_SESSION_TYPES = ['RunnerAdminException', 'RunnerScaleSetSessionNotFoundException'];
const ASSIGNMENTS = ['service', 'acquire'];

const SYSTEM_LABELS = ['self-hosted', 'Linux', 'X64'];
const lc = (s) => String(s).toLowerCase();
const ENTERPRISE = 'enterprise:';
const enterpriseSlug = (owner) => (lc(owner).startsWith(ENTERPRISE) ? String(owner).slice(ENTERPRISE.length) : null);
const DEFAULT_GROUP = { id: 1, name: 'Default', isDefault: true };

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
    this.enterprises = new Map(); // lc(slug) -> { slug, orgs: Set(lc) }
    this.repoIds = new Map();     // scopeKey(owner, repo) -> repository id
    this.reposById = new Map();   // id -> { owner, repo } (the current name)
    this.repoRedirects = new Map();  // scopeKey of a former name -> repository id
    this.ownerRedirects = new Map(); // lc(former owner) -> current owner
    this.nextRepoId = 100001;
    this.groups = new Map();      // scopeKey of an organization or enterprise -> [{ id, name, isDefault }]
    this.nextGroupId = 2;         // 1 is every owner's Default group
    this.onRunnerDeleted = () => {};
  }

  // `timeFactor` f sets the timings a real runner meets, scaled together so a fast tier keeps their
  // ratios: long polls (the runner's and a scale set's) 50 s·f, job lock 10 min·f, session conflict
  // 4 min·f, a scale set's session lapse 4 min·f (keys given with it win). GitHub's lapse of a scale
  // set's session is unknown: taken to be as long as the runner (actions/runner) retries its own
  // session's conflict, 4 min, the one figure GitHub's code gives for how long a dead listener's
  // session may linger.
  setSettings(patch) {
    if (patch && 'timeFactor' in patch) {
      const { timeFactor: f, ...rest } = patch;
      if (typeof f !== 'number' || !Number.isFinite(f) || f <= 0) throw new Error('timeFactor must be a number > 0');
      const ms = (real) => Math.max(1, Math.round(real * f));
      patch = {
        pollMs: ms(50000), lockExpiryMs: ms(600000), sessionConflictMs: ms(240000), scaleSetPollMs: ms(50000),
        scaleSetSessionIdleMs: ms(240000), ...rest,
      };
    }
    for (const [k, v] of Object.entries(patch || {})) {
      if (!(k in DEFAULT_SETTINGS)) throw new Error(`unknown setting ${JSON.stringify(k)}`);
      if (k === 'minRunnerVersion') {
        if (typeof v !== 'string' || (v !== '' && !VERSION_RE.test(v))) throw new Error(`${k} must be "x.y.z" or ""`);
        this.settings[k] = v;
        continue;
      }
      if (k === 'jitKeyPem') {
        if (typeof v !== 'string') throw new Error(`${k} must be a PEM string or ""`);
        if (v !== '') {
          let key;
          try { key = crypto.createPrivateKey(v); } catch (e) { throw new Error(`${k} is not a private key: ${e.message}`); }
          if (key.asymmetricKeyType !== 'rsa') throw new Error(`${k} must be an RSA key`);
        }
        this.settings[k] = v;
        continue;
      }
      if (k === 'scaleSetLostSession' || k === 'scaleSetAssignment') {
        const allowed = k === 'scaleSetLostSession' ? LOST_SESSION_TYPES : ASSIGNMENTS;
        if (!allowed.includes(v)) throw new Error(`${k} must be one of ${allowed.join(', ')}`);
        this.settings[k] = v;
        continue;
      }
      if (k === 'shouldAcknowledge' || k === 'listener') {
        if (k === 'shouldAcknowledge' && typeof v !== 'boolean') throw new Error(`${k} must be true or false`);
        if (k === 'listener' && v !== 'broker' && v !== 'legacy') throw new Error(`${k} must be "broker" or "legacy"`);
        this.settings[k] = v;
        continue;
      }
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`${k} must be a number >= 0`);
      this.settings[k] = v;
    }
    return { ...this.settings };
  }

  addOwner(owner) {
    const slug = enterpriseSlug(owner);
    if (slug !== null) return this.addEnterprise(slug);
    if (typeof owner !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9-]*$/.test(owner)) throw new Error(`bad owner ${JSON.stringify(owner)}`);
    if (!this.owners.has(lc(owner))) this.owners.set(lc(owner), owner);
  }
  hasOwner(owner) {
    const slug = enterpriseSlug(owner);
    return slug !== null ? this.enterprises.has(lc(slug)) : this.owners.has(lc(owner));
  }

  // An enterprise, and organizations that belong to it (its runners serve their jobs).
  addEnterprise(slug, orgs = []) {
    if (typeof slug !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9-]*$/.test(slug)) throw new Error(`bad enterprise ${JSON.stringify(slug)}`);
    if (!this.enterprises.has(lc(slug))) this.enterprises.set(lc(slug), { slug, orgs: new Set() });
    for (const o of orgs) {
      this.addOwner(o);
      this.enterprises.get(lc(slug)).orgs.add(lc(o));
    }
  }

  // Whether a runner of `r`'s scope may run a job of `owner` (and `repo`).
  covers(r, owner, repo) {
    const slug = enterpriseSlug(r.owner);
    if (slug !== null) return !!this.enterprises.get(lc(slug))?.orgs.has(lc(owner));
    if (lc(owner) !== lc(r.owner)) return false;
    return !r.repo || (!!repo && lc(repo) === lc(r.repo));
  }

  // ---- repositories: ids, renames and transfers (the old name's REST paths then redirect)
  repoId(owner, repo) {
    const key = Model.scopeKey(owner, repo);
    if (!this.repoIds.has(key)) {
      const id = this.nextRepoId++;
      this.repoIds.set(key, id);
      this.reposById.set(id, { owner, repo });
    }
    return this.repoIds.get(key);
  }

  // The id a former name redirects to, or null (the name is current, or was never moved).
  movedRepo(owner, repo) {
    const key = Model.scopeKey(owner, repo);
    if (this.repoIds.has(key) && !this.repoRedirects.has(key)) return null;
    if (this.repoRedirects.has(key)) return this.repoRedirects.get(key);
    const to = this.ownerRedirects.get(lc(owner));
    return to && !this.hasOwner(owner) ? this.repoId(to, repo) : null;
  }

  // Renames or transfers owner/repo to toOwner/toRepo: the runners move with it, and the old
  // name redirects (GitHub: 301 for GET, 307 otherwise, to /repositories/<id>/…).
  moveRepo(from, to) {
    for (const s of [from, to]) {
      if (!s || typeof s.owner !== 'string' || typeof s.repo !== 'string' || !/^[A-Za-z0-9._-]+$/.test(s.repo)) throw new Error('from and to must be "owner/repo"');
    }
    this.addOwner(to.owner);
    const id = this.repoId(from.owner, from.repo);
    const fromKey = Model.scopeKey(from.owner, from.repo);
    const toKey = Model.scopeKey(to.owner, to.repo);
    if (fromKey === toKey) return id;
    if (this.repoIds.has(toKey) && this.repoIds.get(toKey) !== id) throw Object.assign(new Error(`${to.owner}/${to.repo} exists`), { status: 409 });
    this.repoIds.delete(fromKey);
    this.repoIds.set(toKey, id);
    this.repoRedirects.delete(toKey);
    this.repoRedirects.set(fromKey, id);
    this.reposById.set(id, { owner: to.owner, repo: to.repo });
    for (const r of this.runners.values()) {
      if (r.scopeKey === fromKey) Object.assign(r, { owner: to.owner, repo: to.repo, scopeKey: toKey });
    }
    return id;
  }

  // Renames an organization: its repositories' old paths redirect; its own (/orgs/<old>/…) are
  // gone (GitHub does not redirect an organization's former name).
  renameOwner(from, to) {
    if (!this.hasOwner(from)) throw Object.assign(new Error(`no owner ${from}`), { status: 404 });
    this.addOwner(to);
    for (const [key, id] of [...this.repoIds.entries()]) {
      const repo = this.reposById.get(id);
      if (lc(repo.owner) === lc(from)) this.moveRepo({ owner: repo.owner, repo: repo.repo }, { owner: to, repo: repo.repo });
      void key;
    }
    for (const r of this.runners.values()) {
      if (!r.repo && lc(r.owner) === lc(from)) Object.assign(r, { owner: to, scopeKey: Model.scopeKey(to, null) });
    }
    for (const e of this.enterprises.values()) if (e.orgs.delete(lc(from))) e.orgs.add(lc(to));
    this.owners.delete(lc(from));
    this.ownerRedirects.set(lc(from), to);
  }

  // ---- runner groups: organizations and enterprises have them; a repository only the Default
  groupsOf(owner, repo) {
    if (repo) return [DEFAULT_GROUP];
    return [DEFAULT_GROUP, ...(this.groups.get(Model.scopeKey(owner, null)) || [])];
  }
  addGroup(owner, name) {
    if (!this.hasOwner(owner)) throw Object.assign(new Error(`no owner ${owner}`), { status: 404 });
    if (typeof name !== 'string' || !name.trim()) throw new Error('a group needs a name');
    if (this.groupsOf(owner, null).some((g) => lc(g.name) === lc(name))) throw Object.assign(new Error(`group ${name} exists`), { status: 409 });
    const key = Model.scopeKey(owner, null);
    const g = { id: this.nextGroupId++, name: name.trim(), isDefault: false };
    this.groups.set(key, [...(this.groups.get(key) || []), g]);
    return g;
  }

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
  createRunner({ owner, repo, name, labels, ephemeral = false, disableUpdate = false, publicKey, workFolder, group = DEFAULT_GROUP }) {
    const r = {
      id: this.nextRunnerId++, name, owner, repo: repo || null, scopeKey: Model.scopeKey(owner, repo),
      runnerGroupId: group.id, runnerGroupName: group.name,
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

  // The status a removal of `r` answers with instead (control's /runners/<id>/removal-errors), or
  // 0; `via` 'rest' or 'runner'. Consumes one of the configured errors.
  takeRemovalError(r, via) {
    const e = r.removalErrors;
    if (!e || (e.via !== 'both' && e.via !== via)) return 0;
    if (--e.count <= 0) r.removalErrors = null;
    return e.status;
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

module.exports = { Model, DEFAULT_SETTINGS, SYSTEM_LABELS, DEFAULT_GROUP, lc, dedupe, enterpriseSlug };
