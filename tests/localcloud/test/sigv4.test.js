'use strict';
// The SigV4-checking fault proxy, in process, in front of an echo backend: real clients' signatures
// (libcurl's CURLOPT_AWS_SIGV4 via the curl CLI, the AWS SDK's signer) verify; every kind of bad
// signature is refused in each service's own dialect; faults come out in that dialect too.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { execFile } = require('node:child_process');
const { SignatureV4 } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');
const { CredentialStore } = require('../lib/credentials');
const { Faults } = require('../lib/faults');
const { createProxy } = require('../lib/proxy');
const { listenLocal, closeServer } = require('../lib/httputil');

const REGION = 'us-east-1';
const JSON_CT = 'application/x-amz-json-1.0';
const FORM_CT = 'application/x-www-form-urlencoded; charset=utf-8';

let credentials, faults, echo, echoUrl, proxies, forwarded;
const ctrl = () => credentials.controller;

test.before(async () => {
  credentials = new CredentialStore();
  faults = new Faults();
  forwarded = 0;
  echo = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      forwarded++;
      const body = JSON.stringify({ method: req.method, url: req.url, headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json', 'x-echo': 'yes' });
      res.end(body);
    });
  });
  echoUrl = await listenLocal(echo);
  proxies = {};
  for (const service of ['dynamodb', 'sqs', 'ec2']) {
    proxies[service] = createProxy({ service, region: REGION, credentials, faults, backend: echoUrl });
    await proxies[service].listen();
  }
});
test.after(async () => {
  for (const p of Object.values(proxies)) await p.close();
  await closeServer(echo);
});
test.beforeEach(() => { for (const s of ['dynamodb', 'sqs', 'ec2']) faults.set(s, {}); });

// Signs with the AWS SDK's signer (it sorts the query and adds x-amz-content-sha256).
async function sdkSign({ service, creds, method = 'POST', path = '/', headers = {}, body = '', date, checksum = true }) {
  const u = new URL(proxies[service].url);
  const [p, q] = path.split('?');
  const signer = new SignatureV4({ service, region: REGION, sha256: Sha256, credentials: creds, applyChecksum: checksum });
  const s = await signer.sign({ method, protocol: 'http:', hostname: u.hostname, port: Number(u.port), path: p,
    query: Object.fromEntries(new URLSearchParams(q || '')), headers: { host: u.host, ...headers }, body },
  { signingDate: date });
  return { method, path, headers: s.headers, body };
}

