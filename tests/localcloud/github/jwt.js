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

function signRs256(payload, privateKey) {
  const input = `${b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }))}.${b64url(JSON.stringify(payload))}`;
  return `${input}.${b64url(crypto.sign('sha256', Buffer.from(input), privateKey))}`;
}

module.exports = { decode, verifyRs256, signRs256 };
