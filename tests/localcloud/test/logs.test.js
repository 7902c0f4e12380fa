'use strict';
// The CloudWatch Logs stand-in, driven by the real AWS SDK client (@aws-sdk/client-cloudwatch-logs)
// through the SigV4-checking proxy: groups, streams, PutLogEvents and its rules, the service's
// error codes, faults, and the control route that reads the events back.
const test = require('node:test');
const assert = require('node:assert/strict');
const {
  CloudWatchLogsClient, CreateLogGroupCommand, CreateLogStreamCommand, PutLogEventsCommand, GetLogEventsCommand,
  DescribeLogGroupsCommand, DescribeLogStreamsCommand, PutRetentionPolicyCommand, DeleteLogGroupCommand,
} = require('@aws-sdk/client-cloudwatch-logs');
const { launchLocalCloud } = require('../lib/launch');

let cloud;
let ready;

test.before(async () => {
  cloud = await launchLocalCloud();
  ready = cloud.ready;
});
test.after(async () => { if (cloud) await cloud.stop(); });

const logs = (credentials = ready.credentials, extra = {}) => new CloudWatchLogsClient({ region: ready.region,
  endpoint: ready.endpoints.logs, credentials, maxAttempts: 1, ...extra });

async function control(method, route, body) {
  const res = await fetch(ready.endpoints.control + route, { method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(5000) });
  return { status: res.status, json: await res.json() };
}

async function errorOf(promise) {
  try { await promise; } catch (err) { return { name: err.name, status: err.$metadata?.httpStatusCode, message: err.message }; }
  throw new Error('expected the call to fail');
}

test('the ready line and health name the logs endpoint', async () => {
  assert.match(ready.endpoints.logs, /^http:\/\/127\.0\.0\.1:\d+$/);
  const { json } = await control('GET', '/_control/health');
  assert.equal(json.services.logs, true);
});

test('groups, streams, events: written with the SDK, read back with the SDK and the control route', async () => {
  const c = logs();
  await c.send(new CreateLogGroupCommand({ logGroupName: '/runpool/metrics' }));
  await c.send(new CreateLogStreamCommand({ logGroupName: '/runpool/metrics', logStreamName: 'runpoolctl/ci/host' }));
  const t = Date.now();
  const put = await c.send(new PutLogEventsCommand({ logGroupName: '/runpool/metrics', logStreamName: 'runpoolctl/ci/host',
    logEvents: [{ timestamp: t - 1000, message: '{"a":1}' }, { timestamp: t, message: '{"b":2}' }] }));
  assert.equal(put.rejectedLogEventsInfo, undefined);

  const got = await c.send(new GetLogEventsCommand({ logGroupName: '/runpool/metrics',
    logStreamName: 'runpoolctl/ci/host', startFromHead: true }));
  assert.deepEqual(got.events.map((e) => [e.timestamp, e.message]), [[t - 1000, '{"a":1}'], [t, '{"b":2}']]);
  assert.ok(got.events.every((e) => e.ingestionTime >= t - 1000));

  const { status, json } = await control('GET', `/_control/logs/events?group=${encodeURIComponent('/runpool/metrics')}`);
  assert.equal(status, 200);
  assert.deepEqual(json.events.map((e) => [e.logStreamName, e.message]),
    [['runpoolctl/ci/host', '{"a":1}'], ['runpoolctl/ci/host', '{"b":2}']]);

  const groups = await c.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: '/runpool/' }));
  assert.deepEqual(groups.logGroups.map((g) => g.logGroupName), ['/runpool/metrics']);
  const streams = await c.send(new DescribeLogStreamsCommand({ logGroupName: '/runpool/metrics' }));
  assert.equal(streams.logStreams[0].logStreamName, 'runpoolctl/ci/host');
  assert.equal(streams.logStreams[0].lastEventTimestamp, t);
});

