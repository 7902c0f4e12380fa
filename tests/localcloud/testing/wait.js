'use strict';
// Waiting in the local cloud's own tests: a sleep, a bounded poll, and a control call that must
// succeed. Outside test/ so that the test runner does not take it for a test file.
const assert = require('node:assert/strict');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls `fn` every 25 ms until it returns something truthy (returned), for at most `ms`.
async function until(fn, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(25);
  }
}

// A control call on the GitHub stand-in (`gh()` returns it: tests create it in `before`) that
// must answer 2xx; its JSON.
const controlOf = (gh) => async (method, p, body) => {
  const r = await gh().control(method, p, body);
  assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
};

module.exports = { sleep, until, controlOf };
