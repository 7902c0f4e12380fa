'use strict';
// The STS stand-in and the container credentials endpoint, checked with the AWS SDK for
// JavaScript v3 (@aws-sdk/client-sts, and the SDK's own container credential provider): the
// answers parse as STS's, the errors come out as the SDK's modelled exceptions, and the
// credentials issued are accepted by the SigV4 proxies (DynamoDB here).
const test = require('node:test');
const assert = require('node:assert/strict');
const { STSClient, AssumeRoleWithWebIdentityCommand, AssumeRoleCommand, GetCallerIdentityCommand } = require('@aws-sdk/client-sts');
const { DynamoDBClient, ListTablesCommand } = require('@aws-sdk/client-dynamodb');
const { fromHttp } = require('@aws-sdk/credential-provider-http');
const { launchLocalCloud } = require('../lib/launch');

let cloud;
let ready;
test.before(async () => {
  cloud = await launchLocalCloud();
  ready = cloud.ready;
});
test.after(async () => { if (cloud) await cloud.stop(); });

const ROLE = 'arn:aws:iam::000000000000:role/runpoolctl';
const neverSigned = async () => { throw new Error('AssumeRoleWithWebIdentity must not need credentials'); };
const sts = (credentials = neverSigned) => new STSClient({ region: ready.region, endpoint: ready.endpoints.sts,
  credentials, maxAttempts: 1 });
const ddb = (credentials) => new DynamoDBClient({ region: ready.region, endpoint: ready.endpoints.dynamodb, credentials });

async function post(url, body) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body), signal: AbortSignal.timeout(5000) });
  return { status: res.status, json: await res.json() };
}
const token = async (opts = {}) => (await post(`${ready.endpoints.sts}/_localcloud/web-identity-token`, opts)).json.token;

async function errorOf(promise) {
  try { await promise; } catch (err) { return { name: err.name, status: err.$metadata?.httpStatusCode, message: err.message }; }
  throw new Error('expected the call to fail');
}

const sdkCredentials = (c) => ({ accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey,
  sessionToken: c.SessionToken, expiration: c.Expiration });

test('AssumeRoleWithWebIdentity: an unsigned call, the role session the DynamoDB proxy accepts', async () => {
  const out = await sts().send(new AssumeRoleWithWebIdentityCommand({ RoleArn: ROLE, RoleSessionName: 'ci-run-1',
    WebIdentityToken: await token() }));
  assert.match(out.Credentials.AccessKeyId, /^ASIA[0-9A-F]{16}$/);
  assert.ok(out.Credentials.Expiration instanceof Date);
  const ttl = out.Credentials.Expiration.getTime() - Date.now();
  assert.ok(ttl > 3500_000 && ttl <= 3600_000, `an hour by default, not ${ttl} ms`);
  assert.equal(out.AssumedRoleUser.Arn, 'arn:aws:sts::000000000000:assumed-role/runpoolctl/ci-run-1');
  assert.equal(out.AssumedRoleUser.AssumedRoleId, 'AROA4LOCALCLOUDCONTROL:ci-run-1');
  assert.equal(out.SubjectFromWebIdentityToken, 'repo:acme/app:environment:runpool');
  assert.equal(out.Audience, 'sts.amazonaws.com');

  const creds = sdkCredentials(out.Credentials);
  assert.ok(Array.isArray((await ddb(creds).send(new ListTablesCommand({}))).TableNames));
  const me = await sts(creds).send(new GetCallerIdentityCommand({}));
  assert.equal(me.Arn, 'arn:aws:sts::000000000000:assumed-role/runpoolctl/ci-run-1');
  assert.equal(me.UserId, 'AROA4LOCALCLOUDCONTROL:ci-run-1');
  assert.equal(me.Account, '000000000000');

  const short = await sts().send(new AssumeRoleWithWebIdentityCommand({ RoleArn: ROLE, RoleSessionName: 'short',
    WebIdentityToken: await token(), DurationSeconds: 900 }));
  assert.ok(short.Credentials.Expiration.getTime() - Date.now() <= 900_000);
});

test('AssumeRoleWithWebIdentity refuses tokens and roles as STS does, in its error dialect', async () => {
  const call = async (params) => errorOf(sts().send(new AssumeRoleWithWebIdentityCommand({ RoleArn: ROLE,
    RoleSessionName: 'ci', ...params })));
  const good = await token();
  const [h, p, s] = good.split('.');
  const forgedPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url')), sub: 'repo:evil/x' }))
    .toString('base64url');
  const cases = [
    [{ WebIdentityToken: 'not-a-jwt' }, 'InvalidIdentityTokenException', 400],
    [{ WebIdentityToken: `${h}.${forgedPayload}.${s}` }, 'InvalidIdentityTokenException', 400],
    [{ WebIdentityToken: await token({ iss: 'https://elsewhere.example' }) }, 'InvalidIdentityTokenException', 400],
    [{ WebIdentityToken: await token({ aud: 'someone-else' }) }, 'InvalidIdentityTokenException', 400],
    [{ WebIdentityToken: await token({ ttlMs: -60_000 }) }, 'ExpiredTokenException', 400],
    [{ WebIdentityToken: await token({ sub: 'repo:other/app:ref:refs/heads/main' }) }, 'AccessDenied', 403],
    [{ WebIdentityToken: good, RoleArn: 'arn:aws:iam::000000000000:role/absent' }, 'AccessDenied', 403],
    [{ WebIdentityToken: good, RoleArn: 'arn:aws:iam::111111111111:role/runpoolctl' }, 'AccessDenied', 403],
    [{ WebIdentityToken: good, RoleSessionName: 'has space' }, 'ValidationError', 400],
    [{ WebIdentityToken: good, DurationSeconds: 60 }, 'ValidationError', 400],
  ];
  for (const [params, name, status] of cases) {
    const e = await call(params);
    assert.deepEqual([e.name, e.status], [name, status], `${JSON.stringify(params).slice(0, 120)}: ${e.message}`);
    assert.ok(!e.message.includes(good.split('.')[2]), 'no token in the message');
  }
  assert.match((await call({ WebIdentityToken: await token({ ttlMs: -60_000 }) })).message, /^Token expired: current date\/time \d+ must be before/);
});

