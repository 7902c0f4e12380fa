'use strict';
// The runner's own protocol. The real one (actions/runner <-> pipelines/broker services) is
// undocumented, so this is a private dialect with the real shape and behaviour:
//   1. POST /api/v3/actions/runner-registration, `Authorization: RemoteAuth <registration or
//      remove token>`, {url, runner_event} -> {url: <ServerUrl>, token_schema, token} (as real);
//   2. under ServerUrl (<origin>/_services/pipelines), with that admin token: agents list /
//      add / replace / delete;
//   3. the runner's OAuth client-credentials exchange with an RS256 client assertion signed by
//      its own key (as real) -> access token;
//   4. with the access token: sessions, long-poll messages, and per job request acknowledge,
//      acquire, renew, complete.
const { decode, verifyRs256, serviceToken } = require('./jwt');
const { HttpError, serverError } = require('./rest');
const { Model, DEFAULT_GROUP, lc } = require('./model');
const { PIPELINES, serverUrlOf, authorizationUrlOf, publicKeyFrom } = require('./runnerfiles');

const VERSION = '2.336.0';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The Listener tells "registration deleted" (exit, clean up) from other 404s by typeKey.
function notFoundRunner() {
  const e = new HttpError(404, 'Runner not found: the registration has been deleted');
  e.body.typeKey = 'RunnerNotFoundException';
  return e;
}

// -1, 0, 1 comparing dotted numeric versions ("2.336.0").
function compareVersions(a, b) {
  const x = String(a).split('.').map(Number);
  const y = String(b).split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] || 0) - (y[i] || 0);
    if (d) return Math.sign(d);
  }
  return 0;
}

// The next minor version: what a refresh asks for when no version is named.
const nextVersion = (v) => v.split('.').map((n, i) => (i === 1 ? Number(n) + 1 : i === 2 ? 0 : n)).join('.');

