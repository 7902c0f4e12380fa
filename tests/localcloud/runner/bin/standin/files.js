'use strict';
// The runner root and the files configuration leaves in it. `.runner` is written as UTF-8 with
// a BOM (as the real runner does) and read BOM-tolerantly; `*_migrated` variants are read first.
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

const ROOT = path.resolve(__dirname, '..', '..');
const P = (f) => path.join(ROOT, f);
const FILES = {
  runner: P('.runner'), runnerMigrated: P('.runner_migrated'),
  credentials: P('.credentials'), credentialsMigrated: P('.credentials_migrated'),
  rsa: P('.credentials_rsaparams'), env: P('.env'), standin: P('.standin.json'), drain: P('.drain'),
};

const readJson = (f) => JSON.parse(fs.readFileSync(f, 'utf8').replace(/^\uFEFF/, ''));
const exists = (f) => fs.existsSync(f);
const isConfigured = () => exists(FILES.runner) || exists(FILES.runnerMigrated);
const hasCredentials = () => exists(FILES.credentials) || exists(FILES.credentialsMigrated);
const loadSettings = () => readJson(exists(FILES.runnerMigrated) ? FILES.runnerMigrated : FILES.runner);
const loadCredentials = () => readJson(exists(FILES.credentialsMigrated) ? FILES.credentialsMigrated : FILES.credentials);

function writeRunner(settings) {
  fs.writeFileSync(FILES.runner, `\uFEFF${JSON.stringify(settings, null, 2)}`, { mode: 0o644 });
}
function writeCredentials(creds, rsaParams) {
  fs.writeFileSync(FILES.credentials, JSON.stringify(creds, null, 2), { mode: 0o644 });
  fs.writeFileSync(FILES.rsa, JSON.stringify(rsaParams, null, 2), { mode: 0o600 });
  fs.chmodSync(FILES.rsa, 0o600); // in case it existed with looser bits
}

// Deletes local configuration; returns the names it removed.
function deleteConfig() {
  const removed = [];
  for (const f of [FILES.credentials, FILES.credentialsMigrated, FILES.rsa, FILES.runner, FILES.runnerMigrated]) {
    try { fs.unlinkSync(f); removed.push(path.basename(f)); } catch (e) { if (e.code !== 'ENOENT') throw e; }
  }
  return removed;
}

// .env: KEY=VALUE lines loaded into the Listener's environment (and so its children's).
function loadDotEnv() {
  if (!exists(FILES.env)) return;
  for (const line of fs.readFileSync(FILES.env, 'utf8').split(/\r?\n/)) {
    const i = line.indexOf('=');
    if (i > 0 && !line.startsWith('#')) process.env[line.slice(0, i).trim()] = line.slice(i + 1);
  }
}

// Which runner build this stand-in models; RUNNER_STANDIN_MODE wins over .standin.json; default
// stock. stock: actions/runner as released (no drain). pr4461: actions/runner pull request #4461
// (a <root>/.drain sentinel checked at the top of the main loop). drain-file: pull request #4708
// (`run --drain-file PATH` / `--drain-on-sigusr1`, ephemeral runners only).
const MODES = ['stock', 'pr4461', 'drain-file'];
function mode() {
  let m = process.env.RUNNER_STANDIN_MODE;
  if (!m && exists(FILES.standin)) m = readJson(FILES.standin).mode;
  m = m || 'stock';
  if (!MODES.includes(m)) throw new Error(`unknown runner stand-in mode ${JSON.stringify(m)} (one of ${MODES.join(', ')})`);
  return m;
}

// Scales the runner's own timers (session creation retried every 30 s, a session conflict for
// 4 min) so a fast test tier keeps the real ratios; the GitHub stand-in's `timeFactor` setting
// scales its side (long poll, job lock) by the same factor. null: the server's hints.
function timeFactor() {
  let f = process.env.RUNNER_STANDIN_TIME_FACTOR;
  if ((f === undefined || f === '') && exists(FILES.standin)) f = readJson(FILES.standin).timeFactor;
  if (f === undefined || f === null || f === '') return null;
  const n = Number(f);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`runner stand-in time factor must be a number > 0, not ${JSON.stringify(f)}`);
  return n;
}

// A benchmark's shortcut: `.standin.json` `"rsaKey"` (a PEM private key) is used instead of a new
// 2048-bit key per registration, whose generation (0.05-0.3 s of CPU) would otherwise dominate
// when many runners register at once on a small machine. The protocol is unchanged.
function presetKey() {
  if (!exists(FILES.standin)) return null;
  const pem = readJson(FILES.standin).rsaKey;
  if (pem === undefined) return null;
  if (typeof pem !== 'string') throw new Error('.standin.json: rsaKey must be a PEM string');
  const key = crypto.createPrivateKey(pem);
  if (key.asymmetricKeyType !== 'rsa') throw new Error('.standin.json: rsaKey is not an RSA key');
  return key;
}

const std = (b64url) => Buffer.from(b64url, 'base64url').toString('base64');
const url = (b64) => Buffer.from(b64, 'base64').toString('base64url');
function rsaParamsOf(privateKey) {
  const j = privateKey.export({ format: 'jwk' });
  return { d: std(j.d), dp: std(j.dp), dq: std(j.dq), exponent: std(j.e), inverseQ: std(j.qi), modulus: std(j.n), p: std(j.p), q: std(j.q) };
}
function loadPrivateKey() {
  const r = readJson(FILES.rsa);
  return crypto.createPrivateKey({ key: { kty: 'RSA', n: url(r.modulus), e: url(r.exponent), d: url(r.d), p: url(r.p), q: url(r.q), dp: url(r.dp), dq: url(r.dq), qi: url(r.inverseQ) }, format: 'jwk' });
}

// --jitconfig: base64 JSON map of file name -> base64 content, written into the root.
function writeJitConfig(encoded) {
  const map = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8'));
  const file = (k) => {
    if (typeof map[k] !== 'string') throw new Error(`jitconfig lacks ${k}`);
    return Buffer.from(map[k], 'base64').toString('utf8').replace(/^\uFEFF/, '');
  };
  const settings = JSON.parse(file('.runner'));
  writeCredentials(JSON.parse(file('.credentials')), JSON.parse(file('.credentials_rsaparams')));
  writeRunner(settings);
}

module.exports = {
  ROOT, FILES, readJson, exists, isConfigured, hasCredentials, loadSettings, loadCredentials, writeRunner,
  writeCredentials, deleteConfig, loadDotEnv, mode, timeFactor, presetKey, rsaParamsOf, loadPrivateKey, writeJitConfig,
};
