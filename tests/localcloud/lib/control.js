'use strict';
// The control API (tests and demo only, never seen by runpool itself): health, fault knobs,
// request stats, credentials, and delegation to the EC2, GitHub and CloudWatch Logs stand-ins' own
// control routes.
const { readBody, sendJson } = require('./httputil');
const { holdsOf } = require('./hold');

/**
 * createControlHandler({ faults, credentials, proxies: {service: proxy}, ec2, github, logs, log })
 * -> (req, res) handler. ec2/github/logs may be null (stand-in absent): their routes then answer 503.
 */
function createControlHandler({ faults, credentials, proxies = {}, ec2 = null, github = null, logs = null,
  log = () => {} }) {
  const standIns = { ec2, github, logs };
  const holds = holdsOf(faults);

  async function route(method, path, query, body) {
    const stand = /^\/_control\/(ec2|github|logs)(\/.*)?$/.exec(path);
    if (stand) {
      const target = standIns[stand[1]];
      if (!target) return { status: 503, json: { error: `the ${stand[1]} stand-in is not loaded` } };
      return target.control(method, (stand[2] || '/') + query, body);
    }
    const key = `${method} ${path}`;
    switch (key) {
      case 'GET /_control/health':
        return { status: 200, json: { ok: true, services: {
          dynamodb: !!proxies.dynamodb, sqs: !!proxies.sqs, ec2: !!ec2, github: !!github, logs: !!logs } } };
      case 'GET /_control/faults':
        return { status: 200, json: Object.fromEntries(Object.keys(faults.config).map((s) => [s, faults.get(s)])) };
      case 'POST /_control/faults': {
        if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('body must be a JSON object');
        try { faults.set(body.service, body); } catch (err) { throw badRequest(err.message); }
        return { status: 200, json: { service: body.service, ...faults.get(body.service) } };
      }
      case 'GET /_control/stats':
        return { status: 200, json: faults.stats };
      case 'POST /_control/stats/reset':
        faults.resetStats();
        for (const p of Object.values(proxies)) p.authFailures = {};
        return { status: 200, json: { ok: true } };
      case 'GET /_control/requests': // { service: { principal: { operation: count } } }
        return { status: 200, json: Object.fromEntries(Object.entries(proxies).map(([s, p]) => [s, p.requests.snapshot()])) };
      case 'POST /_control/requests/reset':
        for (const p of Object.values(proxies)) p.requests.reset();
        return { status: 200, json: { ok: true } };
      case 'GET /_control/auth-failures':
        return { status: 200, json: Object.fromEntries(Object.entries(proxies).map(([s, p]) => [s, p.authFailures])) };
      case 'POST /_control/hold': // crash points (lib/hold.js)
        try { holds.arm(body); } catch (err) { throw badRequest(err.message); }
        return { status: 200, json: holds.status() };
      case 'GET /_control/hold':
        return { status: 200, json: holds.status() };
      case 'POST /_control/hold/release':
        if (!holds.decide('forward')) return { status: 409, json: { error: 'no request is held' } };
        return { status: 200, json: holds.status() };
      case 'DELETE /_control/hold': {
        const dropped = !!holds.held && !holds.held.decided;
        holds.disarm();
        return { status: 200, json: { dropped } };
      }
      case 'GET /_control/credentials': {
        const c = credentials.controller;
        return { status: 200, json: { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey } };
      }
      case 'POST /_control/credentials/instance': { // test-only: short-lived instance credentials
        const { instanceId, ttlMs } = body || {};
        if (typeof instanceId !== 'string' || !instanceId) throw badRequest('instanceId (string) is required');
        if (ttlMs !== undefined && !(Number.isFinite(ttlMs) && ttlMs >= 0)) throw badRequest('ttlMs must be a number >= 0');
        const c = credentials.issueForInstance(instanceId, ttlMs);
        return { status: 200, json: { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey,
          sessionToken: c.sessionToken, expiration: c.expiration.toISOString() } };
      }
      default:
        return { status: 404, json: { error: `no control route ${key}` } };
    }
  }

  return async (req, res) => {
    try {
      const qi = req.url.indexOf('?');
      const path = qi < 0 ? req.url : req.url.slice(0, qi);
      const query = qi < 0 ? '' : req.url.slice(qi);
      const raw = (await readBody(req, 1024 * 1024)).toString('utf8');
      let body;
      if (raw.trim()) {
        try { body = JSON.parse(raw); } catch { throw badRequest('body is not valid JSON'); }
      }
      const { status, json } = await route(req.method, path, query, body);
      sendJson(res, status, json === undefined ? {} : json);
    } catch (err) {
      const status = err.status || 500;
      if (status >= 500) log('error', `control ${req.method} ${req.url}: ${err.stack || err}`);
      if (res.headersSent) return res.destroy();
      sendJson(res, status, { error: err.message });
    }
  };
}

const badRequest = (message) => Object.assign(new Error(message), { status: 400 });

module.exports = { createControlHandler };
