'use strict';
// `Runner.Listener configure` and `Runner.Listener remove`, following the real
// ConfigurationManager: exchange the registration/remove token at
// <origin>/api/v3/actions/runner-registration (RemoteAuth), then add/replace/delete the agent at
// the returned ServerUrl, and write/delete the local configuration files.
const os = require('node:os');
const crypto = require('node:crypto');
const files = require('./files');
const { call, accessToken, STATUS_NAMES } = require('./client');

const ALREADY = "Cannot configure the runner because it is already configured. To reconfigure the runner, run 'config.cmd remove' or './config.sh remove' first.";
const SYSTEM_LABELS = ['self-hosted', 'Linux', 'X64'];
const invalid = (n) => `Invalid configuration provided for ${n}. Terminating unattended configuration.`;

// Exchanges a registration or remove token -> { serverUrl, auth } or throws with the real text.
async function tenant(log, gitHubUrl, token, event) {
  const u = new URL(gitHubUrl);
  const api = `${u.origin}/api/v3/actions/runner-registration`;
  const r = await call('POST', api, { auth: `RemoteAuth ${token}`, json: { url: gitHubUrl, runner_event: event } });
  if (r.status !== 200) {
    log.err(`Http response code: ${STATUS_NAMES[r.status] || r.status} from 'POST ${api}'`);
    log.err(JSON.stringify(r.body));
    throw new Error(`Response status code does not indicate success: ${r.status}.`);
  }
  if (new URL(r.body.url).host !== u.host) throw new Error(`GitHub Actions is not properly configured in GHES. GHES url: ${gitHubUrl}, Actions url: ${r.body.url}.`);
  return { serverUrl: r.body.url.replace(/\/+$/, ''), auth: `Bearer ${r.body.token}` };
}

// An organization (/org), an enterprise (/enterprises/slug) or a repository (/owner/repo).
function scopeOf(url) {
  let u;
  try { u = new URL(url); } catch { return null; }
  const segs = u.pathname.split('/').filter(Boolean);
  return segs.length === 1 || segs.length === 2 ? u : null;
}

// --runnergroup NAME -> the pool to join, as the real runner looks it up among the agent pools
// (case-insensitive); none given: the default one.
async function poolFor(t, group) {
  const r = await call('GET', `${t.serverUrl}/pools`, { auth: t.auth });
  if (r.status !== 200) throw new Error(`Failed to get the runner groups: ${r.status} ${r.body.message || ''}`);
  const pool = group ? r.body.value.find((p) => p.name.toLowerCase() === group.toLowerCase()) : r.body.value.find((p) => p.isInternal);
  if (!pool) throw new Error(`Could not find any self-hosted runner group named "${group}".`);
  return pool;
}

