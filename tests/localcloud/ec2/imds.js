'use strict';
// One instance's IMDSv2 endpoint on 127.0.0.1:<port>. Session tokens from PUT /latest/api/token
// (TTL 1..21600 s, clamped to the imdsTokenMaxTtlSeconds setting so tests can force early expiry);
// every GET needs a valid token unless the instance allows IMDSv1 (HttpTokens=optional).
// POST /_localcloud/poweroff is the local cloud's stand-in for an OS shutdown (bin/poweroff calls it).
// /_localcloud/tokens (tests): GET counts tokens issued and refused (expired, revoked, unknown,
// missing); DELETE expires every token now, as an IMDS restart or a TTL running out mid-run would.
const http = require('node:http');
const crypto = require('node:crypto');

const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'text/plain', server: 'EC2ws', ...headers });
  res.end(body);
}

const notFound = (res) => send(res, 404, '<?xml version="1.0" encoding="iso-8859-1"?>\n<title>404 - Not Found</title>\n',
  { 'content-type': 'text/html' });

// inst: the Instance (read live on every request, so tags and notices show at once).
async function startImds(inst, world) {
  const tokens = new Map(); // token -> { exp (ms), revoked }
  const counts = { issued: 0, revoked: 0, refused: { expired: 0, revoked: 0, unknown: 0, missing: 0 } };

  // Why a token is refused ('expired', 'revoked', 'unknown'), or null when it is good. An expired
  // token stays known until the next sweep, so its refusal is told apart from a forged one.
  function tokenProblem(t) {
    const e = tokens.get(t);
    if (e === undefined) return 'unknown';
    if (e.revoked) return 'revoked';
    return Date.now() >= e.exp ? 'expired' : null;
  }

  function sweep() {
    const now = Date.now();
    for (const [t, e] of tokens) if (e.revoked || now >= e.exp) tokens.delete(t);
  }

  function expireAll() {
    let n = 0;
    const now = Date.now();
    for (const e of tokens.values()) if (!e.revoked && now < e.exp) { e.revoked = true; n++; }
    counts.revoked += n;
    return n;
  }

  function tokensRoute(req, res) {
    const json = (body) => send(res, 200, JSON.stringify(body), { 'content-type': 'application/json' });
    if (req.method === 'DELETE') return json({ instanceId: inst.id, revoked: expireAll() });
    if (req.method !== 'GET') return send(res, 405, 'Method Not Allowed');
    const now = Date.now();
    const live = [...tokens.values()].filter((e) => !e.revoked && now < e.exp).length;
    return json({ instanceId: inst.id, live, issued: counts.issued, revoked: counts.revoked,
      refused: { ...counts.refused }, maxTtlSeconds: world.settings.imdsTokenMaxTtlSeconds });
  }

  function putToken(req, res) {
    if (req.headers['x-forwarded-for']) return send(res, 403, 'Forbidden');
    const raw = req.headers['x-aws-ec2-metadata-token-ttl-seconds'];
    if (raw === undefined || !/^[0-9]+$/.test(raw) || Number(raw) < 1 || Number(raw) > 21600) {
      return send(res, 400, 'Bad Request');
    }
    const ttl = Math.min(Number(raw), world.settings.imdsTokenMaxTtlSeconds);
    if (tokens.size > 1000) sweep();
    const token = crypto.randomBytes(42).toString('base64');
    tokens.set(token, { exp: Date.now() + ttl * 1000, revoked: false });
    counts.issued++;
    send(res, 200, token, { 'x-aws-ec2-metadata-token-ttl-seconds': String(ttl) });
  }

  // Returns the body for a metadata path, or undefined for 404.
  function lookup(p) {
    const md = '/latest/meta-data/';
    const tagsOn = inst.metadata.instanceMetadataTags === 'enabled';
    const role = inst.profile && inst.profile.role;
    if (p === '/latest/user-data') return inst.userData || undefined;
    if (p === '/latest/dynamic/instance-identity/document') {
      return JSON.stringify({ accountId: world.accountId, architecture: world.arch, availabilityZone: inst.az,
        imageId: inst.imageId, instanceId: inst.id, instanceType: inst.instanceType, pendingTime: iso(+inst.launchTime),
        privateIp: '127.0.0.1', region: world.region, version: '2017-09-30' }, null, 2);
    }
    if (!p.startsWith(md) && p !== '/latest/meta-data') return undefined;
    const k = p.slice(md.length);
    const fixed = {
      'ami-id': inst.imageId, 'ami-launch-index': String(inst.launchIndex), 'instance-id': inst.id,
      'instance-type': inst.instanceType, 'instance-life-cycle': inst.lifecycle, 'local-ipv4': '127.0.0.1',
      'local-hostname': inst.privateDnsName(), hostname: inst.privateDnsName(), 'reservation-id': inst.reservationId,
      'placement/region': world.region, 'placement/availability-zone': inst.az,
    };
    if (k in fixed) return fixed[k];
    if (k === '' || p === '/latest/meta-data') {
      return ['ami-id', 'ami-launch-index', 'events/', 'hostname', 'iam/', 'instance-id', 'instance-life-cycle',
        'instance-type', 'local-hostname', 'local-ipv4', 'placement/', 'reservation-id',
        ...(inst.notices.spot ? ['spot/'] : []), ...(tagsOn ? ['tags/'] : [])]
        .filter((e) => e !== 'iam/' || role).join('\n');
    }
    if (k === 'placement/' || k === 'placement') return 'availability-zone\nregion';
    if (role && (k === 'iam/' || k === 'iam')) return 'info\nsecurity-credentials/';
    if (role && k === 'iam/info') {
      return JSON.stringify({ Code: 'Success', LastUpdated: iso(Date.now()), InstanceProfileArn: inst.profile.arn,
        InstanceProfileId: inst.profile.id }, null, 2);
    }
    if (role && (k === 'iam/security-credentials/' || k === 'iam/security-credentials')) return role;
    if (role && k === `iam/security-credentials/${role}`) {
      const c = inst.roleCredentials();
      return JSON.stringify({ Code: 'Success', LastUpdated: iso(c.issuedAt), Type: 'AWS-HMAC',
        AccessKeyId: c.accessKeyId, SecretAccessKey: c.secretAccessKey, Token: c.sessionToken,
        Expiration: iso(+c.expiration) }, null, 2);
    }
    if (k === 'spot/instance-action' && inst.notices.spot) {
      return JSON.stringify({ action: inst.notices.spot.action, time: iso(inst.notices.spot.at) });
    }
    if (k === 'spot/termination-time' && inst.notices.spot && inst.notices.spot.action === 'terminate') {
      return iso(inst.notices.spot.at);
    }
    if (k === 'events/recommendations/rebalance' && inst.notices.rebalance) {
      return JSON.stringify({ noticeTime: iso(inst.notices.rebalance.at) });
    }
    if (tagsOn && (k === 'tags/' || k === 'tags')) return 'instance';
    if (tagsOn && (k === 'tags/instance' || k === 'tags/instance/')) return [...inst.tags.keys()].join('\n');
    if (tagsOn && k.startsWith('tags/instance/')) {
      // The key as is: it is never percent-decoded (AWS: tag keys in metadata use only letters,
      // digits and + - = . , _ : @, none of which needs encoding in a path).
      const v = inst.tags.get(k.slice('tags/instance/'.length));
      return v === undefined ? undefined : v;
    }
    return undefined;
  }

  // Fault statistics by path, with the variable parts folded so counts stay readable.
  const operation = (p) => p.replace(/(security-credentials\/).+/, '$1*').replace(/(tags\/instance\/).+/, '$1*');

  async function handle(req, res) {
    const p = decodeURI(req.url.split('?')[0]);
    if (p === '/_localcloud/poweroff') {
      if (req.method !== 'POST' && req.method !== 'PUT') return send(res, 405, 'Method Not Allowed');
      const behavior = inst.instanceInitiatedShutdown();
      return send(res, 202, JSON.stringify({ instanceId: inst.id, behavior }), { 'content-type': 'application/json' });
    }
    if (p === '/_localcloud/tokens') return tokensRoute(req, res);
    const fault = world.faults.decide('imds', `${req.method} ${operation(p)}`);
    await world.faults.delay('imds');
    if (fault && fault.kind === 'error') return send(res, 500, 'Internal Server Error');
    if (fault) return send(res, 429, 'Too Many Requests', fault.kind === 'retryAfter' ? { 'retry-after': String(fault.seconds) } : {});
    if (req.method === 'PUT') {
      return p === '/latest/api/token' ? putToken(req, res) : send(res, 405, 'Method Not Allowed');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'Method Not Allowed');
    const token = req.headers['x-aws-ec2-metadata-token'];
    const problem = token !== undefined ? tokenProblem(token) : inst.metadata.httpTokens !== 'optional' ? 'missing' : null;
    if (problem) {
      counts.refused[problem]++;
      return send(res, 401, 'Unauthorized');
    }
    const body = lookup(p);
    if (body === undefined) return notFound(res);
    send(res, 200, body);
  }

  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => handle(req, res).catch((err) => {
      world.log('error', `imds ${inst.id}: ${err.stack || err}`);
      if (!res.headersSent) send(res, 500, 'Internal Server Error');
    }));
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    close: () => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}

module.exports = { startImds };
