'use strict';
// runpool's GitHub stand-in: the self-hosted runner REST API (GHES-style base <url>/api/v3) with
// App authentication, rate limits and injected faults; the runner's own protocol and job broker
// under <url>/_services/pipelines; the runner scale-set API (the Actions service) under the same
// base; the runner download; and the control API. See README.md.
//
//   createGithub({ faults, stateDir, log(level, msg) }) -> { url, control(method, subpath, body), close() }
const crypto = require('node:crypto');
const { readBody, listenLocal, closeServer, createServer } = require('../lib/httputil');
const { router, send, parseJson } = require('./http');
const { Model } = require('./model');
const { Auth } = require('./auth');
const { Broker } = require('./broker');
const rest = require('./rest');
const apps = require('./apps');
const pipelines = require('./pipelines');
const { createDownloads } = require('./downloads');
const { createControl, createCalls } = require('./control');
const { createScaleSetService } = require('./scaleset_api');
const { createScaleSetControl } = require('./scaleset_control');
const { holdsOf } = require('../lib/hold');
const workflowRuns = require('./workflow_runs');
const { WorkflowRuns } = workflowRuns;

const SECONDARY = 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ';
const RATE_DOC = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';

async function createGithub({ faults = null, stateDir = null, log = () => {} } = {}) {
  void stateDir; // all state is in memory; the parameter is accepted for the launcher's contract
  const model = new Model();
  const auth = new Auth(model);
  const broker = new Broker(model, (msg) => log('debug', msg));
  const calls = createCalls();
  const downloads = createDownloads();
  const runs = new WorkflowRuns(model, broker);
  const deps = { model, auth, broker, downloads, runs };
  const rateLimitRoute = ['GET', '/rate_limit', (ctx) => {
    const h = auth.rate(ctx.principal, false).headers;
    const core = { limit: +h['x-ratelimit-limit'], remaining: +h['x-ratelimit-remaining'], reset: +h['x-ratelimit-reset'], used: +h['x-ratelimit-used'], resource: 'core' };
    return { status: 200, body: { resources: { core }, rate: core } };
  }];
  const matchRest = router([...rest.routes(deps), ...workflowRuns.routes(deps), ...apps.routes(deps), rateLimitRoute]);
  const matchRunner = router(pipelines.routes(deps));
  const holds = holdsOf(faults); // crash points: lib/hold.js
  const scalesets = createScaleSetService({ model, broker, holds, log });
  const control = createControl({ model, auth, broker, calls, runs, scalesets: createScaleSetControl({ service: scalesets, model }) });
  let origin = null;
  let errorFlip = false; // injected server errors alternate 502 / 500

  async function handleRest(req, res, u, raw) {
    const apiPath = u.pathname.slice('/api/v3'.length) || '/';
    const m = matchRest(req.method, apiPath);
    const a = auth.authenticate(req.headers.authorization);
    const requestId = crypto.randomBytes(8).toString('hex').toUpperCase();
    const route = m ? `${req.method} ${m.route.template}` : `${req.method} (unmatched)`;
    let gate = null; // a held step (lib/hold.js), when: 'after': withheld here, the handler's effect done
    const reply = async (status, body, headers = {}) => {
      if (gate?.when === 'after' && await gate.hold() === 'drop') return res.destroy();
      calls.record({ route, principal: a.principal ? a.principal.key : a.status ? 'invalid' : 'anonymous', token: a.principal?.token, status });
      send(res, status, body, { 'x-github-api-version-selected': '2022-11-28', 'x-github-media-type': 'github.v3; format=json', 'x-github-request-id': requestId, ...headers });
    };
    if (a.status) return reply(a.status, { message: a.message, documentation_url: 'https://docs.github.com/rest', status: String(a.status) }, auth.rate(null).headers);
    // A renamed or transferred repository: its old paths answer 301 (GET, HEAD) or 307 (other
    // methods, to be repeated as they were) with the Location of /repositories/<id>/….
    const moved = a.principal ? rest.redirectFor(model, apiPath) : null;
    if (moved) {
      const permanent = req.method === 'GET' || req.method === 'HEAD';
      const location = `${origin}/api/v3${moved}${u.search}`;
      return reply(permanent ? 301 : 307, { message: permanent ? 'Moved Permanently' : 'Temporary Redirect', url: location, documentation_url: 'https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects' },
        { ...auth.rate(a.principal).headers, location });
    }
    if (!m) return reply(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest', status: '404' });
    const isRateLimit = m.route.template === '/rate_limit';
    if (!a.principal && !isRateLimit) return reply(401, { message: 'Requires authentication', documentation_url: 'https://docs.github.com/rest', status: '401' }, auth.rate(null).headers);
    if (a.principal) gate = holds?.gate({ service: 'github', identities: ['github'], operation: route, body: raw });
    if (gate?.when === 'before' && await gate.hold() === 'drop') return res.destroy();

    const fault = faults ? faults.decide('github', route) : null;
    if (faults) await faults.delay('github');
    if (fault) {
      const h = auth.rate(a.principal, false).headers;
      if (fault.kind === 'error') return reply((errorFlip = !errorFlip) ? 502 : 500, { message: 'Server Error' }, h);
      const seconds = fault.kind === 'retryAfter' ? fault.seconds : (faults.get('github').retryAfterSeconds || 1);
      return reply(fault.kind === 'throttle' ? 403 : 429, { message: SECONDARY + requestId + '.', documentation_url: `${RATE_DOC}#about-secondary-rate-limits`, status: fault.kind === 'throttle' ? '403' : '429' }, { ...h, 'retry-after': String(seconds) });
    }
    const rate = auth.rate(a.principal, !isRateLimit);
    if (rate.exceeded) return reply(403, { message: auth.exceededMessage(a.principal), documentation_url: `${RATE_DOC}#about-the-primary-rate-limit`, status: '403' }, rate.headers);
    const body = parseJson(raw);
    if (body === undefined || (body !== null && typeof body !== 'object')) return reply(400, { message: 'Problems parsing JSON', documentation_url: 'https://docs.github.com/rest', status: '400' }, rate.headers);
    const ctx = { params: m.params, query: u.searchParams, body: body || {}, principal: a.principal, origin, base: `${origin}/api/v3${apiPath}` };
    let r;
    try {
      r = await m.route.handler(ctx);
    } catch (e) {
      if (!(e instanceof rest.HttpError)) throw e;
      return reply(e.status, e.body, rate.headers);
    }
    return reply(r.status, r.body, { ...rate.headers, ...(r.headers || {}) });
  }

  async function handleRunner(req, res, u, raw, m) {
    calls.runner(`${req.method} ${m.route.template}`);
    const gate = holds?.gate({ service: 'github', identities: ['runner'], operation: `${req.method} ${m.route.template}`, body: raw });
    if (gate?.when === 'before' && await gate.hold() === 'drop') return res.destroy();
    const reply = async (status, body) => {
      if (gate?.when === 'after' && await gate.hold() === 'drop') return res.destroy();
      send(res, status, body);
    };
    const ctx = {
      params: m.params, query: u.searchParams, rawBody: raw, headers: req.headers, origin,
      body: (/json/.test(req.headers['content-type'] || '') ? parseJson(raw) : null) || {},
      onClose: (fn) => res.on('close', () => { if (!res.writableEnded) fn(); }),
    };
    try {
      const r = await m.route.handler(ctx);
      await reply(r.status, r.body);
    } catch (e) {
      if (!(e instanceof rest.HttpError)) throw e;
      await reply(e.status, e.body);
    }
  }

  async function handle(req, res) {
    const u = new URL(req.url, origin);
    const raw = await readBody(req);
    if (u.pathname === '/_control/github' || u.pathname.startsWith('/_control/github/')) {
      const r = await control(req.method, u.pathname.slice('/_control/github'.length) || '/', parseJson(raw) || {});
      return send(res, r.status, r.json);
    }
    if (req.method === 'GET' && u.pathname.startsWith('/_runner/')) {
      const buf = await downloads.get(u.pathname.slice('/_runner/'.length));
      if (!buf) return send(res, 404, { message: 'Not Found' });
      res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': buf.length });
      return res.end(buf);
    }
    if (scalesets.owns(u.pathname)) return scalesets.handle(req, res, u, raw, origin);
    const rm = matchRunner(req.method, u.pathname);
    if (rm) return handleRunner(req, res, u, raw, rm);
    if (u.pathname.startsWith('/api/v3/') || u.pathname === '/api/v3') return handleRest(req, res, u, raw);
    return send(res, 404, { message: 'Not Found' });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      log('error', `github: ${req.method} ${req.url} failed: ${e.stack || e}`);
      send(res, 500, { message: 'Server Error' });
    });
  });
  origin = await listenLocal(server);
  log('info', `github: listening on ${origin} (REST ${origin}/api/v3)`);

  return {
    url: origin,
    control,
    close: async () => {
      scalesets.close();
      broker.close();
      await closeServer(server);
    },
  };
}

module.exports = { createGithub };
