'use strict';
// The test/demo control API of the GitHub stand-in (mounted at /_control/github). Documented
// in README.md next to this file.
const { lc, Model, SYSTEM_LABELS } = require('./model');
const { restRunner } = require('./rest');
const { VERSION, nextVersion } = require('./pipelines');

function createControl({ model, auth, broker, calls, runs, scalesets = null }) {
  const ok = (json, status = 200) => ({ status, json });
  const bad = (message, status = 400) => ({ status, json: { message } });

  const runnerView = (r) => ({
    ...restRunner(broker, r), runner_group_name: r.runnerGroupName, owner: r.owner, repo: r.repo, currentJob: r.currentJob,
    session: r.session ? { id: r.session.id, createdAt: r.session.createdAt, lastSeen: r.session.lastSeen, openPolls: r.session.polls, live: broker.sessionLive(r) } : null,
  });

  // Registers many runners at once without a runner process (benchmarks at scale): offline until
  // a Listener would open a session, which they never do. All or nothing: names are checked first.
  const bulkRunners = (b) => {
    if (typeof b.owner !== 'string') throw new Error('owner must be a string');
    if (b.repo !== undefined && (typeof b.repo !== 'string' || !b.repo)) throw new Error('repo must be a non-empty string');
    if (!Array.isArray(b.runners) || b.runners.length < 1 || b.runners.length > 50000) throw new Error('runners must be an array of 1..50000');
    model.addOwner(b.owner);
    const key = Model.scopeKey(b.owner, b.repo);
    const taken = new Set([...model.runners.values()].filter((r) => r.scopeKey === key).map((r) => lc(r.name)));
    for (const r of b.runners) {
      if (!r || typeof r.name !== 'string' || !r.name.trim()) throw new Error('each runner needs a name');
      if (r.labels !== undefined && (!Array.isArray(r.labels) || r.labels.some((l) => typeof l !== 'string' || !l.trim()))) {
        throw new Error(`runner ${r.name}: labels must be an array of names`);
      }
      if (r.busy !== undefined && typeof r.busy !== 'boolean') throw new Error(`runner ${r.name}: busy must be a boolean`);
      if (taken.has(lc(r.name))) throw Object.assign(new Error(`a runner named ${r.name} already exists`), { status: 409 });
      taken.add(lc(r.name));
    }
    return b.runners.map((r) => {
      const labels = [...SYSTEM_LABELS.map((n) => ({ name: n, type: 'read-only' })), ...(r.labels || []).map((n) => ({ name: n.trim(), type: 'custom' }))];
      const created = model.createRunner({ owner: b.owner, repo: b.repo, name: r.name, labels });
      created.busy = !!r.busy;
      return created.id;
    });
  };

  const table = [
    ['GET', /^\/settings$/, () => ok(model.settings)],
    ['POST', /^\/settings$/, (b) => ok(model.setSettings(b))],
    ['POST', /^\/owners$/, (b) => { model.addOwner(b.owner); return ok({ owner: b.owner }, 201); }],
    ['POST', /^\/owners\/rename$/, (b) => {
      if (typeof b.from !== 'string' || typeof b.to !== 'string') return bad('from and to must be owner names');
      model.renameOwner(b.from, b.to);
      return ok({ from: b.from, to: b.to });
    }],
    ['POST', /^\/enterprises$/, (b) => {
      if (b.orgs !== undefined && (!Array.isArray(b.orgs) || b.orgs.some((o) => typeof o !== 'string'))) return bad('orgs must be an array of organization names');
      model.addEnterprise(b.enterprise, b.orgs || []);
      const e = model.enterprises.get(lc(b.enterprise));
      return ok({ enterprise: e.slug, orgs: [...e.orgs] }, 201);
    }],
    ['POST', /^\/runner-groups$/, (b) => {
      const owner = typeof b.enterprise === 'string' ? `enterprise:${b.enterprise}` : b.owner;
      if (typeof owner !== 'string') return bad('owner (an organization) or enterprise is required');
      return ok(model.addGroup(owner, b.name), 201);
    }],
    ['POST', /^\/repos\/move$/, (b) => {
      const split = (s) => (typeof s === 'string' && /^[^/]+\/[^/]+$/.test(s) ? { owner: s.split('/')[0], repo: s.split('/')[1] } : null);
      const from = split(b.from);
      const to = split(b.to);
      if (!from || !to) return bad('from and to must be "owner/repo"');
      if (!model.hasOwner(from.owner) && !model.ownerRedirects.has(lc(from.owner))) return bad(`no owner ${from.owner}`, 404);
      return ok({ id: model.moveRepo(from, to), from: b.from, to: b.to });
    }],
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
    ['POST', /^\/runners\/bulk$/, (b) => ok({ ids: bulkRunners(b) }, 201)],
    ['DELETE', /^\/runners\/(\d+)$/, (b, m) => {
      const r = model.runners.get(Number(m[1]));
      if (!r) return bad('no such runner', 404);
      model.deleteRunner(r); // a force removal: busy or not
      return ok({ deleted: r.id });
    }],
    // The next `count` removals of this runner answer a server error instead: `via` "runner" (the
    // runner's own DELETE, i.e. config.sh remove), "rest" (DELETE …/actions/runners/{id}) or "both".
    ['POST', /^\/runners\/(\d+)\/removal-errors$/, (b, m) => {
      const r = model.runners.get(Number(m[1]));
      if (!r) return bad('no such runner', 404);
      const count = b.count === undefined ? 1 : b.count;
      if (!Number.isInteger(count) || count < 0) return bad('count must be an integer >= 0');
      const status = b.status === undefined ? 500 : b.status;
      if (![500, 502, 503].includes(status)) return bad('status must be 500, 502 or 503');
      const via = b.via === undefined ? 'both' : b.via;
      if (!['runner', 'rest', 'both'].includes(via)) return bad('via must be "runner", "rest" or "both"');
      r.removalErrors = count ? { count, status, via } : null;
      return ok({ id: r.id, removalErrors: r.removalErrors });
    }],
    // The service asks the runner to update itself: its next message is the refresh (the
    // broker's RunnerRefresh, the legacy AgentRefresh). Never for a runner with updates disabled.
    ['POST', /^\/runners\/(\d+)\/refresh$/, (b, m) => {
      const r = model.runners.get(Number(m[1]));
      if (!r) return bad('no such runner', 404);
      if (r.disableUpdate) return bad('the runner has updates disabled: GitHub sends it no update', 409);
      const version = b.version === undefined ? nextVersion(VERSION) : b.version;
      if (typeof version !== 'string' || !/^\d+\.\d+\.\d+$/.test(version)) return bad('version must be "x.y.z"');
      r.refreshTo = version;
      return ok({ id: r.id, refreshTo: version });
    }],
    ['POST', /^\/runners\/(\d+)\/busy$/, (b, m) => {
      const r = model.runners.get(Number(m[1]));
      if (!r) return bad('no such runner', 404);
      if (typeof b.busy !== 'boolean') return bad('busy must be a boolean');
      r.busy = b.busy; // e.g. a stale busy flag lingering on GitHub's side
      return ok(runnerView(r));
    }],
    ['POST', /^\/jobs$/, (b) => ok(broker.view(b.runId !== undefined ? runs.queueJob(b) : broker.queue(b)), 201)],
    ['POST', /^\/jobs\/(\d+)\/complete$/, (b, m) => {
      const j = broker.completeHosted(Number(m[1]), b.result);
      if (j === null) return bad('no such job', 404);
      if (j === false) return bad('only a queued hosted job completes here (a runner completes the others)', 409);
      return ok(broker.view(j));
    }],
    ['POST', /^\/runs$/, (b) => ok(runs.view(runs.create(b)), 201)],
    ['GET', /^\/runs$/, () => ok({ runs: [...runs.runs.values()].map((r) => runs.view(r)) })],
    // A user's "Re-run failed jobs" button: the REST call's semantics and answers.
    ['POST', /^\/runs\/(\d+)\/rerun-failed-jobs$/, (b, m) => {
      const r = runs.runs.get(Number(m[1]));
      if (!r) return bad('no such run', 404);
      try {
        runs.rerunFailed(r);
      } catch (e) {
        if (e.status && e.body) return { status: e.status, json: e.body };
        throw e;
      }
      return ok(runs.view(r), 201);
    }],
    ['GET', /^\/runs\/(\d+)$/, (b, m) => {
      const r = runs.runs.get(Number(m[1]));
      return r ? ok(runs.view(r)) : bad('no such run', 404);
    }],
    ['GET', /^\/jobs$/, () => ok({ jobs: [...broker.jobs.values()].map((j) => broker.view(j)) })],
    ['GET', /^\/jobs\/(\d+)$/, (b, m) => {
      const j = broker.jobs.get(Number(m[1]));
      return j ? ok(broker.view(j)) : bad('no such job', 404);
    }],
    ['POST', /^\/jobs\/(\d+)\/cancel$/, (b, m) => {
      const j = broker.cancel(Number(m[1]));
      if (j === null) return bad('no such job', 404);
      if (j === false) return bad('only a job no runner has started can be cancelled here', 409);
      return ok(broker.view(j));
    }],
    // Every credential issued or accepted so far, for tests that look for leaks (JWTs only as
    // they were used: `calls.byToken`).
    ['GET', /^\/secrets$/, () => ok({
      pats: [...model.pats.keys()],
      runnerTokens: [...model.runnerTokens.entries()].map(([token, t]) => ({ token, kind: t.kind })),
      adminTokens: [...model.adminTokens.keys()],
      accessTokens: [...model.accessTokens.keys()],
      installationTokens: [...auth.instTokens.keys()],
    })],
    ['GET', /^\/calls$/, () => ok(calls.snapshot())],
    ['DELETE', /^\/calls$/, () => { calls.reset(); return ok(calls.snapshot()); }],
    ['DELETE', /^\/ratelimits$/, () => { auth.windows.clear(); return ok({}); }],
  ];

  return async function control(method, subpath, body) {
    const p = String(subpath || '/').split('?')[0].replace(/\/+$/, '') || '/';
    if (scalesets && /^\/scalesets(\/|$)/.test(p)) return scalesets(String(method).toUpperCase(), p, body && typeof body === 'object' ? body : {});
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
