'use strict';
// The local cloud's STS: AssumeRoleWithWebIdentity (unsigned; the token is checked as STS checks
// an OIDC token: a registered issuer, its signature, the audience, the expiry, the role's trust of
// the subject), AssumeRole (SigV4-signed, lib/sigv4.js, by a principal the role trusts) and
// GetCallerIdentity. Query protocol: form POST (or query string), XML answers in STS's namespace,
// errors as <ErrorResponse><Error><Type/><Code/><Message/></Error>, the codes and statuses of the
// STS API model. The credentials it issues go into the CredentialStore, so the SigV4 proxies of
// DynamoDB, SQS, EC2 and CloudWatch Logs accept them as the controller's role session.
//
// The identity provider is the local cloud's own stand-in for GitHub Actions' OIDC issuer: it signs
// tokens with a key made at start. Tests ask for one (never part of STS):
//   POST /_localcloud/web-identity-token {sub?, aud?, ttlMs?, iss?}  -> {token, issuer}
const crypto = require('node:crypto');
const { readBody, listenLocal, closeServer, createServer } = require('../lib/httputil');
const { verify } = require('../lib/sigv4');
const jwt = require('../github/jwt');

const NS = 'https://sts.amazonaws.com/doc/2011-06-15/';
const ISSUER = 'https://token.actions.githubusercontent.com';
const AUDIENCE = 'sts.amazonaws.com';
// The controller's role: the unique id iam/context.js gives its sessions.
const CONTROLLER_ROLE = { name: 'runpoolctl', id: 'AROA4LOCALCLOUDCONTROL', subjects: ['repo:acme/*'] };

