'use strict';
// The local cloud's EC2 stand-in: the EC2 query API (behind the launcher's SigV4 proxy, which forwards
// the caller in x-localcloud-principal), instances that are real local processes, one IMDSv2 endpoint
// per instance, and a control API. See README.md in this directory for the contract.
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { parseForm, nest } = require('./query');
const xml = require('./xml');
const { Ec2Error, invalid } = require('./errors');
const { Capacity } = require('./capacity');
const { probe } = require('./sandbox');
const { createControl } = require('./control');

const ACTIONS = {
  ...require('./actions/instances'), ...require('./actions/fleet'),
  ...require('./actions/templates'), ...require('./actions/tags'),
};

// What an instance principal may do (settings.instancePolicy 'restricted'): describe, and terminate itself.
const INSTANCE_ACTIONS = ['DescribeInstances', 'TerminateInstances'];

const DEFAULT_SETTINGS = {
  pendingMs: 50,
  terminateGraceMs: 1000,
  imdsTokenMaxTtlSeconds: 21600,
  credentialTtlMs: 6 * 3600 * 1000,
  terminatedVisibleMs: 3600 * 1000,
  defaultShutdownBehavior: 'terminate', // real EC2: stop
  defaultInstanceMetadataTags: 'enabled', // real EC2: disabled
  instancePolicy: 'restricted',
};

function stable(v) {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stable(v[k])}`).join(',')}}`;
  return JSON.stringify(v);
}

// `isolation: 'session'` forces the fallback isolation (tests of the fallback only).
async function createEc2({ credentials, faults, stateDir, region = 'us-east-1', log = () => {}, isolation: force }) {
  const isolation = probe(force);
  if (isolation.mode !== 'pidns') {
    log('warn', `ec2: instances get a new session, not a PID namespace (${isolation.why}); processes that leave ` +
      'the session and clear RUNPOOL_LOCALCLOUD_INSTANCE_DIR from their environment escape termination');
  }
  if (!isolation.setpriv) log('warn', 'ec2: setpriv not found: instances will outlive a local cloud killed by SIGKILL');
  fs.mkdirSync(path.join(stateDir, 'instances'), { recursive: true });
  const { accountId } = credentials; // one account for every service of the local cloud
  const idem = new Map();

  const world = {
    region, accountId, credentials, faults, log, stateDir, isolation,
    createdBy: `arn:aws:iam::${accountId}:root`,
    arch: process.arch === 'arm64' ? 'arm64' : 'x86_64',
    settings: { ...DEFAULT_SETTINGS },
    seq: 0,
    instances: new Map(), reservations: new Map(), templates: new Map(), templateNames: new Map(), fleets: new Map(),
    capacity: new Capacity(),
    calls: null,
    resetCalls() { world.calls = { actions: {}, clientTokens: {}, errors: {} }; },

    // Terminated instances stay visible for terminatedVisibleMs, then vanish (as in EC2).
    visibleInstances() {
      const now = Date.now();
      for (const [id, i] of world.instances) {
        if (i.terminatedAt && now - i.terminatedAt > world.settings.terminatedVisibleMs) world.instances.delete(id);
      }
      return [...world.instances.values()];
    },

    // ClientToken idempotency: the same token with the same parameters answers like the first call
    // without doing it again; with other parameters it is an error. `fn` does the work and returns a
    // function that renders the response.
    idempotent(action, token, params, fn) {
      if (token === undefined) return fn()();
      if (token.length > 64 || !/^[\x20-\x7e]*$/.test(token)) throw invalid('ClientToken', token, 'At most 64 ASCII characters.');
      const { ClientToken, Action, Version, ...rest } = params; // eslint-disable-line no-unused-vars
      const hash = crypto.createHash('sha256').update(stable(rest)).digest('hex');
      const key = `${action}\0${token}`;
      const seen = idem.get(key);
      if (seen) {
        if (seen.hash !== hash) throw new Ec2Error('IdempotentParameterMismatch', `The client token '${token}' was already used with different parameters.`);
        return seen.render();
      }
      const render = fn();
      idem.set(key, { hash, render });
      return render();
    },

    // An instance principal may act only on its own instance (null: on no instance at all).
    authorizeInstance(ctx, instanceId) {
      if (world.settings.instancePolicy !== 'restricted' || !ctx.principal.startsWith('instance:')) return;
      if (ctx.principal !== `instance:${instanceId}`) throw unauthorized(ctx, ctx.action);
    },
  };
  world.resetCalls();

  function unauthorized(ctx, action) {
    return new Ec2Error('UnauthorizedOperation', `You are not authorized to perform this operation. User: ${ctx.principal} ` +
      `is not authorized to perform: ec2:${action}`, 403);
  }

  function dispatch(flat, principal) {
    const requestId = crypto.randomUUID();
    const action = flat.Action;
    const ctx = { principal, action, requestId };
    const c = world.calls;
    if (action) c.actions[action] = (c.actions[action] || 0) + 1;
    if (action && flat.ClientToken !== undefined) {
      const seen = (c.clientTokens[action] ||= []);
      seen.push(flat.ClientToken);
      if (seen.length > 1000) seen.shift(); // the latest 1000 per action
    }
    try {
      if (!action) throw new Ec2Error('MissingAction', 'The request must contain the parameter Action');
      if (!Object.hasOwn(ACTIONS, action)) throw new Ec2Error('InvalidAction', `The action ${action} is not valid for this web service.`);
      if (principal.startsWith('instance:') && world.settings.instancePolicy === 'restricted' && !INSTANCE_ACTIONS.includes(action)) {
        throw unauthorized(ctx, action);
      }
      const body = ACTIONS[action](world, nest(flat), ctx);
      return [200, xml.response(action, body, requestId)];
    } catch (e) {
      let err = e;
      if (!(err instanceof Ec2Error)) {
        log('error', `ec2 ${action}: ${err.stack || err}`);
        err = new Ec2Error('InternalError', 'An internal error has occurred', 500);
      }
      c.errors[err.code] = (c.errors[err.code] || 0) + 1;
      return [err.status, xml.errorResponse(err.code, err.message, requestId)];
    }
  }

  const server = http.createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on('data', (d) => { size += d.length; if (size <= 4 << 20) chunks.push(d); });
    req.on('end', () => {
      let status; let text;
      if (size > 4 << 20) [status, text] = [413, xml.errorResponse('RequestEntityTooLarge', 'Request body too large')];
      else {
        const url = new URL(req.url, 'http://local');
        const flat = { ...Object.fromEntries(url.searchParams), ...parseForm(Buffer.concat(chunks).toString('utf8')) };
        [status, text] = dispatch(flat, String(req.headers['x-localcloud-principal'] || 'controller'));
      }
      res.writeHead(status, { 'content-type': 'text/xml;charset=UTF-8', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', resolve); });
  world.url = `http://127.0.0.1:${server.address().port}`;
  log('info', `ec2 stand-in on ${world.url} (instances isolated by ${isolation.mode})`);

  const control = createControl(world);
  return {
    url: world.url,
    control,
    // Terminates every instance (ending all their processes), then closes the API server.
    close: async () => {
      const all = [...world.instances.values()];
      for (const i of all) i.terminate('user');
      await Promise.all(all.map((i) => i.work));
      await new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); });
    },
  };
}

module.exports = { createEc2 };
