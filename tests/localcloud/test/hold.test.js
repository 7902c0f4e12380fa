'use strict';
// Crash points (lib/hold.js, /_control/hold): the k-th matching request of a caller is held before
// it is served (no effect) or after (effect done, answer withheld), until the test releases or
// drops it; counting mode lists the steps of a run. Checked here with the AWS SDK and plain HTTP,
// against AWS, GitHub's REST API, the runner protocol and the scale-set API.
const test = require('node:test');
const assert = require('node:assert/strict');
const { DynamoDBClient, CreateTableCommand, PutItemCommand, GetItemCommand } = require('@aws-sdk/client-dynamodb');
const { Holds } = require('../lib/hold');
const { launchLocalCloud } = require('../lib/launch');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('Holds: counts matching requests only, holds the nth, rejects bad specs', async () => {
  const h = new Holds();
  assert.equal(h.gate({ service: 'sqs', identities: ['controller'], operation: 'SendMessage' }), null, 'unarmed');
  assert.throws(() => h.arm({ nth: 1 }), /caller/);
  assert.throws(() => h.arm({ caller: 'controller', nth: -1 }), /nth/);
  assert.throws(() => h.arm({ caller: 'controller', nth: 1, when: 'during' }), /when/);
  assert.throws(() => h.arm({ caller: 'controller', nth: 1, bodyMatch: '(' }), /bodyMatch/);
  assert.throws(() => h.arm({ caller: 'controller', nth: 1, operations: 'PutItem' }), /operations/);

  h.arm({ caller: ['controller', 'github'], operations: ['UpdateItem', 'POST /x'], bodyMatch: 'signal', nth: 2,
    when: 'after' });
  const req = (identities, operation, body) => h.gate({ service: 's', identities, operation, body });
  assert.equal(req(['instance:i-1', 'ASIA1'], 'UpdateItem', 'signal'), null, 'another caller');
  assert.equal(req(['controller'], 'GetItem', 'signal'), null, 'another operation');
  assert.equal(req(['controller'], 'UpdateItem', Buffer.from('heartbeat')), null, 'body does not match');
  assert.equal(req(['controller'], 'UpdateItem', Buffer.from('"signal"')), null, 'step 1 passes');
  const g = req(['github'], 'POST /x', '{"signal":1}');
  assert.equal(g.when, 'after');
  assert.equal(req(['controller'], 'UpdateItem', 'signal'), null, 'only the nth is held');
  let st = h.status();
  assert.equal(st.count, 3);
  assert.deepEqual(st.steps.map((s) => s.caller), ['controller', 'github', 'controller']);
  assert.equal(st.held.n, 2);
  assert.equal(st.held.ready, false, 'not yet at its holding point');
  const decision = g.hold();
  assert.equal(h.status().held.ready, true);
  assert.equal(h.decide('forward'), true);
  assert.equal(await decision, 'forward');
  assert.equal(h.decide('drop'), false, 'already decided');

  h.arm({ caller: 'controller', nth: 0 });
  for (let i = 0; i < 3; i++) assert.equal(req(['controller'], 'PutItem', ''), null, 'count only');
  assert.equal(h.status().count, 3);
  assert.equal(h.status().held, null);

  h.arm({ caller: 'controller', nth: 1 });
  const dropped = req(['controller'], 'PutItem', '');
  h.disarm();
  assert.equal(await dropped.hold(), 'drop', 'disarmed before it reached its holding point: dropped');
  assert.equal(h.status().armed, false);
});

