'use strict';
// The EC2 stand-in's control API (tests, demo, benchmarks), mounted by the launcher under /_control/ec2.
const fs = require('node:fs');
const L = require('./launch');

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
      case 'POST termination-protection':
        // As ModifyInstanceAttribute DisableApiTermination would set it: TerminateInstances naming the
        // instance then fails whole with OperationNotPermitted.
        if (typeof b.enabled !== 'boolean') return fail(400, 'enabled must be true or false');
        if (inst.state === 'terminated') return fail(409, `${inst.id} is terminated`);
        inst.disableApiTermination = b.enabled;
        return ok({ instanceId: inst.id, disableApiTermination: inst.disableApiTermination });
      case 'POST poweroff':
        if (!up) return fail(409, `${inst.id} is ${inst.state}`);
        return ok({ instanceId: inst.id, behavior: inst.instanceInitiatedShutdown() });
      default:
        return fail(404, `no control route ${method} /instances/<id>/${verb}`);
    }
  }

  // Instances without a machine (no directory, IMDS or processes), as many as a benchmark at scale
  // needs: DescribeInstances, TerminateInstances and tags treat them like any other instance.
  function recordOnly(body) {
    const b = body && typeof body === 'object' && !Array.isArray(body) ? body : null;
    if (!b) return fail(400, 'body must be a JSON object');
    const known = ['count', 'instanceType', 'lifecycle', 'imageId', 'subnetId', 'tags'];
    const extra = Object.keys(b).find((k) => !known.includes(k));
    if (extra) return fail(400, `unknown field ${JSON.stringify(extra)}`);
    if (!Number.isInteger(b.count) || b.count < 1 || b.count > 50000) return fail(400, 'count must be an integer in 1..50000');
    const lifecycle = b.lifecycle === undefined ? 'on-demand' : b.lifecycle;
    if (!['on-demand', 'spot'].includes(lifecycle)) return fail(400, "lifecycle must be 'on-demand' or 'spot'");
    const instanceType = b.instanceType === undefined ? 'm7i.large' : b.instanceType;
    if (typeof instanceType !== 'string' || !/^[a-z][a-z0-9-]*\.[a-z0-9-]+$/.test(instanceType)) return fail(400, 'bad instanceType');
    const imageId = b.imageId === undefined ? 'ami-12345678' : b.imageId;
    if (typeof imageId !== 'string' || !/^ami-([0-9a-f]{8}|[0-9a-f]{17})$/.test(imageId)) return fail(400, 'bad imageId');
    if (b.tags !== undefined && (!b.tags || typeof b.tags !== 'object' || Array.isArray(b.tags) ||
        Object.values(b.tags).some((v) => typeof v !== 'string'))) return fail(400, 'tags must map keys to strings');
    let tags; let az;
    try {
      tags = L.validateTags(Object.entries(b.tags || {}).map(([Key, Value]) => ({ Key, Value })), { imdsTags: true });
      az = L.zoneFor(world, {}, b.subnetId);
    } catch (err) { return fail(400, err.message); }
    const base = {
      imageId, instanceType, lifecycle, tags, userData: null, profile: null, recordOnly: true,
      metadata: { httpTokens: 'required', httpPutResponseHopLimit: 2, httpEndpoint: 'enabled', instanceMetadataTags: 'enabled' },
      shutdownBehavior: world.settings.defaultShutdownBehavior, interruptionBehavior: 'terminate',
      keyName: undefined, securityGroupIds: [], disableApiTermination: false,
    };
    const insts = L.createInstances(world, base, b.count, { subnetId: b.subnetId, az });
    return ok({ instanceIds: insts.map((i) => i.id), reservationId: insts[0].reservationId });
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
        case 'POST /record-only-instances': return recordOnly(body);
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