function send(service, { method, path, headers, body }, agent) {
  return new Promise((resolve, reject) => {
    const u = new URL(proxies[service].url);
    const req = http.request({ hostname: u.hostname, port: u.port, method, path, headers, agent }, (res) => {
      let data = '';
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

// The curl CLI (libcurl 7.88's CURLOPT_AWS_SIGV4, the library the C++ code uses).
function curl(service, { creds, method = 'POST', path = '/', headers = {}, body }) {
  const args = ['-sS', '-i', '--max-time', '10', '--aws-sigv4', `aws:amz:${REGION}:${service}`,
    '--user', `${creds.accessKeyId}:${creds.secretAccessKey}`, '-X', method];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  if (body !== undefined) args.push('--data-binary', '@-'); // from stdin: bodies may exceed argv limits
  args.push(proxies[service].url + path);
  return new Promise((resolve, reject) => {
    const child = execFile('curl', args, { timeout: 15_000, maxBuffer: 8 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`curl failed: ${stderr || err.message}`));
      stdout = stdout.replace(/^(HTTP\/1\.1 1\d\d [^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, ''); // interim 1xx answers
      const i = stdout.indexOf('\r\n\r\n');
      const head = stdout.slice(0, i).split('\r\n');
      const headersOut = {};
      for (const line of head.slice(1)) {
        const c = line.indexOf(':');
        headersOut[line.slice(0, c).toLowerCase()] = line.slice(c + 1).trim();
      }
      resolve({ status: Number(head[0].split(' ')[1]), headers: headersOut, body: stdout.slice(i + 4) });
    });
    child.stdin.end(body ?? '');
  });
}

const ddbList = { headers: { 'content-type': JSON_CT, 'x-amz-target': 'DynamoDB_20120810.ListTables' }, body: '{}' };
const ddbPut = { headers: { 'content-type': JSON_CT, 'x-amz-target': 'DynamoDB_20120810.PutItem' },
  body: JSON.stringify({ TableName: 'runpool-state', Item: { id: { S: 'i-1' } } }) };
const sqsSend = { headers: { 'content-type': JSON_CT, 'x-amz-target': 'AmazonSQS.SendMessage' },
  body: JSON.stringify({ QueueUrl: 'http://127.0.0.1/1/q', MessageBody: 'hi' }) };
const ec2Describe = { headers: { 'content-type': FORM_CT }, body: 'Action=DescribeInstances&Version=2016-11-15' };

const jsonType = (r) => JSON.parse(r.body).__type;
const xmlCode = (r) => /<Code>([^<]*)<\/Code>/.exec(r.body)?.[1];

test('an SDK-signed request is forwarded intact, with the principal added', async () => {
  const r = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbPut }));
  assert.equal(r.status, 200);
  assert.equal(r.headers['x-echo'], 'yes');
  const seen = JSON.parse(r.body);
  assert.equal(seen.method, 'POST');
  assert.equal(seen.url, '/');
  assert.equal(seen.body, ddbPut.body);
  assert.equal(seen.headers['x-amz-target'], 'DynamoDB_20120810.PutItem');
  assert.equal(seen.headers['x-localcloud-principal'], 'controller');
  assert.match(seen.headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIDLOCALCLOUDCTRL01\//);
});

test('curl --aws-sigv4 (libcurl) signed JSON POSTs verify', async () => {
  const r = await curl('dynamodb', { creds: ctrl(), ...ddbPut });
  assert.equal(r.status, 200, r.body);
  assert.equal(JSON.parse(r.body).headers['x-localcloud-principal'], 'controller');
  const s = await curl('sqs', { creds: ctrl(), ...sqsSend });
  assert.equal(s.status, 200, s.body);
  // Bodies over 1 MiB make libcurl 7.88 send `Expect: 100-continue` and wait for the 100.
  const big = JSON.stringify({ TableName: 'runpool-state', Item: { id: { S: 'i-1' }, blob: { S: 'x'.repeat(1100 * 1024) } } });
  const b = await curl('dynamodb', { creds: ctrl(), headers: ddbPut.headers, body: big });
  assert.equal(b.status, 200, b.body);
  assert.equal(JSON.parse(b.body).body, big);
});

test('curl with instance credentials and X-Amz-Security-Token verifies as that instance', async () => {
  const c = credentials.issueForInstance('i-0123456789abcdef0');
  const r = await curl('dynamodb', { creds: c, ...ddbPut,
    headers: { ...ddbPut.headers, 'X-Amz-Security-Token': c.sessionToken } });
  assert.equal(r.status, 200, r.body);
  const seen = JSON.parse(r.body);
  assert.equal(seen.headers['x-localcloud-principal'], 'instance:i-0123456789abcdef0');
  assert.match(seen.headers.authorization, /SignedHeaders=[^,]*x-amz-security-token/);
});

test('curl-signed EC2 query POSTs (form body) and sorted-query GETs verify; Action is the operation', async () => {
  faults.resetStats();
  const r = await curl('ec2', { creds: ctrl(), ...ec2Describe });
  assert.equal(r.status, 200, r.body);
  assert.equal(faults.stats.ec2.DescribeInstances.requests, 1);
  const g = await curl('ec2', { creds: ctrl(), method: 'GET', path: '/?Action=DescribeRegions&Version=2016-11-15' });
  assert.equal(g.status, 200, g.body);
  assert.equal(faults.stats.ec2.DescribeRegions.requests, 1);
});

test('the SDK signer with an unsorted, encoded query string verifies', async () => {
  const req = await sdkSign({ service: 'ec2', creds: ctrl(), method: 'GET',
    path: '/?Version=2016-11-15&Action=DescribeInstances&Filter.1.Name=tag%3Apool&Filter.1.Value.1=a%20b' });
  const r = await send('ec2', req);
  assert.equal(r.status, 200, r.body);
});

test('a wrong secret is refused in each dialect and never forwarded', async () => {
  const bad = { ...ctrl(), secretAccessKey: 'not-the-secret' };
  const before = forwarded;
  const d = await curl('dynamodb', { creds: bad, ...ddbList });
  assert.equal(d.status, 400);
  assert.equal(jsonType(d), 'com.amazon.coral.service#InvalidSignatureException');
  assert.equal(d.headers['content-type'], JSON_CT);
  const s = await curl('sqs', { creds: bad, ...sqsSend });
  assert.equal(s.status, 403);
  assert.equal(s.headers['x-amzn-query-error'], 'SignatureDoesNotMatch;Sender');
  assert.equal(jsonType(s), 'com.amazon.coral.service#InvalidSignatureException');
  const e = await curl('ec2', { creds: bad, ...ec2Describe });
  assert.equal(e.status, 403);
  assert.equal(xmlCode(e), 'SignatureDoesNotMatch');
  assert.match(e.body, /^<\?xml[^>]*>\s*<Response><Errors><Error><Code>/);
  assert.match(e.body, /<RequestID>[0-9a-f-]{36}<\/RequestID><\/Response>$/);
  // SQS's query protocol (form POST, no X-Amz-Target) answers in its XML ErrorResponse.
  const q = await curl('sqs', { creds: bad, headers: { 'content-type': FORM_CT }, body: 'Action=ListQueues' });
  assert.equal(q.status, 403);
  assert.match(q.body, /<ErrorResponse[^>]*><Error><Type>Sender<\/Type><Code>SignatureDoesNotMatch<\/Code>/);
  assert.equal(forwarded, before);
  assert.equal(proxies.ec2.authFailures.SignatureDoesNotMatch >= 1, true);
});

test('an unknown access key is refused', async () => {
  const ghost = { accessKeyId: 'AKIDNOSUCHKEY0000000', secretAccessKey: 'x' };
  const d = await curl('dynamodb', { creds: ghost, ...ddbList });
  assert.deepEqual([d.status, jsonType(d)], [400, 'com.amazon.coral.service#UnrecognizedClientException']);
  const s = await curl('sqs', { creds: ghost, ...sqsSend });
  assert.deepEqual([s.status, s.headers['x-amzn-query-error']], [403, 'InvalidClientTokenId;Sender']);
  const e = await curl('ec2', { creds: ghost, ...ec2Describe });
  assert.deepEqual([e.status, xmlCode(e)], [401, 'AuthFailure']);
});

test('expired session credentials are refused with the expired-token code', async () => {
  const c = credentials.issueForInstance('i-expired', 0);
  const tok = { 'X-Amz-Security-Token': c.sessionToken };
  const d = await curl('dynamodb', { creds: c, ...ddbList, headers: { ...ddbList.headers, ...tok } });
  assert.deepEqual([d.status, jsonType(d)], [400, 'com.amazon.coral.service#ExpiredTokenException']);
  const s = await curl('sqs', { creds: c, ...sqsSend, headers: { ...sqsSend.headers, ...tok } });
  assert.deepEqual([s.status, s.headers['x-amzn-query-error']], [403, 'ExpiredToken;Sender']);
  const e = await curl('ec2', { creds: c, ...ec2Describe, headers: { ...ec2Describe.headers, ...tok } });
  assert.deepEqual([e.status, xmlCode(e)], [400, 'RequestExpired']);
});

test('a session token that is missing or not the key\'s own is refused', async () => {
  const a = credentials.issueForInstance('i-a');
  const b = credentials.issueForInstance('i-b');
  const wrong = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: { ...a, sessionToken: b.sessionToken }, ...ddbList }));
  assert.deepEqual([wrong.status, jsonType(wrong)], [400, 'com.amazon.coral.service#UnrecognizedClientException']);
  const none = await send('ec2', await sdkSign({ service: 'ec2', creds: { ...a, sessionToken: undefined }, ...ec2Describe }));
  assert.deepEqual([none.status, xmlCode(none)], [401, 'AuthFailure']);
  const extra = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: { ...ctrl(), sessionToken: a.sessionToken }, ...ddbList }));
  assert.equal(jsonType(extra), 'com.amazon.coral.service#UnrecognizedClientException');
});

