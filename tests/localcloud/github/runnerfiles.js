'use strict';
// The runner-side files the service hands out in a JIT config, in the real runner's formats:
// `.runner` (camelCase settings; false booleans omitted), `.credentials` (OAuth client data) and
// `.credentials_rsaparams` (the RSA private key as base64 RSAParameters).
const crypto = require('node:crypto');

const PIPELINES = '/_services/pipelines';
const serverUrlOf = (origin) => `${origin}${PIPELINES}`;
const authorizationUrlOf = (origin) => `${serverUrlOf(origin)}/oauth2/token`;
const gitHubUrlOf = (origin, owner, repo) => {
  const ent = /^enterprise:(.+)$/i.exec(owner);
  return ent ? `${origin}/enterprises/${ent[1]}` : `${origin}/${owner}${repo ? `/${repo}` : ''}`;
};

const std = (b64url) => Buffer.from(b64url, 'base64url').toString('base64');

function rsaParams(privateKey) {
  const j = privateKey.export({ format: 'jwk' });
  return { d: std(j.d), dp: std(j.dp), dq: std(j.dq), exponent: std(j.e), inverseQ: std(j.qi), modulus: std(j.n), p: std(j.p), q: std(j.q) };
}

// { exponent, modulus } (standard base64, as the runner sends it) -> node public KeyObject
function publicKeyFrom(pk) {
  if (!pk || typeof pk.modulus !== 'string' || typeof pk.exponent !== 'string') throw new Error('publicKey needs modulus and exponent');
  const url = (b) => Buffer.from(b, 'base64').toString('base64url');
  return crypto.createPublicKey({ key: { kty: 'RSA', n: url(pk.modulus), e: url(pk.exponent) }, format: 'jwk' });
}

// A JIT configuration's `.runner` carries no gitHubUrl: the service writes the runner's settings
// without it, so the runner knows only its pipelines URL (actions/runner v2.336.0,
// ConfigurationManager.cs 571-576 takes the legacy path for exactly that case).
function runnerSettings({ runner, origin }) {
  const s = {
    agentId: runner.id, agentName: runner.name, poolId: runner.runnerGroupId || 1, poolName: runner.runnerGroupName || 'Default',
    serverUrl: serverUrlOf(origin), workFolder: runner.workFolder || '_work',
  };
  if (runner.ephemeral) s.ephemeral = true;
  if (runner.disableUpdate) s.disableUpdate = true;
  return s;
}

function credentials({ runner, origin }) {
  return { scheme: 'OAuth', data: { clientId: runner.clientId, authorizationUrl: authorizationUrlOf(origin), requireFipsCryptography: 'False' } };
}

// The encoded_jit_config: base64 of a JSON map file name -> base64 file content.
function encodeJitConfig({ runner, origin, privateKey }) {
  const files = {
    '.runner': runnerSettings({ runner, origin }),
    '.credentials': credentials({ runner, origin }),
    '.credentials_rsaparams': rsaParams(privateKey),
  };
  const map = Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Buffer.from(JSON.stringify(v, null, 2)).toString('base64')]));
  return Buffer.from(JSON.stringify(map)).toString('base64');
}

module.exports = { PIPELINES, serverUrlOf, authorizationUrlOf, gitHubUrlOf, rsaParams, publicKeyFrom, runnerSettings, credentials, encodeJitConfig };