test('/_control/hold: before (no effect) and after (effect, no answer), released or dropped; GitHub steps too',
  async (t) => {
    const cloud = await launchLocalCloud();
    t.after(() => cloud.stop());
    const { ready } = cloud;
    const control = async (method, route, body) => {
      const res = await fetch(ready.endpoints.control + route, { method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(5000) });
      return { status: res.status, json: await res.json() };
    };
    const db = new DynamoDBClient({ region: ready.region, endpoint: ready.endpoints.dynamodb,
      credentials: ready.credentials, maxAttempts: 1 });
    await db.send(new CreateTableCommand({ TableName: 'holds', KeySchema: [{ AttributeName: 'k', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'k', AttributeType: 'S' }], BillingMode: 'PAY_PER_REQUEST' }));
    const put = (k) => db.send(new PutItemCommand({ TableName: 'holds', Item: { k: { S: k } } }));
    const exists = async (k) => !!(await db.send(new GetItemCommand({ TableName: 'holds', Key: { k: { S: k } },
      ConsistentRead: true }))).Item;
    const heldReady = async () => {
      for (let i = 0; i < 100; i++) {
        const st = (await control('GET', '/_control/hold')).json;
        if (st.held?.ready) return st;
        await sleep(50);
      }
      throw new Error('nothing held');
    };

    assert.equal((await control('POST', '/_control/hold', { caller: 'controller', nth: 1, when: 'later' })).status, 400);
    assert.equal((await control('POST', '/_control/hold/release')).status, 409, 'nothing held');

    // before + drop: the caller's connection is closed, the item never written.
    let armed = await control('POST', '/_control/hold', { caller: ready.credentials.accessKeyId,
      operations: ['PutItem'], nth: 2, when: 'before' });
    assert.equal(armed.status, 200);
    await put('a1');
    const p2 = put('a2').then(() => 'answered', (e) => `failed: ${e.name}`);
    let st = await heldReady();
    assert.deepEqual([st.held.n, st.held.service, st.held.operation, st.held.caller], [2, 'dynamodb', 'PutItem',
      ready.credentials.accessKeyId]);
    assert.equal(await exists('a2'), false, 'held before: not yet written');
    assert.deepEqual((await control('DELETE', '/_control/hold')).json, { dropped: true });
    assert.match(await p2, /^failed/);
    assert.equal(await exists('a2'), false, 'dropped before: never written');
    assert.equal(await exists('a1'), true);

    // after + drop: written, the caller never learns.
    await control('POST', '/_control/hold', { caller: 'controller', operations: ['PutItem'], nth: 1, when: 'after' });
    const p3 = put('a3').then(() => 'answered', (e) => `failed: ${e.name}`);
    await heldReady();
    assert.equal(await exists('a3'), true, 'held after: already written');
    await control('DELETE', '/_control/hold');
    assert.match(await p3, /^failed/);

    // before + release: it goes on and is answered.
    await control('POST', '/_control/hold', { caller: 'controller', operations: ['PutItem'], nth: 1 });
    const p4 = put('a4').then(() => 'answered', (e) => `failed: ${e.name}`);
    await heldReady();
    assert.equal((await control('POST', '/_control/hold/release')).status, 200);
    assert.equal(await p4, 'answered');
    assert.equal(await exists('a4'), true);

    // Counting across AWS and GitHub: the controller's steps in order, nothing held.
    await control('POST', '/_control/github/pats', { token: 'ghp_hold_pat_0001', owners: ['acme'] });
    await control('POST', '/_control/hold', { caller: ['controller', 'github'], operations: ['PutItem',
      'POST /repos/{owner}/{repo}/actions/runners/registration-token'], nth: 0 });
    const gh = (method, path) => fetch(`${ready.endpoints.github}${path}`, { method,
      headers: { authorization: 'Bearer ghp_hold_pat_0001', accept: 'application/vnd.github+json' },
      signal: AbortSignal.timeout(5000) });
    await put('b1');
    assert.equal((await gh('POST', '/repos/acme/app/actions/runners/registration-token')).status, 201);
    assert.equal((await gh('GET', '/repos/acme/app/actions/runners')).status, 200, 'not a listed operation');
    await put('b2');
    st = (await control('GET', '/_control/hold')).json;
    assert.equal(st.count, 3);
    assert.deepEqual(st.steps.map((s) => `${s.service} ${s.operation}`), ['dynamodb PutItem',
      'github POST /repos/{owner}/{repo}/actions/runners/registration-token', 'dynamodb PutItem']);

    // A GitHub step held after its effect: the token was issued, the caller gets no answer.
    await control('POST', '/_control/hold', { caller: 'github', nth: 1, when: 'after' });
    const tok = gh('POST', '/repos/acme/app/actions/runners/registration-token').then((r) => r.status, (e) => e.name);
    st = await heldReady();
    assert.equal(st.held.operation, 'POST /repos/{owner}/{repo}/actions/runners/registration-token');
    await control('DELETE', '/_control/hold');
    assert.notEqual(await tok, 201, 'the answer never came');
    const calls = (await control('GET', '/_control/github/calls')).json;
    assert.ok(JSON.stringify(calls).includes('registration-token'), 'the held call was served');

    // The runner protocol (config.sh, the Listener) is the caller `runner`; released, it is answered.
    await control('POST', '/_control/hold', { caller: 'runner', operations: ['POST /api/v3/actions/runner-registration'],
      nth: 1 });
    const reg = fetch(`${ready.endpoints.githubWeb}/api/v3/actions/runner-registration`, { method: 'POST',
      headers: { authorization: 'RemoteAuth not-a-token', 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://github.com/acme/app', runner_event: 'register' }),
      signal: AbortSignal.timeout(5000) }).then((r) => r.status, (e) => e.name);
    st = await heldReady();
    assert.deepEqual([st.held.caller, st.held.operation], ['runner', 'POST /api/v3/actions/runner-registration']);
    await control('POST', '/_control/hold/release');
    assert.equal(await reg, 404, 'answered once released (an unknown token)');
    await control('DELETE', '/_control/hold');

    // The scale-set API (runpoolctl serve, GitHub's scale-set client) is the caller `scaleset`, its
    // steps named by operation: held before and dropped, the set is never made; after, it is.
    const regToken = await (await gh('POST', '/repos/acme/app/actions/runners/registration-token')).json();
    const disc = await (await fetch(`${ready.endpoints.githubWeb}/api/v3/actions/runner-registration`, { method: 'POST',
      headers: { authorization: `RemoteAuth ${regToken.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${ready.endpoints.githubWeb}/acme/app`, runner_event: 'register' }),
      signal: AbortSignal.timeout(5000) })).json();
    const sets = (method, p, body) => fetch(`${disc.url}/_apis/runtime/runnerscalesets${p}`, { method,
      headers: { authorization: `Bearer ${disc.token}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body), signal: AbortSignal.timeout(5000) });
    const setExists = async (name) => (await (await sets('GET', `?runnerGroupId=1&name=${name}`)).json()).count === 1;
    for (const when of ['before', 'after']) {
      await control('POST', '/_control/hold', { caller: 'scaleset', operations: ['createScaleSet'], nth: 1, when });
      const made = sets('POST', '', { name: `held-${when}`, runnerGroupId: 1 }).then((r) => r.status, (e) => e.name);
      st = await heldReady();
      assert.deepEqual([st.held.service, st.held.caller, st.held.operation], ['github', 'scaleset', 'createScaleSet']);
      await control('DELETE', '/_control/hold');
      assert.notEqual(await made, 200, 'the answer never came');
      assert.equal(await setExists(`held-${when}`), when === 'after', `held ${when}`);
    }
  });