test('a request dated more than 15 minutes off is refused; 14 minutes is fine', async () => {
  const old = new Date(Date.now() - 16 * 60 * 1000);
  const d = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList, date: old }));
  assert.equal(d.status, 400);
  assert.equal(jsonType(d), 'com.amazon.coral.service#InvalidSignatureException');
  assert.match(JSON.parse(d.body).message, /^Signature expired/);
  const future = new Date(Date.now() + 16 * 60 * 1000);
  const e = await send('ec2', await sdkSign({ service: 'ec2', creds: ctrl(), ...ec2Describe, date: future }));
  assert.deepEqual([e.status, xmlCode(e)], [400, 'RequestExpired']);
  const ok = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList,
    date: new Date(Date.now() - 14 * 60 * 1000) }));
  assert.equal(ok.status, 200);
});

test('missing and malformed Authorization headers are refused', async () => {
  const d = await send('dynamodb', { method: 'POST', path: '/', headers: ddbList.headers, body: ddbList.body });
  assert.deepEqual([d.status, jsonType(d)], [400, 'com.amazon.coral.service#MissingAuthenticationTokenException']);
  const e = await send('ec2', { method: 'POST', path: '/', headers: ec2Describe.headers, body: ec2Describe.body });
  assert.deepEqual([e.status, xmlCode(e)], [401, 'MissingAuthenticationToken']);
  const m = await send('dynamodb', { method: 'POST', path: '/', body: '{}',
    headers: { ...ddbList.headers, authorization: 'AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/dynamodb' } });
  assert.deepEqual([m.status, jsonType(m)], [400, 'com.amazon.coral.service#IncompleteSignatureException']);
  // host must be signed (curl, the SDK and AWS all require it).
  const req = await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList });
  req.headers.authorization = req.headers.authorization.replace(/(SignedHeaders=[^,]*?)host;/, '$1');
  assert.doesNotMatch(req.headers.authorization, /host/);
  const h = await send('dynamodb', req);
  assert.equal(jsonType(h), 'com.amazon.coral.service#IncompleteSignatureException');
});

