'use strict';
// Crash points (tests only): hold the k-th matching request of a caller so a test can kill -9 the
// caller at that exact step. `before`: the request waits before it is served (its effect never
// happens unless released). `after`: it is served and its answer withheld (the effect happened;
// the caller never learns). The test then releases (the request goes on) or drops it (the
// connection is closed, nothing more happens). nth 0 only counts, so a test can first count the
// steps of an uninterrupted run.
//
// A request's identities: for AWS, its principal (`controller`, `instance:<id>`) and access key
// id; for the GitHub stand-in, `github` (REST calls with credentials: the controller's),
// `runner` (the runner protocol: config.sh, the Listener) or `scaleset` (the scale-set API: serve,
// GitHub's scale-set client). Its operation: the AWS operation (`UpdateItem`), the GitHub route
// (`POST /repos/{owner}/{repo}/actions/runners/registration-token`) or the scale-set operation
// (`acquireJobs`).

const WHEN = ['before', 'after'];
const MAX_STEPS = 1000; // steps kept for the report

class Holds {
  constructor() { this.disarm(); }

  // spec: { caller: string | [string], operations?: [string], bodyMatch?: regex source, nth, when }.
  // Re-arming drops a request still held by the previous spec. Throws on a bad spec.
  arm(spec) {
    if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new Error('body must be a JSON object');
    const callers = [].concat(spec.caller ?? []);
    if (!callers.length || !callers.every((c) => typeof c === 'string' && c)) {
      throw new Error('caller must be a non-empty string or a list of them');
    }
    const ops = spec.operations ?? null;
    if (ops !== null && !(Array.isArray(ops) && ops.every((o) => typeof o === 'string' && o))) {
      throw new Error('operations must be a list of operation names');
    }
    let bodyMatch = null;
    if (spec.bodyMatch !== undefined && spec.bodyMatch !== null) {
      if (typeof spec.bodyMatch !== 'string') throw new Error('bodyMatch must be a regular expression (string)');
      try { bodyMatch = new RegExp(spec.bodyMatch); } catch (err) { throw new Error(`bodyMatch: ${err.message}`); }
    }
    if (!Number.isInteger(spec.nth) || spec.nth < 0) throw new Error('nth must be an integer >= 0 (0: count only)');
    const when = spec.when ?? 'before';
    if (!WHEN.includes(when)) throw new Error(`when must be one of ${WHEN.join(', ')}`);
    this.disarm();
    this.spec = { callers, operations: ops, bodyMatch, nth: spec.nth, when };
  }

  // Drops a held request (if any) and forgets the spec and the counts.
  disarm() {
    if (this.held && !this.held.decided) this.decide('drop');
    this.spec = null;
    this.count = 0;
    this.steps = [];
    this.held = null;
  }

  // Called once per request. null: serve it as usual. Else a gate: { when, hold(): Promise<'forward'|'drop'> };
  // the front door calls hold() at the point it holds at (before serving, or with the answer in hand).
  gate({ service, identities, operation, body }) {
    const s = this.spec;
    if (!s) return null;
    const caller = identities.find((i) => i && s.callers.includes(i));
    if (!caller) return null;
    if (s.operations && !s.operations.includes(operation)) return null;
    if (s.bodyMatch && !s.bodyMatch.test(Buffer.isBuffer(body) ? body.toString('utf8') : String(body ?? ''))) return null;
    const n = ++this.count;
    if (this.steps.length < MAX_STEPS) this.steps.push({ n, service, operation, caller });
    if (n !== s.nth) return null;
    const held = { n, service, operation, caller, when: s.when, ready: false, since: null, decided: null };
    this.held = held;
    const decision = new Promise((resolve) => { held.resolve = resolve; });
    return {
      when: s.when,
      hold: () => {
        if (held.decided) return Promise.resolve(held.decided); // dropped before it got here
        held.ready = true;
        held.since = new Date().toISOString();
        return decision;
      },
    };
  }

  // Lets the held request go on ('forward') or closes it ('drop'); false when nothing is held.
  decide(what) {
    const h = this.held;
    if (!h || h.decided) return false;
    h.decided = what;
    h.resolve?.(what);
    return true;
  }

  status() {
    const s = this.spec;
    const h = this.held;
    return {
      armed: !!s,
      ...(s ? { caller: s.callers, operations: s.operations, bodyMatch: s.bodyMatch?.source ?? null, nth: s.nth,
        when: s.when } : {}),
      count: this.count,
      steps: this.steps,
      held: h ? { n: h.n, service: h.service, operation: h.operation, caller: h.caller, when: h.when,
        ready: h.ready, since: h.since, decided: h.decided } : null,
    };
  }
}

// One registry per local cloud, found through the fault knobs every front door already shares.
const registries = new WeakMap();
function holdsOf(faults) {
  if (!faults) return null;
  let h = registries.get(faults);
  if (!h) registries.set(faults, (h = new Holds()));
  return h;
}

module.exports = { Holds, holdsOf, WHEN };
