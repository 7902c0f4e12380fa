'use strict';
// The fault knobs' draws: independent by default; with `spread: 1` evenly spread at the
// configured rates, so a short run meets its share of faults and never two in a row at 10%.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Faults } = require('../lib/faults');

function run(faults, service, n) {
  const kinds = [];
  for (let i = 0; i < n; i++) {
    const d = faults.decide(service, 'Op');
    kinds.push(d ? d.kind : 'ok');
  }
  return kinds;
}

test('spread: the configured share of each kind, evenly, from a random start', () => {
  const faults = new Faults();
  faults.set('sqs', { errorRate: 0.04, throttleRate: 0.04, retryAfterRate: 0.02, retryAfterSeconds: 1, spread: 1 });
  assert.deepEqual(faults.get('sqs'), { errorRate: 0.04, throttleRate: 0.04, latencyMs: 0, retryAfterRate: 0.02,
    retryAfterSeconds: 1, spread: 1 });
  const kinds = run(faults, 'sqs', 1000);
  const count = (k) => kinds.filter((x) => x === k).length;
  // A golden-ratio sequence puts within a couple of draws of n·rate into any interval.
  for (const [k, want] of [['error', 40], ['throttle', 40], ['retryAfter', 20]]) {
    assert.ok(Math.abs(count(k) - want) <= 3, `${k}: ${count(k)} of 1000, want ${want}`);
  }
  // Every stretch of 20 requests meets at least one fault; no two faults in a row.
  for (let i = 0; i + 20 <= kinds.length; i++) assert.ok(kinds.slice(i, i + 20).some((k) => k !== 'ok'), `at ${i}`);
  for (let i = 1; i < kinds.length; i++) assert.ok(kinds[i] === 'ok' || kinds[i - 1] === 'ok', `two in a row at ${i}`);
  const s = faults.stats.sqs.Op;
  assert.deepEqual([s.requests, s.errors, s.throttles, s.retryAfters], [1000, count('error'), count('throttle'), count('retryAfter')]);
});

test('spread is per service, off unless asked, and reset with the other knobs', () => {
  let draws = 0;
  const faults = new Faults(() => { draws++; return 0.99; }); // independent draws never fault here
  faults.set('ec2', { errorRate: 0.1 });
  assert.deepEqual(run(faults, 'ec2', 50).filter((k) => k !== 'ok'), []);
  assert.equal(draws, 50);
  assert.equal('spread' in faults.get('ec2'), false);
  faults.set('ec2', { errorRate: 0.1, spread: 1 }); // one draw for the start
  const errors = run(faults, 'ec2', 50).filter((k) => k === 'error').length;
  assert.ok(errors >= 4 && errors <= 6, `${errors} errors in 50 at 10%`);
  assert.equal(draws, 51, 'spread draws do not use the random source');
  assert.deepEqual(run(faults, 'dynamodb', 10), Array(10).fill('ok'), 'other services untouched');
  faults.set('ec2', { errorRate: 0.1 });
  assert.equal('spread' in faults.get('ec2'), false, 'omitted: off again');
  assert.deepEqual(run(faults, 'ec2', 20).filter((k) => k !== 'ok'), []);
  for (const bad of [2, -1, true, '1', 0.5]) assert.throws(() => faults.set('ec2', { spread: bad }), /spread must be 0 or 1/);
  faults.set('ec2', { spread: 0 });
  assert.equal('spread' in faults.get('ec2'), false);
});