test('tampering with the body, a signed header, the path or the query breaks the signature', async () => {
  const mismatch = 'com.amazon.coral.service#InvalidSignatureException';
  const withHash = await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbPut });
  const r1 = await send('dynamodb', { ...withHash, body: withHash.body.replace('i-1', 'i-2') });
  assert.equal(jsonType(r1), mismatch);
  assert.match(JSON.parse(r1.body).message, /x-amz-content-sha256/);
  // Like libcurl, no x-amz-content-sha256 header: the body hash inside the signature must catch it.
  const noHash = await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbPut, checksum: false });
  assert.equal(noHash.headers['x-amz-content-sha256'], undefined);
  assert.equal((await send('dynamodb', noHash)).status, 200);
  assert.equal(jsonType(await send('dynamodb', { ...noHash, body: noHash.body.replace('i-1', 'i-2') })), mismatch);
  const target = await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList });
  target.headers['x-amz-target'] = 'DynamoDB_20120810.DeleteTable';
  assert.equal(jsonType(await send('dynamodb', target)), mismatch);
  const p = await sdkSign({ service: 'ec2', creds: ctrl(), method: 'GET', path: '/?Action=DescribeInstances' });
  assert.equal((await send('ec2', p)).status, 200);
  assert.equal(xmlCode(await send('ec2', { ...p, path: '/x?Action=DescribeInstances' })), 'SignatureDoesNotMatch');
  assert.equal(xmlCode(await send('ec2', { ...p, path: '/?Action=TerminateInstances' })), 'SignatureDoesNotMatch');
});

test('a credential scoped to another service or region is refused', async () => {
  const svc = await sdkSign({ service: 'sqs', creds: ctrl(), ...ddbList });
  const r = await send('dynamodb', svc);
  assert.equal(jsonType(r), 'com.amazon.coral.service#InvalidSignatureException');
  assert.match(JSON.parse(r.body).message, /scoped to correct service: 'dynamodb'/);
  const u = new URL(proxies.dynamodb.url);
  const signer = new SignatureV4({ service: 'dynamodb', region: 'eu-west-1', sha256: Sha256, credentials: ctrl() });
  const other = await signer.sign({ method: 'POST', protocol: 'http:', hostname: u.hostname, port: Number(u.port),
    path: '/', query: {}, headers: { host: u.host, ...ddbList.headers }, body: ddbList.body });
  const g = await send('dynamodb', { method: 'POST', path: '/', headers: other.headers, body: ddbList.body });
  assert.equal(jsonType(g), 'com.amazon.coral.service#InvalidSignatureException');
  assert.match(JSON.parse(g.body).message, /scoped to a valid region, not 'eu-west-1'/);
});

