'use strict';
// The EC2 stand-in's control API (tests, demo, benchmarks), mounted by the launcher under /_control/ec2.
const fs = require('node:fs');

const NUMBERS = { pendingMs: 0, terminateGraceMs: 0, imdsTokenMaxTtlSeconds: 1, credentialTtlMs: 1, terminatedVisibleMs: 0 };
const CHOICES = {
  defaultShutdownBehavior: ['terminate', 'stop'],
  defaultInstanceMetadataTags: ['enabled', 'disabled'],
  instancePolicy: ['restricted', 'unrestricted'],
};

const ok = (json) => ({ status: 200, json });
const fail = (status, error) => ({ status, json: { error } });

function createControl(world) {
  function instance(id) {
    return world.instances.get(id) || null;
  }

  function settings(body) {
    if (!body || typeof body !== 'object' || Array.isArray(body)) return fail(400, 'body must be a JSON object');
    for (const [k, v] of Object.entries(body)) {
      if (k in NUMBERS) {
        if (!Number.isInteger(v) || v < NUMBERS[k]) return fail(400, `${k} must be an integer >= ${NUMBERS[k]}`);
      } else if (k in CHOICES) {
        if (!CHOICES[k].includes(v)) return fail(400, `${k} must be one of ${CHOICES[k].join(', ')}`);
      } else return fail(400, `unknown setting ${JSON.stringify(k)}`);
    }
    Object.assign(world.settings, body);
    return ok({ ...world.settings });
  }

  function perInstance(method, inst, verb, body) {
    const b = body || {};
    const up = inst.state === 'running' || inst.state === 'pending';
    switch (`${method} ${verb}`) {
      case 'GET ':
        return ok(inst.summary());
      case 'GET console':
        return ok({ text: fs.existsSync(inst.consolePath()) ? fs.readFileSync(inst.consolePath(), 'utf8') : '' });
      case 'POST spot-interruption': {
        if (inst.lifecycle !== 'spot') return fail(409, `${inst.id} is not a spot instance`);
        if (!up) return fail(409, `${inst.id} is ${inst.state}`);
        const action = b.action || inst.interruptionBehavior;
        if (action !== 'terminate' && action !== 'stop') return fail(400, "action must be 'terminate' or 'stop'");
        const inSeconds = b.inSeconds === undefined ? 120 : b.inSeconds;
        if (typeof inSeconds !== 'number' || !(inSeconds >= 0)) return fail(400, 'inSeconds must be a number >= 0');
        return ok({ instanceId: inst.id, ...inst.spotInterruption(action, inSeconds) });
      }
      case 'POST rebalance':
        if (inst.lifecycle !== 'spot') return fail(409, `${inst.id} is not a spot instance`);
        if (!up) return fail(409, `${inst.id} is ${inst.state}`);
        return ok({ instanceId: inst.id, ...inst.rebalance() });
      case 'POST poweroff':
        if (!up) return fail(409, `${inst.id} is ${inst.state}`);
        return ok({ instanceId: inst.id, behavior: inst.instanceInitiatedShutdown() });
      default:
        return fail(404, `no control route ${method} /instances/<id>/${verb}`);
    }
  }

  return async function control(method, subpath, body) {
    const url = new URL(subpath || '/', 'http://local');
    const p = url.pathname.replace(/\/+$/, '') || '/';
    try {
      let m;
      if (p === '/instances' && method === 'GET') {
        const state = url.searchParams.get('state');
        return ok({ instances: world.visibleInstances().filter((i) => !state || i.state === state).map((i) => i.summary()) });
      }
      if ((m = /^\/instances\/([^/]+)(?:\/([a-z-]+))?$/.exec(p))) {
        const inst = instance(m[1]);
        if (!inst) return fail(404, `no instance ${m[1]}`);
        return perInstance(method, inst, m[2] || '', body);
      }
      switch (`${method} ${p}`) {
        case 'GET /capacity': return ok({ rules: world.capacity.list() });
        case 'POST /capacity':
          try { world.capacity.set(body || {}); } catch (err) { return fail(400, err.message); }
          return ok({ rules: world.capacity.list() });
        case 'DELETE /capacity': world.capacity.reset(); return ok({ rules: [] });
        case 'GET /settings': return ok({ ...world.settings });
        case 'POST /settings': return settings(body);
        case 'GET /calls': return ok(world.calls);
        case 'DELETE /calls': world.resetCalls(); return ok(world.calls);
        case 'GET /': return ok({ isolation: world.isolation, region: world.region, stateDir: world.stateDir, url: world.url });
        default: return fail(404, `no control route ${method} ${p}`);
      }
    } catch (err) {
      world.log('error', `ec2 control ${method} ${subpath}: ${err.stack || err}`);
      return fail(500, String(err.message || err));
    }
  };
}

module.exports = { createControl };
