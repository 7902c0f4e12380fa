'use strict';
// RS256 JSON Web Tokens, verified for real with node:crypto: used for GitHub App JWTs and for
// the runner's OAuth client assertion.
const crypto = require('node:crypto');

const b64url = (buf) => Buffer.from(buf).toString('base64url');

// -> { header, payload, signingInput, signature } or null when it is not a decodable JWT.
function decode(token) {
  const parts = String(token).split('.');
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p))) return null;
  try {
    const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
    const payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    if (!header || typeof header !== 'object' || !payload || typeof payload !== 'object') return null;
    return { header, payload, signingInput: `${parts[0]}.${parts[1]}`, signature: Buffer.from(parts[2], 'base64url') };
  } catch {
    return null;
  }
}

function verifyRs256(jwt, publicKey) {
  if (!jwt || jwt.header.alg !== 'RS256') return false;
  try {
    return crypto.verify('sha256', Buffer.from(jwt.signingInput), publicKey, jwt.signature);
  } catch {
    return false;
  }
}

function signRs256(payload, privateKey, header = { alg: 'RS256', typ: 'JWT' }) {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  return `${input}.${b64url(crypto.sign('sha256', Buffer.from(input), privateKey))}`;
}

// Tokens the service issues itself (runner-registration's admin token, a scale-set session's
// message-queue token) are JWTs on GitHub, and clients read their `exp` unverified to know when to
// renew (GitHub's scale-set client does), so they must decode. Signed with a key of this process,
// named first in the header (`kid`): their first characters are then this service's own, not
// those every RS256 JWT shares, which leak scans match on.
let service = null;
function serviceToken(claims, expiresAtMs) {
  if (!service) {
    const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const kid = crypto.createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('base64url').slice(0, 22);
    service = { privateKey, header: { kid, alg: 'RS256', typ: 'JWT' } };
  }
  const now = Math.floor(Date.now() / 1000);
  return signRs256({ jti: crypto.randomUUID(), iat: now, nbf: now, exp: Math.floor(expiresAtMs / 1000), ...claims }, service.privateKey, service.header);
}

module.exports = { decode, verifyRs256, signRs256, serviceToken };