test('a client cannot forge x-localcloud-principal', async () => {
  const c = credentials.issueForInstance('i-honest');
  const req = await sdkSign({ service: 'dynamodb', creds: c, ...ddbList,
    headers: { ...ddbList.headers, 'x-localcloud-principal': 'controller' } });
  const r = await send('dynamodb', req);
  assert.equal(r.status, 200);
  assert.equal(JSON.parse(r.body).headers['x-localcloud-principal'], 'instance:i-honest');
});

test('injected faults come out in each service\'s dialect', async () => {
  faults.set('dynamodb', { throttleRate: 1 });
  const put = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbPut }));
  assert.deepEqual([put.status, jsonType(put)], [400, 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException']);
  const list = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList }));
  assert.deepEqual([list.status, jsonType(list)], [400, 'com.amazonaws.dynamodb.v20120810#ThrottlingException']);
  faults.set('dynamodb', { errorRate: 1 });
  const err = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList }));
  assert.deepEqual([err.status, jsonType(err)], [500, 'com.amazonaws.dynamodb.v20120810#InternalServerError']);
  faults.set('dynamodb', { retryAfterRate: 1, retryAfterSeconds: 2 });
  const ra = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList }));
  assert.deepEqual([ra.status, ra.headers['retry-after']], [503, '2']);

  faults.set('sqs', { throttleRate: 1 });
  const st = await curl('sqs', { creds: ctrl(), ...sqsSend });
  assert.deepEqual([st.status, jsonType(st), st.headers['x-amzn-query-error']],
    [403, 'com.amazonaws.sqs#RequestThrottled', 'RequestThrottled;Sender']);
  faults.set('sqs', { errorRate: 1 });
  const se = await curl('sqs', { creds: ctrl(), ...sqsSend });
  assert.deepEqual([se.status, se.headers['x-amzn-query-error']], [500, 'InternalFailure;Receiver']);

  faults.set('ec2', { throttleRate: 1 });
  const et = await curl('ec2', { creds: ctrl(), ...ec2Describe });
  assert.deepEqual([et.status, xmlCode(et)], [503, 'RequestLimitExceeded']);
  faults.set('ec2', { errorRate: 1 });
  const ee = await curl('ec2', { creds: ctrl(), ...ec2Describe });
  assert.deepEqual([ee.status, xmlCode(ee)], [500, 'InternalError']);
  faults.set('ec2', { retryAfterRate: 1, retryAfterSeconds: 3 });
  const er = await curl('ec2', { creds: ctrl(), ...ec2Describe });
  assert.deepEqual([er.status, xmlCode(er), er.headers['retry-after']], [503, 'Unavailable', '3']);
});

test('latency is added per the knob', async () => {
  faults.set('dynamodb', { latencyMs: 150 });
  const t0 = Date.now();
  const r = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList }));
  assert.equal(r.status, 200);
  assert.ok(Date.now() - t0 >= 140, `took ${Date.now() - t0} ms`);
});

test('connections are kept alive across requests', async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const a = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList }), agent);
  const b = await send('dynamodb', await sdkSign({ service: 'dynamodb', creds: ctrl(), ...ddbList }), agent);
  agent.destroy();
  assert.deepEqual([a.status, b.status, a.reused, b.reused], [200, 200, false, true]);
});

test('a backend that is down gives a 502 in the service\'s dialect', async () => {
  const dead = http.createServer();
  const deadUrl = await listenLocal(dead);
  await closeServer(dead);
  const p = createProxy({ service: 'ec2', region: REGION, credentials, faults, backend: deadUrl });
  await p.listen();
  try {
    const signer = new SignatureV4({ service: 'ec2', region: REGION, sha256: Sha256, credentials: ctrl() });
    const u = new URL(p.url);
    const s = await signer.sign({ method: 'POST', protocol: 'http:', hostname: u.hostname, port: Number(u.port), path: '/',
      query: {}, headers: { host: u.host, ...ec2Describe.headers }, body: ec2Describe.body });
    const res = await fetch(p.url, { method: 'POST', headers: s.headers, body: ec2Describe.body, signal: AbortSignal.timeout(5000) });
    assert.equal(res.status, 502);
    assert.match(await res.text(), /<Code>InternalError<\/Code><Message>backend unavailable: ECONNREFUSED/);
  } finally {
    await p.close();
  }
});