const xmlEscape = (s) => String(s).replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const randomKey = () => 'ASIA' + crypto.randomBytes(8).toString('hex').toUpperCase();
// IAM's StringLike: * and ? wildcards.
const like = (pattern, value) => new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  .replace(/\*/g, '.*').replace(/\?/g, '.')}$`).test(value);

class StsError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}
const validation = (message) => new StsError(400, 'ValidationError', message);

function renderError(err, requestId) {
  const type = err.status < 500 ? 'Sender' : 'Receiver';
  return `<ErrorResponse xmlns="${NS}"><Error><Type>${type}</Type><Code>${xmlEscape(err.code)}</Code>` +
    `<Message>${xmlEscape(err.message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`;
}

function renderResult(action, inner, requestId) {
  return `<${action}Response xmlns="${NS}"><${action}Result>${inner}</${action}Result>` +
    `<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${action}Response>`;
}

/**
 * createSts({ credentials, region, log }) -> Promise<{ url, issuer, mintToken(opts), close() }>
 *   mintToken({ sub, aud, ttlMs, iss }) -> a signed OIDC token (what the issuer hands a workflow).
 */
async function createSts({ credentials, region, log = () => {} }) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const account = credentials.accountId;
  const roles = new Map([[CONTROLLER_ROLE.name, CONTROLLER_ROLE]]);

  function mintToken({ sub = 'repo:acme/app:environment:runpool', aud = AUDIENCE, ttlMs = 5 * 60_000, iss = ISSUER } = {}) {
    const now = Date.now();
    return jwt.signRs256({ iss, aud, sub, iat: Math.floor(now / 1000), nbf: Math.floor(now / 1000) - 5,
      exp: Math.floor((now + ttlMs) / 1000), jti: crypto.randomUUID() }, privateKey);
  }

  // The role an ARN names in this account, or AccessDenied as STS answers for a role it will not
  // let this caller assume (a missing role looks the same).
  function roleOf(arn, action, caller) {
    const m = /^arn:aws:iam::(\d{12}):role\/(?:[\w+=,.@-]+\/)*([\w+=,.@-]{1,64})$/.exec(arn);
    if (!m) throw validation(`${arn} is invalid`);
    const role = m[1] === account ? roles.get(m[2]) : undefined;
    if (!role) throw new StsError(403, 'AccessDenied', `${caller} is not authorized to perform: ${action} on resource: ${arn}`);
    return role;
  }

  function params(p, names) {
    for (const n of names) {
      if (!p.get(n)) {
        const field = n[0].toLowerCase() + n.slice(1);
        throw validation(`1 validation error detected: Value null at '${field}' failed to satisfy constraint: ` +
          'Member must not be null');
      }
    }
    const session = p.get('RoleSessionName');
    if (session !== null && !/^[\w+=,.@-]{2,64}$/.test(session)) {
      throw validation(`1 validation error detected: Value '${session}' at 'roleSessionName' failed to satisfy ` +
        'constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]* and have length between 2 and 64');
    }
    let duration = 3600;
    if (p.get('DurationSeconds') !== null) {
      duration = Number(p.get('DurationSeconds'));
      if (!Number.isInteger(duration) || duration < 900 || duration > 43200) {
        throw validation(`1 validation error detected: Value '${p.get('DurationSeconds')}' at 'durationSeconds' ` +
          'failed to satisfy constraint: Member must have value between 900 and 43200');
      }
    }
    return { session, duration };
  }

  function issue(role, session, duration) {
    const c = credentials.add({ principal: 'controller', userId: `${role.id}:${session}`, accessKeyId: randomKey(),
      secretAccessKey: crypto.randomBytes(30).toString('base64'), sessionToken: crypto.randomBytes(64).toString('base64'),
      expiration: new Date(Date.now() + duration * 1000) });
    return `<AssumedRoleUser><Arn>arn:aws:sts::${account}:assumed-role/${role.name}/${xmlEscape(session)}</Arn>` +
      `<AssumedRoleId>${role.id}:${xmlEscape(session)}</AssumedRoleId></AssumedRoleUser>` +
      `<Credentials><AccessKeyId>${c.accessKeyId}</AccessKeyId><SecretAccessKey>${c.secretAccessKey}</SecretAccessKey>` +
      `<SessionToken>${c.sessionToken}</SessionToken><Expiration>${iso(c.expiration.getTime())}</Expiration></Credentials>`;
  }

  function assumeRoleWithWebIdentity(p) {
    const { session, duration } = params(p, ['RoleArn', 'RoleSessionName', 'WebIdentityToken']);
    const token = jwt.decode(p.get('WebIdentityToken'));
    if (!token || typeof token.payload.iss !== 'string') {
      throw new StsError(400, 'InvalidIdentityToken', 'The web identity token is not a well-formed JWT');
    }
    const { iss, aud, sub, exp } = token.payload;
    if (iss !== ISSUER) {
      throw new StsError(400, 'InvalidIdentityToken', `No OpenIDConnect provider found in your account for ${iss}`);
    }
    if (!jwt.verifyRs256(token, publicKey)) {
      throw new StsError(400, 'InvalidIdentityToken', "The token's signature does not match the provider's keys");
    }
    if (![].concat(aud).includes(AUDIENCE)) throw new StsError(400, 'InvalidIdentityToken', 'Incorrect token audience');
    const now = Math.floor(Date.now() / 1000);
    if (typeof exp !== 'number' || exp <= now) {
      throw new StsError(400, 'ExpiredTokenException',
        `Token expired: current date/time ${now} must be before the expiration date/time ${exp}`);
    }
    const role = roleOf(p.get('RoleArn'), 'sts:AssumeRoleWithWebIdentity',
      `The web identity of ${iss} with subject ${sub}`);
    if (!role.subjects.some((s) => like(s, String(sub)))) {
      throw new StsError(403, 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
    }
    return `<SubjectFromWebIdentityToken>${xmlEscape(sub)}</SubjectFromWebIdentityToken>` +
      `<Audience>${AUDIENCE}</Audience><Provider>${ISSUER.replace(/^https:\/\//, '')}</Provider>` +
      issue(role, session, duration);
  }

  // The caller of a signed request, as AWS names it in errors and GetCallerIdentity.
  function callerOf(key) {
    const c = credentials.lookup(key);
    if (c.principal.startsWith('instance:')) {
      const id = c.principal.slice('instance:'.length);
      return { arn: `arn:aws:sts::${account}:assumed-role/runpool-instance/${id}`, userId: c.userId, principal: c.principal };
    }
    if (c.userId) {
      const [roleId, session] = c.userId.split(':');
      const role = [...roles.values()].find((r) => r.id === roleId);
      return { arn: `arn:aws:sts::${account}:assumed-role/${role ? role.name : 'unknown'}/${session}`, userId: c.userId,
        principal: c.principal };
    }
    return { arn: `arn:aws:iam::${account}:user/${c.principal}`, userId: c.accessKeyId, principal: c.principal };
  }

  function assumeRole(p, caller) {
    const { session, duration } = params(p, ['RoleArn', 'RoleSessionName']);
    const role = roleOf(p.get('RoleArn'), 'sts:AssumeRole', `User: ${caller.arn}`);
    // The role trusts the account's operators (the controller's keys and its own sessions), not instances.
    if (caller.principal !== 'controller') {
      throw new StsError(403, 'AccessDenied',
        `User: ${caller.arn} is not authorized to perform: sts:AssumeRole on resource: ${p.get('RoleArn')}`);
    }
    return issue(role, session, duration);
  }

  async function handle(req, res) {
    const requestId = crypto.randomUUID();
    const send = (status, body) => {
      res.writeHead(status, { 'content-type': 'text/xml', 'x-amzn-requestid': requestId,
        'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    const body = await readBody(req, 1024 * 1024);
    if (req.method === 'POST' && req.url === '/_localcloud/web-identity-token') {
      let opts = {};
      try { opts = body.length ? JSON.parse(body.toString('utf8')) : {}; } catch { opts = null; }
      if (!opts || typeof opts !== 'object') {
        res.writeHead(400, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: 'body must be a JSON object' }));
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ token: mintToken(opts), issuer: ISSUER, audience: AUDIENCE }));
    }
    const qi = req.url.indexOf('?');
    const p = new URLSearchParams(qi < 0 ? '' : req.url.slice(qi + 1));
    for (const [k, v] of new URLSearchParams(body.toString('utf8'))) p.set(k, v);
    const action = p.get('Action') || '';
    try {
      if (req.method !== 'POST' && req.method !== 'GET') throw new StsError(405, 'InvalidAction', 'Method not allowed');
      if (action === 'AssumeRoleWithWebIdentity') {
        return send(200, renderResult(action, assumeRoleWithWebIdentity(p), requestId));
      }
      if (action !== 'AssumeRole' && action !== 'GetCallerIdentity') {
        throw new StsError(400, 'InvalidAction', `Could not find operation ${action} for version 2011-06-15`);
      }
      const v = await verify({ method: req.method, url: req.url, headers: req.headers, body }, { service: 'sts', region, credentials });
      if (!v.ok) throw new StsError(v.status, v.code, v.message);
      const caller = callerOf(v.accessKeyId);
      if (action === 'AssumeRole') return send(200, renderResult(action, assumeRole(p, caller), requestId));
      return send(200, renderResult(action, `<Arn>${xmlEscape(caller.arn)}</Arn><UserId>${xmlEscape(caller.userId)}</UserId>` +
        `<Account>${account}</Account>`, requestId));
    } catch (err) {
      if (!(err instanceof StsError)) throw err;
      log('debug', `sts ${action}: ${err.code}: ${err.message}`);
      return send(err.status, renderError(err, requestId));
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      log('error', `sts: ${err.stack || err}`);
      if (res.headersSent) return res.destroy();
      res.writeHead(500, { 'content-type': 'text/xml' });
      res.end(renderError(new StsError(500, 'InternalFailure', 'The request processing has failed'), crypto.randomUUID()));
    });
  });
  const url = await listenLocal(server);
  return { url, issuer: ISSUER, audience: AUDIENCE, mintToken, close: () => closeServer(server) };
}

module.exports = { createSts, ISSUER, AUDIENCE, CONTROLLER_ROLE };
