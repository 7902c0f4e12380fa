'use strict';
// An Octokit call that must fail with HTTP `status` (and a message matching `re`); the error.
// Outside test/ so that the test runner does not take it for a test file.
const assert = require('node:assert/strict');

async function rejects(p, status, re) {
  const err = await p.then(() => null, (e) => e);
  assert.ok(err, `expected HTTP ${status}`);
  assert.equal(err.status, status, err.message);
  if (re) assert.match(err.response.data.message, re);
  return err;
}

module.exports = { rejects };
