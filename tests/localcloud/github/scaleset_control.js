'use strict';
// Control routes for runner scale sets (/_control/github/scalesets…): what tests read (sets,
// sessions, messages, statistics) and the faults they inject into the scale-set API.
// Documented in README.md ("Runner scale sets").

const FAULT_STATUSES = [429, 500, 502, 503, 'empty'];

function createScaleSetControl({ service, model }) {
  const { sets, faults, OPERATIONS } = service;
  const ok = (json, status = 200) => ({ status, json });
  const bad = (message, status = 400) => ({ status, json: { message } });

  const sessionView = (s) => s && {
    sessionId: s.id, ownerName: s.ownerName, createdAt: s.createdAt, lastSeen: s.lastSeen, openPolls: s.polls,
    live: sets.sessions.live(s), phantom: !!s.phantomUntil,
  };
  const view = (set) => ({
    id: set.id, name: set.name, owner: set.owner, repo: set.repo, runnerGroupId: set.group.id, runnerGroupName: set.group.name,
    labels: set.labels, RunnerSetting: set.runnerSetting, createdOn: set.createdOn, maxCapacity: set.maxCapacity,
    statistics: sets.statistics(set), session: sessionView(set.session),
    runners: sets.runnersOf(set).map((r) => ({ id: r.id, name: r.name, busy: r.busy, currentJob: r.currentJob })),
    messages: { pending: set.queue.pending.length, unacknowledged: set.queue.unacked.map((e) => e.messageId), acknowledged: set.queue.acked.length },
  });
  const messages = (set) => ({
    pending: set.queue.pending,
    unacknowledged: set.queue.unacked.map((e) => ({ messageId: e.messageId, deliveries: e.deliveries, jobs: e.jobs })),
    acknowledged: set.queue.acked,
  });
  const withSet = (fn) => (b, m) => {
    const set = sets.sets.get(Number(m[1]));
    return set ? fn(set, b) : bad(`no scale set ${m[1]}`, 404);
  };

  // The next `count` calls of `operation` answer `status` (429/503 with Retry-After:
  // retryAfterSeconds, default 1; `empty`: getMessage only, a 200 with an empty body).
  function addFault(b) {
    if (!OPERATIONS.includes(b.operation)) return bad(`operation must be one of ${OPERATIONS.join(', ')}`);
    if (!FAULT_STATUSES.includes(b.status)) return bad('status must be 429, 500, 502, 503 or "empty"');
    if (b.status === 'empty' && b.operation !== 'getMessage') return bad('"empty" is for getMessage only');
    const count = b.count ?? 1;
    if (!Number.isInteger(count) || count < 1 || count > 1000) return bad('count must be an integer 1..1000');
    const retryAfterSeconds = b.retryAfterSeconds ?? 1;
    if (!Number.isInteger(retryAfterSeconds) || retryAfterSeconds < 0) return bad('retryAfterSeconds must be an integer >= 0');
    const q = faults.get(b.operation) || [];
    for (let i = 0; i < count; i++) q.push({ status: b.status, retryAfterSeconds });
    faults.set(b.operation, q);
    return ok(Object.fromEntries(faults), 201);
  }

  const table = [
    ['GET', /^\/scalesets$/, () => ok({ scaleSets: [...sets.sets.values()].map(view) })],
    ['GET', /^\/scalesets\/faults$/, () => ok({ operations: OPERATIONS, pending: Object.fromEntries(faults) })],
    ['POST', /^\/scalesets\/faults$/, addFault],
    ['DELETE', /^\/scalesets\/faults$/, () => { faults.clear(); return ok({ pending: {} }); }],
    // Every admin token (runner-registration's) expires now: the next call with one answers 401.
    ['POST', /^\/scalesets\/expire-admin-tokens$/, () => {
      let n = 0;
      for (const t of model.adminTokens.values()) if (t.expiresAt > Date.now()) { t.expiresAt = Date.now(); n++; }
      return ok({ expired: n });
    }],
    ['GET', /^\/scalesets\/(\d+)$/, withSet((set) => ok(view(set)))],
    ['GET', /^\/scalesets\/(\d+)\/messages$/, withSet((set) => ok(messages(set)))],
    ['GET', /^\/scalesets\/(\d+)\/statistics$/, withSet((set) => ok(sets.statistics(set)))],
    // The service deletes the set behind the client's back (as it does with sets unused for a
    // week): busy runners finish their jobs, the client's next call answers 404.
    ['DELETE', /^\/scalesets\/(\d+)$/, withSet((set) => { sets.remove(set, { force: true }); return ok({ deleted: set.id }); })],
    // The session's queue token expires now: its next queue call answers 401 (then refresh).
    ['POST', /^\/scalesets\/(\d+)\/expire-queue-token$/, withSet((set) => (sets.sessions.expireToken(set) ? ok({ id: set.id }) : bad('the set has no session', 409)))],
    // The service forgets the set's session, as GitHub's broker was reported to evict sessions: its
    // open polls and its queue token answer 401, its refresh 404 (`scaleSetLostSession`), its
    // delete 400; a new session may be created at once.
    ['POST', /^\/scalesets\/(\d+)\/drop-session$/, withSet((set) => {
      const s = set.session;
      if (!s || s.phantomUntil) return bad('the set has no session', 409);
      sets.sessions.end(set, 401);
      return ok({ id: set.id, sessionId: s.id });
    })],
    // An orphaned session (a listener that died without deleting it) live for `ms` (default
    // scaleSetSessionIdleMs): session creates answer 409 until it lapses.
    ['POST', /^\/scalesets\/(\d+)\/session-conflict$/, withSet((set, b) => {
      const ms = b.ms ?? model.settings.scaleSetSessionIdleMs;
      if (typeof ms !== 'number' || ms < 0) return bad('ms must be a number >= 0');
      return sets.sessions.phantom(set, ms) ? ok({ id: set.id, session: sessionView(set.session) }) : bad('a session is live already', 409);
    })],
  ];

  return function control(method, p, body) {
    for (const [m, re, fn] of table) {
      const match = re.exec(p);
      if (match && m === method) return fn(body, match);
    }
    return bad(`no control route ${method} ${p}`, 404);
  };
}

module.exports = { createScaleSetControl };