async function configure(cmd, log) {
  log.out('--------------------------------------------------------------------------------');
  log.out('|                 Self-hosted runner registration (runpool stand-in)            |');
  log.out('--------------------------------------------------------------------------------');
  if (files.isConfigured()) { log.err(ALREADY); return 1; }
  const url = cmd.get('url');
  const token = cmd.get('token');
  if (!url) { log.err(invalid('url')); return 1; }
  if (!scopeOf(url)) { log.err(`'${url}' should point to an org or repository.`); return 1; }
  if (!token) { log.err(invalid('token')); return 1; }
  const labelsArg = cmd.get('labels') || '';
  const seen = new Set();
  const userLabels = labelsArg.split(',').map((s) => s.trim()).filter((s) => s && !seen.has(s.toLowerCase()) && seen.add(s.toLowerCase()));
  const noDefault = cmd.flag('no-default-labels');
  if (noDefault && !userLabels.length) { log.err('--no-default-labels requires --labels.'); return 1; }
  const group = cmd.get('runnergroup');
  const name = cmd.get('name') || os.hostname();
  const work = cmd.get('work') || '_work';
  try {
    log.out('\n# Authentication\n');
    const t = await tenant(log, url, token, 'register');
    log.out('\u221a Connected to GitHub\n');
    const preset = files.presetKey();
    const { publicKey, privateKey } = preset
      ? { publicKey: crypto.createPublicKey(preset), privateKey: preset }
      : crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = publicKey.export({ format: 'jwk' });
    log.out('# Runner Registration\n');
    const pool = await poolFor(t, group);
    const body = {
      name, workFolder: work, poolId: pool.id, ephemeral: cmd.flag('ephemeral'), disableUpdate: cmd.flag('disableupdate'),
      labels: [...(noDefault ? [] : SYSTEM_LABELS.map((n) => ({ name: n, type: 'system' }))), ...userLabels.map((n) => ({ name: n, type: 'user' }))],
      publicKey: { exponent: Buffer.from(jwk.e, 'base64url').toString('base64'), modulus: Buffer.from(jwk.n, 'base64url').toString('base64') },
    };
    const found = await call('GET', `${t.serverUrl}/agents?name=${encodeURIComponent(name)}`, { auth: t.auth });
    if (found.status !== 200) throw new Error(`Failed to list runners: ${found.status} ${found.body.message || ''}`);
    let agent;
    if (found.body.value.length) {
      log.out('A runner exists with the same name');
      if (!cmd.flag('replace')) throw new Error(`A runner exists with the same name ${name}.`);
      const r = await call('PUT', `${t.serverUrl}/agents/${found.body.value[0].id}`, { auth: t.auth, json: body });
      if (r.status !== 200) throw new Error(`Failed to replace the runner: ${r.body.message || r.status}`);
      agent = r.body;
      log.out('\u221a Successfully replaced the runner');
    } else {
      const r = await call('POST', `${t.serverUrl}/agents`, { auth: t.auth, json: body });
      if (r.status !== 200) throw new Error(r.body.message || `Failed to add the runner: ${r.status}`);
      agent = r.body;
      log.out('\u221a Runner successfully added');
    }
    const creds = { scheme: 'OAuth', data: { clientId: agent.authorization.clientId, authorizationUrl: agent.authorization.authorizationUrl, requireFipsCryptography: 'False' } };
    files.writeCredentials(creds, files.rsaParamsOf(privateKey));
    await accessToken(creds, privateKey); // as real: prove the new credentials work
    log.out('\u221a Runner connection is good\n');
    log.out('# Runner settings\n');
    const settings = { agentId: agent.id, agentName: agent.name, poolId: pool.id, poolName: pool.name, serverUrl: t.serverUrl, gitHubUrl: url, workFolder: work };
    if (body.ephemeral) settings.ephemeral = true;
    if (body.disableUpdate) settings.disableUpdate = true;
    files.writeRunner(settings);
    log.out('\u221a Settings Saved.\n');
    return 0;
  } catch (e) {
    log.err(e.message);
    return 1;
  }
}

async function remove(cmd, log) {
  log.out('\n# Runner removal\n');
  let action = 'Removing runner from the server';
  try {
    if (!cmd.flag('local')) {
      if (files.isConfigured() && files.hasCredentials()) {
        const settings = files.loadSettings();
        const token = cmd.get('token');
        if (!token) throw new Error(invalid('token'));
        // Without a gitHubUrl (a JIT runner's settings) the real runner takes its legacy path: the
        // token is used as a pipelines OAuth access token on the serverUrl, which refuses it
        // (actions/runner v2.336.0 ConfigurationManager.cs 571-576, CredentialProvider.cs 32-51).
        const t = settings.gitHubUrl ? await tenant(log, settings.gitHubUrl, token, 'remove')
          : { serverUrl: settings.serverUrl, auth: `Bearer ${token}` };
        const found = await call('GET', `${t.serverUrl}/agents?name=${encodeURIComponent(settings.agentName)}`, { auth: t.auth });
        if (found.status !== 200) throw new Error(`Failed to list runners: ${found.status}`);
        if (!found.body.value.length) log.out(`Does not exist. Skipping ${action}`);
        else {
          const r = await call('DELETE', `${t.serverUrl}/agents/${settings.agentId}`, { auth: t.auth });
          if (r.status !== 204) throw new Error(r.body.message || `Failed to delete the runner: ${r.status}`);
          log.out('\n\u221a Runner removed successfully');
        }
      } else {
        log.out('Cannot connect to server, because config files are missing. Skipping removing runner from the server.');
      }
    }
    action = 'Removing .credentials';
    const removed = files.deleteConfig();
    log.out(removed.includes('.credentials') ? '\u221a Removed .credentials' : `Does not exist. Skipping ${action}`);
    log.out(removed.includes('.runner') ? '\u221a Removed .runner' : 'Does not exist. Skipping Removing .runner');
    return 0;
  } catch (e) {
    log.err(`Failed: ${action}`);
    log.err(e.message);
    return 1;
  }
}

module.exports = { configure, remove, ALREADY };
