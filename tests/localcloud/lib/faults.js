'use strict';
// Fault knobs, one set per service, shared by the proxy and every stand-in. Each request asks
// `decide(service)` once; the answer says whether to fail it and how. Counters live in `stats`.
// Draws are independent (Math.random) unless a service's knobs say `spread: 1`: then its requests
// take their draws from a golden-ratio sequence with a random start, so faults fall evenly at the
// configured rates and a short run still meets its share (a test can then count on them).

const SERVICES = ['dynamodb', 'sqs', 'ec2', 'imds', 'github', 'logs'];
const KNOBS = ['errorRate', 'throttleRate', 'latencyMs', 'retryAfterRate', 'retryAfterSeconds'];
const GOLDEN = 0.6180339887498949; // 1/φ: successive draws spread evenly over [0, 1)

function zero() { return Object.fromEntries(KNOBS.map((k) => [k, 0])); }

class Faults {
  constructor(random = Math.random) {
    this.random = random;
    this.config = Object.fromEntries(SERVICES.map((s) => [s, zero()]));
    this.stats = {}; // service -> operation -> { requests, errors, throttles, retryAfters }
    this.spread = {}; // service -> { at } while its faults fall evenly
  }
  // Replaces a service's knobs; omitted knobs reset to 0. Throws on an unknown service or knob.
  set(service, knobs) {
    if (!SERVICES.includes(service)) throw new Error(`unknown service ${JSON.stringify(service)}`);
    const next = zero();
    let spread = false;
    for (const [k, v] of Object.entries(knobs || {})) {
      if (k === 'service') continue;
      if (k === 'spread') {
        if (v !== 0 && v !== 1) throw new Error('spread must be 0 or 1');
        spread = v === 1;
        continue;
      }
      if (!KNOBS.includes(k)) throw new Error(`unknown fault knob ${JSON.stringify(k)}`);
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`${k} must be a number >= 0`);
      if (k.endsWith('Rate') && v > 1) throw new Error(`${k} must be within [0, 1]`);
      next[k] = v;
    }
    this.config[service] = next;
    if (spread) this.spread[service] = { at: this.random() };
    else delete this.spread[service];
  }
  // The knobs; `spread` shows only when on.
  get(service) { return { ...this.config[service], ...(this.spread[service] ? { spread: 1 } : {}) }; }
  draw(service) {
    const s = this.spread[service];
    if (!s) return this.random();
    s.at = (s.at + GOLDEN) % 1;
    return s.at;
  }
  // Counts the request and says what to do with it: null (serve it), or
  // { kind: 'error' } (a 5xx), { kind: 'throttle' } (the service's throttling error),
  // { kind: 'retryAfter', seconds } (429/403 with retry-after; GitHub and any HTTP service).
  decide(service, operation = '*') {
    const c = this.config[service];
    const s = this.bump(service, operation, 'requests');
    let r = this.draw(service);
    if (r < c.errorRate) { s.errors++; return { kind: 'error' }; }
    r -= c.errorRate;
    if (r < c.throttleRate) { s.throttles++; return { kind: 'throttle' }; }
    r -= c.throttleRate;
    if (r < c.retryAfterRate) { s.retryAfters++; return { kind: 'retryAfter', seconds: c.retryAfterSeconds || 1 }; }
    return null;
  }
  // Resolves after the configured added latency.
  delay(service) {
    const ms = this.config[service].latencyMs;
    return ms > 0 ? new Promise((res) => setTimeout(res, ms)) : Promise.resolve();
  }
  bump(service, operation, field) {
    const bySvc = (this.stats[service] ||= {});
    const s = (bySvc[operation] ||= { requests: 0, errors: 0, throttles: 0, retryAfters: 0 });
    if (field === 'requests') s.requests++;
    return s;
  }
  resetStats() { this.stats = {}; }
}

module.exports = { Faults, SERVICES, KNOBS };
