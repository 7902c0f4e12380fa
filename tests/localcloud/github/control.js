'use strict';
// The test/demo control API of the GitHub stand-in (mounted at /_control/github). Documented
// in README.md next to this file.
const { lc } = require('./model');
const { restRunner } = require('./rest');

function createControl({ model, auth, broker, calls }) {
  const ok = (json, status = 200) => ({ status, json });
  const bad = (message, status = 400) => ({ status, json: { message } });

  const runnerView = (r) => ({
    ...restRunner(broker, r), owner: r.owner, repo: r.repo, currentJob: r.currentJob,
    session: r.session ? { id: r.session.id, createdAt: r.session.createdAt, lastSeen: r.session.lastSeen, openPolls: r.session.polls, live: broker.sessionLive(r) } : null,
  });

  const table = [
    ['GET', /^\/settings$/, () => ok(model.settings)],
    ['POST', /^\/settings$/, (b) => ok(model.setSettings(b))],
    ['POST', /^\/owners$/, (b) => { model.addOwner(b.owner); return ok({ owner: b.owner }, 201); }],
    ['POST', /^\/pats$/, (b) => {
      if (typeof b.token !== 'string' || b.token.length < 8 || /\s/.test(b.token)) return bad('token must be a string of 8+ non-space characters');
      if (b.owners !== undefined && !Array.isArray(b.owners)) return bad('owners must be an array');
      (b.owners || []).forEach((o) => model.addOwner(o));
      model.pats.set(b.token, { token: b.token, owners: b.owners ? new Set(b.owners.map(lc)) : null });
      return ok({ token: b.token, owners: b.owners || null }, 201);
    }],
    ['POST', /^\/apps$/, (b) => ok(auth.addApp(b), 201)],
    ['POST', /^\/apps\/(\d+)\/installations$/, (b, m) => ok(auth.addInstallation(m[1], b.owner), 201)],
    ['GET', /^\/runners$/, () => ok({ runners: [...model.runners.values()].map(runnerView) })],
    ['DELETE', /^\/runners\/(\d+)$/, (b, m) => {
      const r = model.runners.get(Number(m[1]));
      if (!r) return bad('no such runner', 404);
      model.deleteRunner(r); // a force removal: busy or not
      return ok({ deleted: r.id });
    }],
    ['POST', /^\/runners\/(\d+)\/busy$/, (b, m) => {
      const r = model.runners.get(Number(m[1]));
      if (!r) return bad('no such runner', 404);
      if (typeof b.busy !== 'boolean') return bad('busy must be a boolean');
      r.busy = b.busy; // e.g. a stale busy flag lingering on GitHub's side
      return ok(runnerView(r));
    }],
    ['POST', /^\/jobs$/, (b) => ok(broker.view(broker.queue(b)), 201)],
    ['GET', /^\/jobs$/, () => ok({ jobs: [...broker.jobs.values()].map((j) => broker.view(j)) })],
    ['GET', /^\/jobs\/(\d+)$/, (b, m) => {
      const j = broker.jobs.get(Number(m[1]));
      return j ? ok(broker.view(j)) : bad('no such job', 404);
    }],
    ['GET', /^\/calls$/, () => ok(calls.snapshot())],
    ['DELETE', /^\/calls$/, () => { calls.reset(); return ok(calls.snapshot()); }],
    ['DELETE', /^\/ratelimits$/, () => { auth.windows.clear(); return ok({}); }],
  ];

  return async function control(method, subpath, body) {
    const p = String(subpath || '/').split('?')[0].replace(/\/+$/, '') || '/';
    for (const [m, re, fn] of table) {
      const match = re.exec(p);
      if (!match || m !== String(method).toUpperCase()) continue;
      try {
        return await fn(body && typeof body === 'object' ? body : {}, match);
      } catch (e) {
        return bad(e.message, e.status || 400);
      }
    }
    return bad(`no control route ${method} ${subpath}`, 404);
  };
}

// REST call counters, read by tests and benchmarks.
function createCalls() {
  let c;
  const reset = () => { c = { total: 0, byRoute: {}, byPrincipal: {}, byToken: {}, byStatus: {}, runnerProtocol: {} }; };
  reset();
  const inc = (o, k) => { o[k] = (o[k] || 0) + 1; };
  return {
    reset,
    record({ route, principal, token, status }) {
      c.total++;
      inc(c.byRoute, route);
      inc(c.byPrincipal, principal);
      if (token) inc(c.byToken, token);
      inc(c.byStatus, String(status));
    },
    runner(route) { inc(c.runnerProtocol, route); },
    snapshot: () => JSON.parse(JSON.stringify(c)),
  };
}

module.exports = { createControl, createCalls };