test('existing and missing resources get the service error codes', async () => {
  const c = logs();
  await c.send(new CreateLogGroupCommand({ logGroupName: 'lc-dup' }));
  assert.equal((await errorOf(c.send(new CreateLogGroupCommand({ logGroupName: 'lc-dup' })))).name,
    'ResourceAlreadyExistsException');
  await c.send(new CreateLogStreamCommand({ logGroupName: 'lc-dup', logStreamName: 's' }));
  const again = await errorOf(c.send(new CreateLogStreamCommand({ logGroupName: 'lc-dup', logStreamName: 's' })));
  assert.deepEqual([again.name, again.status], ['ResourceAlreadyExistsException', 400]);
  const noGroup = await errorOf(c.send(new CreateLogStreamCommand({ logGroupName: 'lc-none', logStreamName: 's' })));
  assert.deepEqual([noGroup.name, noGroup.message], ['ResourceNotFoundException', 'The specified log group does not exist.']);
  const noStream = await errorOf(c.send(new PutLogEventsCommand({ logGroupName: 'lc-dup', logStreamName: 'none',
    logEvents: [{ timestamp: Date.now(), message: 'x' }] })));
  assert.deepEqual([noStream.name, noStream.message], ['ResourceNotFoundException', 'The specified log stream does not exist.']);
  assert.equal((await errorOf(c.send(new CreateLogGroupCommand({ logGroupName: 'has space' })))).name,
    'InvalidParameterException');
  await c.send(new DeleteLogGroupCommand({ logGroupName: 'lc-dup' }));
  assert.equal((await errorOf(c.send(new DeleteLogGroupCommand({ logGroupName: 'lc-dup' })))).name,
    'ResourceNotFoundException');
});

test('PutLogEvents enforces order and span, and reports events too old, too new or expired', async () => {
  const c = logs();
  await c.send(new CreateLogGroupCommand({ logGroupName: 'lc-rules' }));
  await c.send(new CreateLogStreamCommand({ logGroupName: 'lc-rules', logStreamName: 's' }));
  const t = Date.now();
  const put = (logEvents) => c.send(new PutLogEventsCommand({ logGroupName: 'lc-rules', logStreamName: 's', logEvents }));
  const unordered = await errorOf(put([{ timestamp: t, message: 'b' }, { timestamp: t - 1, message: 'a' }]));
  assert.deepEqual([unordered.name, unordered.message],
    ['InvalidParameterException', 'Log events in a single PutLogEvents request must be in chronological order.']);
  const wide = await errorOf(put([{ timestamp: t - 25 * 3600e3, message: 'a' }, { timestamp: t, message: 'b' }]));
  assert.equal(wide.name, 'InvalidParameterException');
  assert.equal((await errorOf(put([]))).name, 'InvalidParameterException');

  const day = 24 * 3600e3;
  const old = await put([{ timestamp: t - 15 * day, message: 'old' }, { timestamp: t - 15 * day + 1, message: 'old' }]);
  assert.deepEqual(old.rejectedLogEventsInfo, { tooOldLogEventEndIndex: 2 });
  const r = await put([{ timestamp: t, message: 'now' }, { timestamp: t + 3 * 3600e3, message: 'future' }]);
  assert.deepEqual(r.rejectedLogEventsInfo, { tooNewLogEventStartIndex: 1 });
  await c.send(new PutRetentionPolicyCommand({ logGroupName: 'lc-rules', retentionInDays: 1 }));
  const e = await put([{ timestamp: t - 25 * 3600e3, message: 'expired' }, { timestamp: t - 2 * 3600e3, message: 'kept' }]);
  assert.deepEqual(e.rejectedLogEventsInfo, { expiredLogEventEndIndex: 1 });
  const { json } = await control('GET', '/_control/logs/events?group=lc-rules&stream=s');
  assert.deepEqual(json.events.map((x) => x.message), ['kept', 'now']);
  assert.equal((await control('GET', '/_control/logs/events?group=lc-rules&stream=nope')).status, 404);
});

test('bad credentials are refused by the proxy; faults fail calls in the service dialect', async () => {
  const bad = await errorOf(logs({ accessKeyId: 'AKIDNOPE', secretAccessKey: 'x' })
    .send(new DescribeLogGroupsCommand({})));
  assert.deepEqual([bad.name, bad.status], ['UnrecognizedClientException', 400]);
  const mismatch = await errorOf(logs({ accessKeyId: ready.credentials.accessKeyId, secretAccessKey: 'wrong' })
    .send(new DescribeLogGroupsCommand({})));
  assert.equal(mismatch.name, 'InvalidSignatureException');

  assert.equal((await control('POST', '/_control/faults', { service: 'logs', throttleRate: 1 })).status, 200);
  try {
    const t = await errorOf(logs().send(new DescribeLogGroupsCommand({})));
    assert.deepEqual([t.name, t.status], ['ThrottlingException', 400]);
  } finally {
    await control('POST', '/_control/faults', { service: 'logs' });
  }
  const { json } = await control('GET', '/_control/stats');
  assert.ok(json.logs.DescribeLogGroups.throttles >= 1);
  await logs().send(new DescribeLogGroupsCommand({}));  // healthy again
});
