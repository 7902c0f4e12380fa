'use strict';
// Checks an incoming request's SigV4 Authorization header as AWS does: re-sign exactly the
// headers the client chose with the AWS SDK's own signer (@smithy/signature-v4), using the secret
// the CredentialStore holds for the access key, and compare. This is what proves a client's
// signing (libcurl's CURLOPT_AWS_SIGV4, the C++ code) right even though the backends never check.
const crypto = require('node:crypto');
const { SignatureV4 } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');
const { authError } = require('./awserrors');

const MAX_SKEW_MS = 15 * 60 * 1000;

// 'AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=a;b, Signature=hex'
function parseAuthorization(value) {
  const m = /^AWS4-HMAC-SHA256\s+(.+)$/s.exec(String(value).trim());
  if (!m) return null;
  const fields = {};
  for (const part of m[1].split(',')) {
    const i = part.indexOf('=');
    if (i < 0) return null;
    fields[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  const scope = (fields.Credential || '').split('/');
  if (scope.length !== 5 || scope[4] !== 'aws4_request' || !scope[0]) return null;
  if (!fields.SignedHeaders || !/^[0-9a-f]{64}$/.test(fields.Signature || '')) return null;
  return { accessKeyId: scope[0], date: scope[1], region: scope[2], service: scope[3],
    signedHeaders: fields.SignedHeaders.split(';'), signature: fields.Signature };
}

// '20240101T120000Z' -> Date, or null.
function parseAmzDate(s) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s || '');
  return m ? new Date(Date.UTC(+m[1], m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : null;
}

function decode(s) { try { return decodeURIComponent(s); } catch { return s; } }

// Raw query string -> { key: value | [values] }, decoded; the signer re-encodes and sorts it.
function parseQuery(raw) {
  const q = Object.create(null);
  for (const pair of (raw || '').split('&')) {
    if (!pair) continue;
    const i = pair.indexOf('=');
    const k = decode(i < 0 ? pair : pair.slice(0, i));
    const v = i < 0 ? '' : decode(pair.slice(i + 1));
    q[k] = k in q ? [].concat(q[k], v) : v;
  }
  return q;
}

const sha256Hex = (buf) => crypto.createHash('sha256').update(buf).digest('hex');

/**
 * Verifies one request. `req` = { method, url (raw request target), headers (lower-cased, as node
 * gives them), body (Buffer) }; `opts` = { service ('dynamodb'|'sqs'|'ec2'), region, credentials
 * (CredentialStore), now (ms, default Date.now()) }.
 * Returns { ok: true, principal, accessKeyId } or { ok: false, reason, code, status, message, ... }
 * where code/status are what that service answers (see awserrors.js).
 */
async function verify(req, { service, region, credentials, now = Date.now() }) {
  const fail = (reason, message) => ({ ok: false, ...authError(service, reason, message) });
  const headers = req.headers;
  if (!headers.authorization) return fail('missing');
  const auth = parseAuthorization(headers.authorization);
  if (!auth) return fail('malformed');
  const signed = new Set(auth.signedHeaders);
  for (const h of ['host', 'x-amz-date']) {
    if (!signed.has(h)) return fail('malformed', `'${h}' must be a signed header`);
  }
  for (const h of signed) if (headers[h] === undefined) return fail('malformed', `signed header '${h}' is missing`);
  // The SDK signer always drops a 'date' header; say so rather than report a false mismatch.
  if (signed.has('date')) return fail('malformed', "signing the 'date' header is not supported here; sign x-amz-date");
  const date = parseAmzDate(headers['x-amz-date']);
  if (!date) return fail('malformed', 'X-Amz-Date must be in the form YYYYMMDDTHHMMSSZ');
  if (auth.date !== headers['x-amz-date'].slice(0, 8)) {
    return fail('mismatch', `Date in Credential scope does not match YYYYMMDD from X-Amz-Date (${auth.date})`);
  }
  if (auth.region !== region) return fail('mismatch', `Credential should be scoped to a valid region, not '${auth.region}'.`);
  if (auth.service !== service) return fail('mismatch', `Credential should be scoped to correct service: '${service}'.`);

  const cred = credentials.lookup(auth.accessKeyId);
  if (!cred) return fail('unknownKey');
  const token = headers['x-amz-security-token'];
  if ((cred.sessionToken || token) && token !== cred.sessionToken) return fail('badToken');
  if (cred.expiration && now >= new Date(cred.expiration).getTime()) return fail('expiredToken');
  if (Math.abs(now - date.getTime()) > MAX_SKEW_MS) {
    return fail('skew', `Signature expired: ${headers['x-amz-date']} is more than 15 min. away from the server time ` +
      `${new Date(now).toISOString().replace(/[-:]|\.\d+/g, '')}`);
  }
  const bodyHash = sha256Hex(req.body || Buffer.alloc(0));
  const claimed = headers['x-amz-content-sha256'];
  if (claimed !== undefined && claimed !== bodyHash) return fail('mismatch', 'x-amz-content-sha256 does not match the request body');

  // Re-sign exactly what the client signed; the signer adds x-amz-date (same value) itself, and
  // the session token only if the client signed it (it was compared above either way).
  const qi = req.url.indexOf('?');
  const toSign = {
    method: req.method, protocol: 'http:', hostname: String(headers.host).split(':')[0],
    path: qi < 0 ? req.url : req.url.slice(0, qi), query: parseQuery(qi < 0 ? '' : req.url.slice(qi + 1)),
    headers: Object.fromEntries([...signed].map((h) => [h, [].concat(headers[h]).join(',')])),
    body: req.body,
  };
  const signer = new SignatureV4({
    service, region, sha256: Sha256, applyChecksum: false,
    credentials: { accessKeyId: cred.accessKeyId, secretAccessKey: cred.secretAccessKey,
      sessionToken: signed.has('x-amz-security-token') ? token : undefined },
  });
  const out = await signer.sign(toSign, { signingDate: date, signingRegion: region, signingService: service,
    signableHeaders: signed });
  const expected = /Signature=([0-9a-f]{64})/.exec(out.headers.authorization)[1];
  if (!crypto.timingSafeEqual(Buffer.from(expected), Buffer.from(auth.signature))) return fail('mismatch');
  return { ok: true, principal: cred.principal, accessKeyId: cred.accessKeyId };
}

module.exports = { verify, parseAuthorization, parseAmzDate, parseQuery, MAX_SKEW_MS };
