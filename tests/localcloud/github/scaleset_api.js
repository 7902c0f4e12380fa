'use strict';
// The runner scale-set API (GitHub's "Actions service" as actions-runner-controller and the
// github.com/actions/scaleset client call it) over HTTP. Discovery is the runner's own:
// `POST /api/v3/actions/runner-registration` answers `url` = <origin>/_services/pipelines (the
// Actions-service base) and an admin token (a JWT) that authorizes the calls below it. A
// session's message queue is at <origin>/_services/broker/scalesets/message (a host of its own on
// GitHub) and takes the session's queue token. Errors are the service's `{typeName, message}`.
// The state and job flow are scalesets.js; the control routes scaleset_control.js.
const crypto = require('node:crypto');
const { router, send, parseJson } = require('./http');
const { DEFAULT_GROUP, lc } = require('./model');
const { PIPELINES, serverUrlOf, encodeJitConfig } = require('./runnerfiles');
const { ScaleSets, rfc3339 } = require('./scalesets');

const QUEUE = '/_services/broker/scalesets/message';
const SETS = `${PIPELINES}/_apis/runtime/runnerscalesets`;
const AGENTS = `${PIPELINES}/_apis/distributedtask/pools/0/agents`;
const RUNTIME = 'GitHub.Actions.Runtime.WebApi';
const TASK = 'GitHub.DistributedTask.WebApi';