function routes({ model, broker, downloads }) {
  const st = () => model.settings;
  // Renewals keep both the job lock and the session alive, so they come often enough for both.
  const renewMs = () => Math.max(100, Math.min(60000, Math.floor(Math.min(st().lockExpiryMs, st().sessionIdleMs) / 3)));

  function admin(ctx, event) {
    const m = /^Bearer\s+(\S+)$/i.exec(ctx.headers.authorization || '');
    const t = m && model.adminTokens.get(m[1]);
    if (!t || t.expiresAt <= Date.now()) throw new HttpError(401, 'Unauthorized');
    if (event && t.event !== event) throw new HttpError(403, `This token may not ${event}`);
    return t;
  }
  function runnerOf(ctx) {
    const m = /^Bearer\s+(\S+)$/i.exec(ctx.headers.authorization || '');
    const t = m && model.accessTokens.get(m[1]);
    if (!t || t.expiresAt <= Date.now()) throw new HttpError(401, 'Unauthorized');
    const r = model.runners.get(t.runnerId);
    if (!r) throw notFoundRunner();
    if (r.clientId !== t.clientId) throw new HttpError(401, 'Unauthorized: the runner was replaced');
    return r;
  }
  const agentView = (ctx, r) => ({
    id: r.id, name: r.name, version: VERSION, osDescription: 'Linux', enabled: true,
    status: broker.sessionLive(r) ? 'online' : 'offline', ephemeral: r.ephemeral, disableUpdate: r.disableUpdate,
    labels: r.labels.map((l) => ({ name: l.name, type: l.type === 'read-only' ? 'system' : 'user' })),
    authorization: { clientId: r.clientId, authorizationUrl: authorizationUrlOf(ctx.origin) },
  });
  const agentSpec = (b) => {
    if (typeof b.name !== 'string' || !b.name.trim()) throw new HttpError(400, 'name is required');
    if (!Array.isArray(b.labels)) throw new HttpError(400, 'labels is required');
    let publicKey;
    try { publicKey = publicKeyFrom(b.publicKey); } catch (e) { throw new HttpError(400, e.message); }
    const labels = b.labels.map((l) => ({ name: String(l.name), type: l.type === 'system' ? 'read-only' : 'custom' }));
    return { name: b.name.trim(), labels, publicKey, ephemeral: !!b.ephemeral, disableUpdate: !!b.disableUpdate };
  };
  // The runner group (agent pool) a registration joins: poolId from GET /pools, default the Default group.
  const groupOf = (t, b) => {
    if (b.poolId === undefined || b.poolId === null) return DEFAULT_GROUP;
    const g = model.groupsOf(t.owner, t.repo).find((x) => x.id === b.poolId);
    if (!g) throw new HttpError(404, `Runner group ${b.poolId} not found`);
    return g;
  };
  const P = PIPELINES;

  return [
    ['POST', '/api/v3/actions/runner-registration', (ctx) => {
      const m = /^RemoteAuth\s+(\S+)$/i.exec(ctx.headers.authorization || '');
      const t = m && model.runnerTokens.get(m[1]);
      let scope = null;
      try {
        const u = new URL(ctx.body.url);
        const segs = u.pathname.split('/').filter(Boolean);
        if (u.origin === ctx.origin && segs.length === 2 && lc(segs[0]) === 'enterprises') scope = { owner: `enterprise:${segs[1]}`, repo: null };
        else if (u.origin === ctx.origin && (segs.length === 1 || segs.length === 2)) scope = { owner: segs[0], repo: segs[1] || null };
        // A moved repository's former URL leads to it, as GitHub's web redirects do.
        const moved = scope?.repo ? model.movedRepo(scope.owner, scope.repo) : null;
        if (moved != null) scope = { ...model.reposById.get(moved) };
      } catch { /* scope stays null */ }
      const wantKind = { register: 'registration', remove: 'remove' }[ctx.body.runner_event];
      if (!t || t.expiresAt <= Date.now() || !scope || t.kind !== wantKind ||
          Model.scopeKey(t.owner, t.repo) !== Model.scopeKey(scope.owner, scope.repo)) {
        throw new HttpError(404, 'Not Found', { doc: 'https://docs.github.com/rest' });
      }
      const expiresAt = Date.now() + st().adminTokenTtlMs;
      const token = serviceToken({ sub: Model.scopeKey(t.owner, t.repo), aud: serverUrlOf(ctx.origin), scp: ctx.body.runner_event }, expiresAt);
      model.adminTokens.set(token, { event: ctx.body.runner_event, owner: t.owner, repo: t.repo, expiresAt });
      return { status: 200, body: { url: serverUrlOf(ctx.origin), token_schema: 'OAuthAccessToken', token } };
    }],
    // The scope's runner groups, as the runner looks up --runnergroup (real: agent pools).
    ['GET', `${P}/pools`, (ctx) => {
      const t = admin(ctx);
      const value = model.groupsOf(t.owner, t.repo).map((g) => ({ id: g.id, name: g.name, isHosted: false, isInternal: g.isDefault }));
      return { status: 200, body: { count: value.length, value } };
    }],
    ['GET', `${P}/agents`, (ctx) => {
      const t = admin(ctx);
      const name = ctx.query.get('name');
      const key = Model.scopeKey(t.owner, t.repo);
      const value = [...model.runners.values()].filter((r) => r.scopeKey === key && (!name || lc(r.name) === lc(name))).map((r) => agentView(ctx, r));
      return { status: 200, body: { count: value.length, value } };
    }],
    ['POST', `${P}/agents`, (ctx) => {
      const t = admin(ctx, 'register');
      const spec = agentSpec(ctx.body);
      if (model.findByName(t.owner, t.repo, spec.name)) throw new HttpError(409, `A runner exists with the same name ${spec.name}.`);
      const r = model.createRunner({ ...spec, owner: t.owner, repo: t.repo, workFolder: ctx.body.workFolder, group: groupOf(t, ctx.body) });
      return { status: 200, body: agentView(ctx, r) };
    }],
    ['PUT', `${P}/agents/{agent_id}`, (ctx) => {
      const t = admin(ctx, 'register');
      const r = model.runners.get(Number(ctx.params.agent_id));
      if (!r || r.scopeKey !== Model.scopeKey(t.owner, t.repo)) throw new HttpError(404, 'Not Found');
      const spec = agentSpec(ctx.body);
      const group = groupOf(t, ctx.body);
      Object.assign(r, { labels: spec.labels, ephemeral: spec.ephemeral, disableUpdate: spec.disableUpdate, ephemeralUsed: false, runnerGroupId: group.id, runnerGroupName: group.name });
      model.rekey(r, spec.publicKey);
      r.session = null; // the replaced runner's Listener loses its session
      broker.pump();
      return { status: 200, body: agentView(ctx, r) };
    }],
    ['DELETE', `${P}/agents/{agent_id}`, (ctx) => {
      const t = admin(ctx, 'remove');
      const r = model.runners.get(Number(ctx.params.agent_id));
      if (!r || r.scopeKey !== Model.scopeKey(t.owner, t.repo)) throw new HttpError(404, 'Not Found');
      const failWith = model.takeRemovalError(r, 'runner');
      if (failWith) throw serverError(failWith);
      if (r.busy) throw new HttpError(422, `Bad request - Runner "${r.name}" is still running a job"`);
      model.deleteRunner(r);
      return { status: 204 };
    }],
    ['POST', `${P}/oauth2/token`, (ctx) => {
      const f = new URLSearchParams(ctx.rawBody.toString('utf8'));
      const bad = (d) => ({ status: 400, body: { error: 'invalid_client', error_description: d } });
      if (f.get('grant_type') !== 'client_credentials' ||
          f.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') {
        return { status: 400, body: { error: 'invalid_request', error_description: 'client_credentials with a jwt-bearer client assertion required' } };
      }
      const jwt = decode(f.get('client_assertion') || '');
      if (!jwt) return bad('The client assertion could not be decoded.');
      const clientId = jwt.payload.sub;
      const r = model.runners.get(model.byClientId.get(clientId));
      if (!r) return bad(`Registration ${clientId} was not found or is not active.`);
      if (!verifyRs256(jwt, r.publicKey)) return bad('The client assertion signature is invalid.');
      const now = Date.now() / 1000;
      if (jwt.payload.aud !== authorizationUrlOf(ctx.origin)) return bad('The client assertion audience is wrong.');
      if (typeof jwt.payload.exp !== 'number' || jwt.payload.exp <= now) return bad(`The bearer token expired on ${jwt.payload.exp}. Current server time is ${new Date().toISOString()}.`);
      if (typeof jwt.payload.nbf === 'number' && jwt.payload.nbf > now + 300) return bad(`The bearer token is not valid until ${jwt.payload.nbf}. Current server time is ${new Date().toISOString()}.`);
      return { status: 200, body: { access_token: model.issueAccessToken(r), token_type: 'bearer', expires_in: 3600 } };
    }],
    ['POST', `${P}/sessions`, (ctx) => {
      const r = runnerOf(ctx);
      // A runner older than the service's minimum: one configured with --disableupdate is refused
      // its session; any other gets a session whose first message tells it to update itself.
      const version = String(ctx.body.agent?.version || '');
      const min = st().minRunnerVersion;
      r.needsUpdate = !!min && compareVersions(version, min) < 0;
      if (r.needsUpdate && r.disableUpdate) {
        return { status: 400, body: { typeKey: 'RunnerVersionDeprecatedException', message: `Runner version v${version} is deprecated and cannot receive messages.` } };
      }
      const s = broker.createSession(r);
      if (!s) {
        const ms = st().sessionConflictMs;
        return { status: 409, body: { typeKey: 'TaskAgentSessionConflictException', message: 'A session for this runner already exists.', retryAfterMs: Math.max(100, Math.min(1000, Math.floor(ms / 5))), giveUpAfterMs: ms } };
      }
      return { status: 200, body: { sessionId: s.id, agent: { id: r.id, name: r.name }, ownerName: ctx.body.ownerName || null, pollMs: st().pollMs, renewMs: renewMs(), clientTimeoutMs: st().pollMs + 30000, listener: st().listener } };
    }],
    ['DELETE', `${P}/sessions/{session}`, (ctx) => {
      const r = runnerOf(ctx);
      return broker.deleteSession(r, ctx.params.session) ? { status: 204 } : { status: 404, body: { message: 'session not found' } };
    }],
    // The legacy flow's package lookup (SelfUpdater.cs 152: GetPackageAsync("agent", platform, version)).
    ['GET', `${P}/packages/agent/{platform}/{version}`, async (ctx) => {
      runnerOf(ctx);
      let pkg;
      try { pkg = await downloads.package(ctx.origin, ctx.params.version); } catch { throw new HttpError(404, `Package ${ctx.params.version} not found`); }
      return { status: 200, body: { type: 'agent', platform: ctx.params.platform, version: pkg.version, filename: pkg.filename, downloadUrl: pkg.download_url, hashValue: pkg.sha256_checksum } };
    }],
    ['GET', `${P}/messages`, async (ctx) => {
      const r = runnerOf(ctx);
      if (!r.session || r.session.id !== ctx.query.get('sessionId')) {
        return { status: 404, body: { typeKey: 'TaskAgentSessionExpiredException', message: 'The session has expired or was deleted.' } };
      }
      if (r.needsUpdate || r.refreshTo) {
        // The update request, as each flow carries it: the broker's RunnerRefresh names the
        // package (actions/runner RunnerRefreshMessage.cs: target_version, download_url,
        // sha256_checksum, os); the legacy AgentRefresh only the version (AgentRefreshMessage.cs),
        // the runner then asks for the package (SelfUpdater.cs 152).
        const target = r.refreshTo || st().minRunnerVersion;
        r.needsUpdate = false;
        r.refreshTo = null;
        if (st().listener === 'legacy') {
          return { status: 200, body: { messageType: 'AgentRefresh', body: { agentId: r.id, targetVersion: target, timeout: '01:00:00' } } };
        }
        const pkg = await downloads.package(ctx.origin, target);
        return { status: 200, body: { messageType: 'RunnerRefresh', body: { target_version: target, download_url: pkg.download_url, sha256_checksum: pkg.sha256_checksum, os: 'linux' } } };
      }
      return new Promise((resolve) => {
        const poll = broker.openPoll(r, (status, body) => resolve({ status, body }));
        ctx.onClose(() => poll.finish(null)); // the client went away: nothing to answer
      });
    }],
    ['POST', `${P}/jobrequests/{request_id}/{action}`, async (ctx) => {
      const r = runnerOf(ctx);
      broker.touch(r);
      const id = ctx.params.request_id;
      const conflict = { status: 409, body: { typeKey: 'TaskAgentJobTokenExpiredException', message: `Job request ${id} is not locked by runner ${r.name}.` } };
      switch (ctx.params.action) {
        case 'acknowledge': {
          const ok = broker.acknowledge(r, id);
          if (st().ackLatencyMs) await sleep(st().ackLatencyMs);
          return ok ? { status: 200, body: {} } : conflict;
        }
        case 'acquire': {
          const refused = broker.refuseAcquire(r, id);
          if (refused) {
            const typeKey = { 404: 'TaskOrchestrationJobNotFoundException', 409: 'TaskOrchestrationJobAlreadyAcquiredException', 422: 'TaskOrchestrationJobUnprocessableException' }[refused];
            return { status: refused, body: { typeKey, message: `Job request ${id} cannot be acquired (${refused}).` } };
          }
          const job = broker.acquire(r, id);
          if (!job) return conflict;
          const hook = job.fault === 'workerSendTimeout' ? { fault: job.fault, channelTimeoutMs: st().channelTimeoutMs } : {};
          return { status: 200, body: { requestId: job.id, jobId: job.jobGuid, planId: job.planId, jobName: job.name, owner: job.owner, repo: job.repo, durationMs: job.durationMs, run: job.run, lockedUntil: job.lockedUntil, renewMs: renewMs(), ...hook } };
        }
        case 'renew': {
          const job = broker.renew(r, id);
          if (job?.fault === 'renewFails') return { status: 404, body: { typeKey: 'TaskAgentJobNotFoundException', message: `Job request ${id} not found.` } };
          if (job?.fault === 'cancelBeforeRenew') {
            // The renew hangs until the job is cancelled (bounded: one lock period).
            for (const end = Date.now() + st().lockExpiryMs; job.state === 'running' && Date.now() < end;) await sleep(50);
            return conflict;
          }
          return job ? { status: 200, body: { lockedUntil: job.lockedUntil } } : conflict;
        }
        case 'complete': {
          const job = broker.complete(r, id, ctx.body.result);
          return job ? { status: 200, body: { result: job.result } } : conflict;
        }
        default: throw new HttpError(404, 'Not Found');
      }
    }],
  ];
}

module.exports = { routes, VERSION, notFoundRunner, compareVersions, nextVersion };