test('AssumeRole: signed by the controller, refused to instances and to bad signatures', async () => {
  const controller = ready.credentials;
  const out = await sts(controller).send(new AssumeRoleCommand({ RoleArn: ROLE, RoleSessionName: 'operator' }));
  assert.equal(out.AssumedRoleUser.Arn, 'arn:aws:sts::000000000000:assumed-role/runpoolctl/operator');
  assert.ok(Array.isArray((await ddb(sdkCredentials(out.Credentials)).send(new ListTablesCommand({}))).TableNames));
  // A role session may assume the role again (a chain), as the controller's own.
  const chained = await sts(sdkCredentials(out.Credentials)).send(new AssumeRoleCommand({ RoleArn: ROLE, RoleSessionName: 'chained' }));
  assert.match(chained.Credentials.AccessKeyId, /^ASIA/);

  const inst = (await post(`${ready.endpoints.control}/_control/credentials/instance`, { instanceId: 'i-0123456789abcdef0' })).json;
  const instance = { accessKeyId: inst.accessKeyId, secretAccessKey: inst.secretAccessKey, sessionToken: inst.sessionToken };
  const denied = await errorOf(sts(instance).send(new AssumeRoleCommand({ RoleArn: ROLE, RoleSessionName: 'op' })));
  assert.deepEqual([denied.name, denied.status], ['AccessDenied', 403]);
  assert.match(denied.message, /assumed-role\/runpool-instance\/i-0123456789abcdef0 is not authorized to perform: sts:AssumeRole/);

  const forged = await errorOf(sts({ ...controller, secretAccessKey: `${controller.secretAccessKey}x` })
    .send(new AssumeRoleCommand({ RoleArn: ROLE, RoleSessionName: 'op' })));
  assert.deepEqual([forged.name, forged.status], ['SignatureDoesNotMatch', 403]);
  const unknown = await errorOf(sts({ accessKeyId: 'AKIDUNKNOWN000000000', secretAccessKey: 'x' })
    .send(new GetCallerIdentityCommand({})));
  assert.deepEqual([unknown.name, unknown.status], ['InvalidClientTokenId', 403]);
  const expired = (await post(`${ready.endpoints.control}/_control/credentials/instance`, { instanceId: 'i-0fedcba9876543210', ttlMs: 0 })).json;
  const late = await errorOf(sts({ accessKeyId: expired.accessKeyId, secretAccessKey: expired.secretAccessKey,
    sessionToken: expired.sessionToken }).send(new GetCallerIdentityCommand({})));
  assert.deepEqual([late.name, late.status], ['ExpiredToken', 400]);
});

test('the container endpoint serves the SDK\'s own container credential provider', async () => {
  const task = (await post(`${ready.endpoints.container}/_localcloud/tasks`, {})).json;
  assert.match(task.path, /^\/v2\/credentials\/[0-9a-f-]{36}$/);
  const provider = fromHttp({ awsContainerCredentialsFullUri: task.url, awsContainerAuthorizationToken: task.authorizationToken });
  const creds = await provider();
  assert.match(creds.accessKeyId, /^ASIA/);
  assert.ok(creds.expiration.getTime() > Date.now() + 3600_000);
  assert.ok(Array.isArray((await ddb(creds).send(new ListTablesCommand({}))).TableNames));

  const wrong = await fetch(task.url, { headers: { authorization: 'wrong' } });
  assert.equal(wrong.status, 401);
  assert.equal((await wrong.json()).Code, 'AccessDenied');
  const absent = await fetch(`${ready.endpoints.container}/v2/credentials/none`, { headers: { authorization: task.authorizationToken } });
  assert.equal(absent.status, 404);
  await assert.rejects(fromHttp({ awsContainerCredentialsFullUri: task.url, awsContainerAuthorizationToken: 'wrong',
    maxRetries: 0 })());

  const open = (await post(`${ready.endpoints.container}/_localcloud/tasks`, { token: false, ttlMs: 60_000 })).json;
  assert.equal(open.authorizationToken, null);
  const short = await fromHttp({ awsContainerCredentialsFullUri: open.url })();
  assert.ok(short.expiration.getTime() <= Date.now() + 60_000);
});