class AsError extends Error {
  constructor(status, type, message, ns = RUNTIME) {
    super(message);
    this.status = status;
    this.body = { typeName: `${ns}.${type}, ${ns}`, message };
  }
}
const bad = (message) => new AsError(400, 'ArgumentException', message, 'System');
const setNotFound = (id) => new AsError(404, 'RunnerScaleSetNotFoundException', `No runner scale set found with identifier ${id}.`);
// A call on a session the service no longer knows (deleted, evicted, replaced): 404, under the name
// `scaleSetLostSession` chooses. As GitHub was reported to answer (actions/scaleset pull request
// 123): typeName `RunnerAdminException`, unqualified, with the message below.
function sessionGone(type, id) {
  if (type !== 'RunnerAdminException') {
    return new AsError(404, type, `Cannot refresh a message session ID that doesn't exist: ${id}.`);
  }
  const e = new AsError(404, type, "runner referenced a session ID that doesn't exist in redis");
  e.body.typeName = type;
  return e;
}
const unauthorized = () => new AsError(401, 'VssUnauthorizedException', 'The access token is not valid or has expired.', 'GitHub.Services.Common');
const STATUS_TEXT = { 429: 'Too Many Requests', 500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable' };
const isBool = (v) => typeof v === 'boolean';

function createScaleSetService({ model, broker, holds = null, log = () => {} }) {
  const sets = new ScaleSets(model, broker, (msg) => log('debug', msg));
  const faults = new Map(); // operation -> [{ status, retryAfterSeconds }], taken one per call
  const st = () => model.settings;

  // ---- credentials
  const bearer = (ctx) => /^Bearer\s+(\S+)$/i.exec(ctx.headers.authorization || '')?.[1];
  function admin(ctx) {
    const t = model.adminTokens.get(bearer(ctx));
    if (!t || t.expiresAt <= Date.now()) throw unauthorized();
    if (t.event !== 'register') throw new AsError(403, 'AccessDeniedException', 'This token may not manage runner scale sets.', 'GitHub.Services.Common');
    return { owner: t.owner, repo: t.repo };
  }
  function queueSession(ctx) {
    const t = sets.sessions.byToken(bearer(ctx));
    if (!t) throw unauthorized();
    const set = sets.sets.get(t.setId);
    if (!set) throw setNotFound(t.setId);
    if (!set.session || set.session.id !== t.sessionId || set.session.token !== bearer(ctx)) throw unauthorized();
    return { set, session: set.session };
  }
  const findSet = (ctx, scope) => {
    const set = sets.find(scope, ctx.params.set_id);
    if (!set) throw setNotFound(ctx.params.set_id);
    return set;
  };

  // ---- views, in the service's shapes
  const setView = (set) => ({
    id: set.id, name: set.name, runnerGroupId: set.group.id, runnerGroupName: set.group.name,
    labels: set.labels.map((l) => ({ ...l })), RunnerSetting: { ...set.runnerSetting }, createdOn: rfc3339(set.createdOn),
    runnerJitConfigUrl: set.runnerJitConfigUrl, statistics: sets.statistics(set),
  });
  const sessionView = (set, s) => ({
    sessionId: s.id, ownerName: s.ownerName, runnerScaleSet: setView(set), messageQueueUrl: s.queueUrl,
    messageQueueAccessToken: s.token, statistics: sets.statistics(set),
  });
  const runnerRef = (r) => ({ id: r.id, name: r.name, runnerScaleSetId: r.scaleSetId || 0 });
  const list = (value) => ({ status: 200, body: { count: value.length, value } });

  // ---- request bodies
  function groupOf(scope, id) {
    if (id === undefined || id === null || id === 0) return DEFAULT_GROUP;
    if (!Number.isInteger(id)) throw bad('runnerGroupId must be an integer.');
    const g = model.groupsOf(scope.owner, scope.repo).find((x) => x.id === id);
    if (!g) throw new AsError(404, 'RunnerGroupNotFoundException', `No runner group found with identifier ${id}.`);
    return g;
  }
  function labelsOf(v) {
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || v.some((l) => !l || typeof l.name !== 'string' || !l.name.trim() || (l.type !== undefined && typeof l.type !== 'string'))) {
      throw bad('labels must be an array of {type, name} with a name.');
    }
    const seen = new Set();
    return v.map((l) => ({ type: l.type || 'System', name: l.name.trim() })).filter((l) => !seen.has(lc(l.name)) && seen.add(lc(l.name)));
  }
  function settingOf(v) {
    if (v === undefined || v === null) return {};
    if (typeof v !== 'object' || Array.isArray(v)) throw bad('RunnerSetting must be an object.');
    const out = {};
    for (const k of ['ephemeral', 'isElastic', 'disableUpdate']) {
      if (v[k] === undefined) continue;
      if (!isBool(v[k])) throw bad(`RunnerSetting.${k} must be a boolean.`);
      out[k] = v[k];
    }
    return out;
  }
  const nameOf = (v) => {
    if (typeof v !== 'string' || !v.trim()) throw bad('name is required.');
    return v.trim();
  };
  const exists = (name) => new AsError(409, 'RunnerScaleSetExistsException', `A runner scale set named ${name} already exists in this runner group.`);

  // [method, path template, operation (the fault knobs' name), handler(ctx)]
  const table = [
    ['GET', SETS, 'getScaleSet', (ctx) => {
      const scope = admin(ctx);
      const gid = ctx.query.get('runnerGroupId');
      if (gid !== null && !/^\d+$/.test(gid)) throw bad('runnerGroupId must be an integer.');
      return list(sets.byName(scope, Number(gid) || 0, ctx.query.get('name')).map(setView));
    }],
    ['POST', SETS, 'createScaleSet', (ctx) => {
      const scope = admin(ctx);
      const b = ctx.body;
      const name = nameOf(b.name);
      const group = groupOf(scope, b.runnerGroupId);
      if (sets.nameTaken(scope, group.id, name)) throw exists(name);
      const set = sets.create(scope, { name, group, labels: labelsOf(b.labels), runnerSetting: settingOf(b.RunnerSetting), serviceUrl: ctx.serviceUrl });
      return { status: 200, body: setView(set) };
    }],
    ['GET', `${SETS}/{set_id}`, 'getScaleSetById', (ctx) => ({ status: 200, body: setView(findSet(ctx, admin(ctx))) })],
    // A partial update: what the body names (non-empty) changes, the rest stays. The client always
    // sends an empty RunnerSetting and a zero createdOn: they change nothing.
    ['PATCH', `${SETS}/{set_id}`, 'updateScaleSet', (ctx) => {
      const scope = admin(ctx);
      const set = findSet(ctx, scope);
      const b = ctx.body;
      const patch = {};
      if (b.runnerGroupId) patch.group = groupOf(scope, b.runnerGroupId);
      if (b.name !== undefined && b.name !== '') patch.name = nameOf(b.name);
      const labels = labelsOf(b.labels);
      if (labels.length) patch.labels = labels;
      const name = patch.name || set.name;
      const group = patch.group || set.group;
      if ((patch.name || patch.group) && sets.nameTaken(scope, group.id, name, set)) throw exists(name);
      patch.runnerSetting = { ...set.runnerSetting, ...settingOf(b.RunnerSetting) };
      return { status: 200, body: setView(sets.update(set, patch)) };
    }],
    ['DELETE', `${SETS}/{set_id}`, 'deleteScaleSet', (ctx) => {
      const set = findSet(ctx, admin(ctx));
      if (!sets.remove(set)) throw new AsError(400, 'JobStillRunningException', `A runner of scale set ${set.name} is running a job.`, TASK);
      return { status: 204 };
    }],
    ['POST', `${SETS}/{set_id}/sessions`, 'createSession', (ctx) => {
      const set = findSet(ctx, admin(ctx));
      const owner = typeof ctx.body.ownerName === 'string' ? ctx.body.ownerName : '';
      const s = sets.sessions.create(set, owner, `${ctx.origin}${QUEUE}`);
      if (!s) throw new AsError(409, 'RunnerScaleSetSessionConflictException', `The runner scale set ${set.name} already has an active session for owner ${set.session.ownerName}.`);
      log('debug', `github: scale set ${set.id}: session ${s.id} for ${owner}`);
      return { status: 200, body: sessionView(set, s) };
    }],
    ['PATCH', `${SETS}/{set_id}/sessions/{session}`, 'refreshSession', (ctx) => {
      const set = findSet(ctx, admin(ctx));
      const s = set.session;
      if (!s || s.id !== ctx.params.session || s.phantomUntil) throw sessionGone(st().scaleSetLostSession, ctx.params.session);
      sets.sessions.issueToken(set, s);
      return { status: 200, body: sessionView(set, s) };
    }],
    ['DELETE', `${SETS}/{set_id}/sessions/{session}`, 'deleteSession', (ctx) => {
      const set = findSet(ctx, admin(ctx));
      if (!set.session || set.session.id !== ctx.params.session) {
        throw new AsError(400, 'RunnerScaleSetSessionExpiredException', `The message session ${ctx.params.session} has expired or was deleted.`);
      }
      sets.sessions.end(set, 202);
      return { status: 204 };
    }],
    ['POST', `${SETS}/{set_id}/acquirejobs`, 'acquireJobs', (ctx) => {
      const { set, session } = queueSession(ctx);
      if (String(set.id) !== ctx.params.set_id) throw unauthorized();
      if (!Array.isArray(ctx.body) || ctx.body.some((x) => !Number.isSafeInteger(x))) throw bad('The body must be an array of runner request ids.');
      sets.sessions.touch(session);
      return list(sets.acquire(set, ctx.body));
    }],
    // The legacy listener's look at what it may acquire (no content when nothing).
    ['GET', `${SETS}/{set_id}/acquirablejobs`, 'acquirableJobs', (ctx) => {
      const set = findSet(ctx, admin(ctx));
      const value = sets.available(set).map((j) => {
        const m = sets.jobMessage(set, 'JobAvailable', j);
        return { acquireJobUrl: m.acquireJobUrl, messageType: m.messageType, runnerRequestId: m.runnerRequestId, repositoryName: m.repositoryName, ownerName: m.ownerName, jobWorkflowRef: m.jobWorkflowRef, eventName: m.eventName, requestLabels: m.requestLabels };
      });
      return value.length ? list(value) : { status: 204 };
    }],
    ['POST', `${SETS}/{set_id}/generatejitconfig`, 'generateJitConfig', async (ctx) => {
      const set = findSet(ctx, admin(ctx));
      const name = nameOf(ctx.body.name);
      if (ctx.body.workFolder !== undefined && typeof ctx.body.workFolder !== 'string') throw bad('workFolder must be a string.');
      const taken = () => { if (model.findByName(set.owner, set.repo, name)) throw new AsError(409, 'AgentExistsException', `A runner exists with the same name ${name}.`, TASK); };
      taken();
      const preset = model.settings.jitKeyPem;
      const { publicKey, privateKey } = preset
        ? { privateKey: crypto.createPrivateKey(preset), publicKey: crypto.createPublicKey(preset) }
        : await new Promise((res, rej) => crypto.generateKeyPair('rsa', { modulusLength: 2048 }, (e, pub, priv) => (e ? rej(e) : res({ publicKey: pub, privateKey: priv }))));
      taken();
      if (!sets.sets.has(set.id)) throw setNotFound(set.id);
      const r = model.createRunner({
        owner: set.owner, repo: set.repo, name, ephemeral: true, disableUpdate: !!set.runnerSetting.disableUpdate, publicKey,
        workFolder: ctx.body.workFolder || '_work', group: set.group, labels: set.labels.map((l) => ({ name: l.name, type: 'custom' })),
      });
      r.scaleSetId = set.id;
      return { status: 200, body: { runner: runnerRef(r), encodedJITConfig: encodeJitConfig({ runner: r, origin: ctx.origin, privateKey }) } };
    }],
    ...['/', ''].map((slash) => ['GET', `${PIPELINES}/_apis/runtime/runnergroups${slash}`, 'getRunnerGroup', (ctx) => {
      const scope = admin(ctx);
      const name = ctx.query.get('groupName');
      const groups = model.groupsOf(scope.owner, scope.repo).filter((g) => name === null || lc(g.name) === lc(name));
      const size = (g) => [...model.runners.values()].filter((r) => r.scopeKey === sets.scopeKeyOf(scope) && r.runnerGroupId === g.id).length;
      return list(groups.map((g) => ({ id: g.id, name: g.name, size: size(g), isDefaultGroup: !!g.isDefault })));
    }]),
    ['GET', AGENTS, 'getRunnerByName', (ctx) => {
      const scope = admin(ctx);
      const name = ctx.query.get('agentName');
      return list([...model.runners.values()].filter((r) => r.scopeKey === sets.scopeKeyOf(scope) && (name === null || lc(r.name) === lc(name))).map(runnerRef));
    }],
    ['GET', `${AGENTS}/{agent_id}`, 'getRunner', (ctx) => {
      const scope = admin(ctx);
      const r = model.runners.get(Number(ctx.params.agent_id));
      if (!r || r.scopeKey !== sets.scopeKeyOf(scope)) throw new AsError(404, 'AgentNotFoundException', `No runner found with identifier ${ctx.params.agent_id}.`, TASK);
      return { status: 200, body: runnerRef(r) };
    }],
    // Removal is idempotent (a runner already gone is fine), refused while the runner works.
    ['DELETE', `${AGENTS}/{agent_id}`, 'removeRunner', (ctx) => {
      const scope = admin(ctx);
      const r = model.runners.get(Number(ctx.params.agent_id));
      if (!r || r.scopeKey !== sets.scopeKeyOf(scope)) return { status: 204 };
      if (r.busy) throw new AsError(400, 'JobStillRunningException', `Runner ${r.name} is still running a job.`, TASK);
      model.deleteRunner(r);
      return { status: 204 };
    }],
    ['GET', QUEUE, 'getMessage', (ctx) => poll(ctx)],
    ['DELETE', `${QUEUE}/{message_id}`, 'deleteMessage', (ctx) => {
      const { set, session } = queueSession(ctx);
      set.queue.ack(Number(ctx.params.message_id));
      sets.sessions.touch(session);
      return { status: 204 };
    }],
  ];
  const match = router(table.map(([m, t, op, h]) => [m, t, { op, h }]));

  // The long poll: a message at once if one is waiting, else held until one comes or
  // scaleSetPollMs passes (202, no body).
  function poll(ctx) {
    const { set, session } = queueSession(ctx);
    const cap = ctx.headers['x-scalesetmaxcapacity'];
    if (cap !== undefined && !/^\d+$/.test(cap)) throw bad('X-ScaleSetMaxCapacity must be an integer >= 0.');
    if (cap !== undefined) sets.capacity(set, Number(cap)); // may assign jobs (service flow): this poll sees them
    const lastRaw = ctx.query.get('lastMessageId');
    if (lastRaw !== null && !/^\d+$/.test(lastRaw)) throw bad('lastMessageId must be an integer.');
    const last = Number(lastRaw || 0);
    sets.sessions.touch(session);
    const envelope = () => {
      const e = set.queue.next(last);
      return e && { status: 200, body: { messageId: e.messageId, messageType: 'RunnerScaleSetJobMessages', body: JSON.stringify(e.jobs), statistics: sets.statistics(set) } };
    };
    const now = envelope();
    if (now) return now;
    return new Promise((resolve) => {
      let done = false;
      let cancelWait = () => {};
      const finish = (r) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        cancelWait();
        session.open.delete(end);
        session.polls--;
        sets.sessions.touch(session);
        resolve(r);
      };
      const end = (status) => finish(status === 404 ? errorReply(setNotFound(set.id)) : status === 401 ? errorReply(unauthorized()) : { status });
      const wake = () => {
        const e = envelope();
        if (e) finish(e);
        else cancelWait = set.queue.wait(wake);
      };
      const timer = setTimeout(() => finish({ status: 202 }), st().scaleSetPollMs);
      session.open ??= new Set();
      session.open.add(end);
      session.polls++;
      cancelWait = set.queue.wait(wake);
      ctx.onClose(() => finish(null));
    });
  }
  const errorReply = (e) => ({ status: e.status, body: e.body });

  function takeFault(op) {
    const q = faults.get(op);
    if (!q || !q.length) return null;
    const f = q.shift();
    if (!q.length) faults.delete(op);
    return f;
  }

  const owns = (p) => p.startsWith(`${PIPELINES}/_apis/`) || p === QUEUE || p.startsWith(`${QUEUE}/`);

  async function handle(req, res, u, raw, origin) {
    const headers = { ActivityId: crypto.randomUUID() };
    const m = match(req.method, u.pathname);
    if (!m) return send(res, 404, new AsError(404, 'NotFoundException', `No API at ${req.method} ${u.pathname}.`, 'GitHub.Services.WebApi').body, headers);
    const { op, h } = m.route.handler;
    // Crash points (lib/hold.js): the caller `scaleset` (a scale-set client), the operation's name.
    const gate = holds?.gate({ service: 'github', identities: ['scaleset'], operation: op, body: raw });
    if (gate?.when === 'before' && await gate.hold() === 'drop') return res.destroy();
    const f = takeFault(op);
    if (f) {
      if (f.status === 'empty') { // a 200 with nothing in it (seen during an outage)
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': 0, ...headers });
        return res.end();
      }
      const text = STATUS_TEXT[f.status];
      const retry = f.status === 429 || f.status === 503 ? { 'Retry-After': String(f.retryAfterSeconds ?? 1) } : {};
      res.writeHead(f.status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text), ...retry, ...headers });
      return res.end(text);
    }
    const body = parseJson(raw);
    if (body === undefined) return send(res, 400, bad('The request body is not valid JSON.').body, headers);
    const ctx = {
      params: m.params, query: u.searchParams, body: body ?? {}, headers: req.headers, origin, serviceUrl: serverUrlOf(origin),
      onClose: (fn) => res.on('close', () => { if (!res.writableEnded) fn(); }),
    };
    let r;
    try {
      r = await h(ctx);
    } catch (e) {
      if (!(e instanceof AsError)) throw e;
      r = errorReply(e);
    }
    if (!r) return;
    if (gate?.when === 'after' && await gate.hold() === 'drop') return res.destroy(); // done, never answered
    send(res, r.status, r.body, headers);
  }

  return { sets, faults, owns, handle, close: () => sets.close(), OPERATIONS: [...new Set(table.map((t) => t[2]))] };
}

module.exports = { createScaleSetService, QUEUE };
