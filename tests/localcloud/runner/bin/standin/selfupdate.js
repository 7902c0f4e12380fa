'use strict';
// A self-update, as actions/runner's SelfUpdater (legacy AgentRefresh) and SelfUpdaterV2 (broker
// RunnerRefresh) do it: download the package into <work>/_update, check its sha256, unpack it,
// copy its bin/ and externals/ to bin.<v>/externals.<v> in the root, replace the root's top-level
// files by deleting and copying each, write <work>/_update.sh from bin.<v>/update.sh.template and
// start it with bash as a plain child (same process group), then the Listener exits 3 (4 when it
// runs once). Any failure prints `Runner update failed: …` on stderr and the Listener goes on.
// Citations are in ../../README.md ("Self-update").
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');
const files = require('./files');
const { VERSION } = require('./client');

// -1, 0, 1 comparing dotted numeric versions.
function compare(a, b) {
  const x = String(a).split('.').map(Number);
  const y = String(b).split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] || 0) - (y[i] || 0);
    if (d) return Math.sign(d);
  }
  return 0;
}

// .NET's words for a refused file operation (UnauthorizedAccessException).
function denied(e, p) {
  if (e && (e.code === 'EACCES' || e.code === 'EPERM')) return new Error(`Access to the path '${p}' is denied.`);
  return e;
}

// -> {version, url, sha256} or null when there is nothing newer (the legacy flow asks the server).
async function packageOf(listener, messageType, body) {
  if (messageType === 'RunnerRefresh') {
    return { version: body.target_version, url: body.download_url, sha256: body.sha256_checksum };
  }
  const r = await listener.api('GET', `/packages/agent/linux-x64/${encodeURIComponent(body.targetVersion || '')}`, { signal: listener.shutdown.signal });
  if (r.status !== 200) {
    listener.log.diag('SelfUpdater', `There is no package for agent and linux-x64 with version ${body.targetVersion}.`);
    return null;
  }
  if (compare(r.body.version, VERSION) <= 0) return null;
  return { version: r.body.version, url: r.body.downloadUrl, sha256: r.body.hashValue };
}

async function download(pkg, dir, signal) {
  const archive = path.join(dir, 'runner1.tar.gz');
  const res = await fetch(pkg.url, { signal });
  if (!res.ok) throw new Error(`Runner package '${pkg.url}' failed after 3 download attempts`);
  const body = Buffer.from(await res.arrayBuffer());
  fs.writeFileSync(archive, body);
  const hash = crypto.createHash('sha256').update(body).digest('hex');
  if (pkg.sha256 && hash !== pkg.sha256) {
    throw new Error(`Computed runner hash ${hash} did not match expected Runner Hash ${pkg.sha256} for ${archive}`);
  }
  execFileSync('tar', ['-xzf', archive], { cwd: dir, stdio: 'ignore' });
  fs.rmSync(archive, { force: true });
}

function copyToRoot(pkg, dir) {
  for (const sub of ['bin', 'externals']) {
    const to = path.join(files.ROOT, `${sub}.${pkg.version}`);
    try { fs.cpSync(path.join(dir, sub), to, { recursive: true }); } catch (e) { throw denied(e, to); }
  }
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const to = path.join(files.ROOT, entry.name);
    try {
      // Deleted first, then copied: the root must let the runner do both.
      try { fs.unlinkSync(to); } catch (e) { if (e.code !== 'ENOENT') throw e; }
      fs.copyFileSync(path.join(dir, entry.name), to);
      fs.chmodSync(to, fs.statSync(path.join(dir, entry.name)).mode & 0o777);
    } catch (e) { throw denied(e, to); }
  }
}

// Only the current version, the new one and the plain directories are kept.
function deleteOldVersions(pkg) {
  for (const name of fs.readdirSync(files.ROOT)) {
    const m = /^(bin|externals)\.(.+)$/.exec(name);
    if (!m || m[2] === VERSION || m[2] === pkg.version) continue;
    try { fs.rmSync(path.join(files.ROOT, name), { recursive: true, force: true }); } catch { /* next time */ }
  }
}

function writeScript(pkg, work) {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').replace(/\.\d+Z$/, '');
  const values = {
    _PROCESS_ID_: String(process.pid),
    _RUNNER_PROCESS_NAME_: 'Runner.Listener',
    _ROOT_FOLDER_: files.ROOT,
    _EXIST_RUNNER_VERSION_: VERSION,
    _DOWNLOAD_RUNNER_VERSION_: pkg.version,
    _UPDATE_LOG_: path.join(files.ROOT, '_diag', `SelfUpdate-${stamp}.log`),
    _RESTART_INTERACTIVE_RUNNER_: '0',
  };
  let text = fs.readFileSync(path.join(files.ROOT, `bin.${pkg.version}`, 'update.sh.template'), 'utf8');
  for (const [k, v] of Object.entries(values)) text = text.split(k).join(v);
  const script = path.join(work, '_update.sh');
  fs.rmSync(script, { force: true });
  fs.writeFileSync(script, text);
  return script;
}

// -> true when the update script runs and the Listener must exit for it.
async function selfUpdate(listener, messageType, body) {
  const log = listener.log;
  let pkg;
  try {
    pkg = await packageOf(listener, messageType, body || {});
  } catch (e) {
    log.diag('SelfUpdater', `Package lookup failed: ${e.message}`, 'ERROR');
    return false;
  }
  if (!pkg) {
    log.diag('SelfUpdater', "Can't find available update package.");
    return false;
  }
  try {
    log.out('Runner update in progress, do not shutdown runner.');
    log.out(`Downloading ${pkg.version} runner`);
    const work = path.resolve(files.ROOT, listener.settings.workFolder || '_work');
    const dir = path.join(work, '_update');
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    await download(pkg, dir, listener.shutdown.signal);
    copyToRoot(pkg, dir);
    log.out('Waiting for current job finish running.'); // jobs run one at a time here: none is
    deleteOldVersions(pkg);
    log.out('Generate and execute update script.');
    const script = writeScript(pkg, work);
    fs.rmSync('update.finished', { force: true }); // relative: the working directory, as the real one
    const child = spawn('bash', [script], { stdio: 'ignore' }); // not detached: the Listener's group
    child.unref();
    log.out('Runner will exit shortly for update, should be back online within 10 seconds.');
    log.diag('SelfUpdater', `Update script ${script} started; exiting for the update to ${pkg.version}.`);
    return true;
  } catch (e) {
    log.err(`Runner update failed: ${e.message}`);
    log.diag('SelfUpdater', e.stack || String(e), 'ERROR');
    return false;
  } finally {
    log.out('Runner update process finished.');
  }
}

module.exports = { selfUpdate, compare };
