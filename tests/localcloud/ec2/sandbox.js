'use strict';
// The processes of one instance. Preferred: a PID namespace (`unshare --fork --pid --kill-child
// --mount-proc`), so that SIGKILL to its init ends every process of the instance, including ones that
// moved to another session or process group. Fallback (unshare unusable): a new session, the
// instance's processes being those in that session or carrying its RUNPOOL_LOCALCLOUD_INSTANCE_DIR
// in their environment. `setpriv --pdeathsig KILL` ties the instance to the local cloud's process,
// so a local cloud killed by SIGKILL takes its instances with it.
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const INIT = path.join(__dirname, 'init.sh');
const SYS_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Resolves with the promise's value, or null after `ms`; leaves no timer behind either way.
function within(promise, ms) {
  let t;
  return Promise.race([promise, new Promise((r) => { t = setTimeout(r, ms, null); })]).finally(() => clearTimeout(t));
}

function which(cmd) {
  for (const d of SYS_PATH.split(':')) {
    const p = path.join(d, cmd);
    try { fs.accessSync(p, fs.constants.X_OK); return p; } catch { /* next */ }
  }
  return null;
}

// Decides once how instances are isolated. Returns { mode: 'pidns'|'session', unshare, setpriv, why }.
// `force` = 'session' skips the namespace (to exercise the fallback).
function probe(force) {
  const unshare = which('unshare');
  const setpriv = which('setpriv');
  if (force === 'session') return { mode: 'session', unshare, setpriv, why: 'session isolation requested' };
  if (!unshare) return { mode: 'session', unshare, setpriv, why: 'unshare not found' };
  const r = spawnSync(unshare, ['--fork', '--pid', '--kill-child', '--mount-proc', 'true'],
    { timeout: 5000, encoding: 'utf8' });
  if (r.status !== 0) return { mode: 'session', unshare, setpriv, why: `unshare failed: ${(r.stderr || r.error || '').toString().trim()}` };
  return { mode: 'pidns', unshare, setpriv, why: '' };
}

function readStat(pid) {
  // /proc/<pid>/stat: "pid (comm) state ppid pgrp session ..." — comm may hold spaces or parens.
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { state: f[0], ppid: Number(f[1]), session: Number(f[3]) };
}

function allPids() {
  return fs.readdirSync('/proc').filter((n) => /^[0-9]+$/.test(n)).map(Number);
}

class Sandbox {
  // opts: { isolation (from probe), dir, env, argv: [] or [script], consolePath, log }
  constructor(opts) {
    Object.assign(this, opts);
    this.child = null;
    this.initPid = null;
    this.nsId = null;
    this.exited = null;
    this.marker = `RUNPOOL_LOCALCLOUD_INSTANCE_DIR=${this.env.RUNPOOL_LOCALCLOUD_INSTANCE_DIR}`;
  }

  async start() {
    const iso = this.isolation;
    let argv = [INIT, ...this.argv];
    if (iso.mode === 'pidns') argv = [iso.unshare, '--fork', '--pid', '--kill-child', '--mount-proc', ...argv];
    if (iso.setpriv) argv = [iso.setpriv, '--pdeathsig', 'KILL', '--', ...argv];
    const out = fs.openSync(this.consolePath, 'a');
    try {
      this.child = spawn(argv[0], argv.slice(1), { cwd: this.dir, env: this.env, stdio: ['ignore', out, out],
        detached: iso.mode === 'session' });
    } finally { fs.closeSync(out); }
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => resolve({ code, signal }));
      this.child.once('error', (err) => resolve({ error: err }));
    });
    if (iso.mode === 'session') { this.initPid = this.child.pid; return; }
    // The namespace's init is the child that unshare forks; find it to learn the namespace.
    for (let i = 0; i < 400 && !this.nsId; i++) {
      for (const pid of allPids()) {
        try {
          if (readStat(pid).ppid !== this.child.pid) continue;
          this.nsId = fs.readlinkSync(`/proc/${pid}/ns/pid`);
          this.initPid = pid;
          break;
        } catch { /* raced with its exit */ }
      }
      if (!this.nsId) {
        const done = await within(this.exited, 5);
        if (done) throw new Error(`instance init exited at once: ${JSON.stringify(done)}`);
      }
    }
    if (!this.nsId) throw new Error('could not find the instance init process');
  }

  // Host pids of the instance's live (non-zombie) processes, init included.
  members() {
    if (!this.initPid) return [];
    const out = [];
    for (const pid of allPids()) {
      try {
        const st = readStat(pid);
        if (st.state === 'Z' || st.state === 'X') continue;
        if (this.nsId) {
          if (fs.readlinkSync(`/proc/${pid}/ns/pid`) === this.nsId) out.push(pid);
        } else if (st.session === this.initPid || (pid !== process.pid && this.hasMarker(pid))) {
          out.push(pid);
        }
      } catch { /* gone meanwhile, or not ours to read */ }
    }
    return out;
  }

  hasMarker(pid) {
    const env = fs.readFileSync(`/proc/${pid}/environ`, 'latin1');
    return env.split('\0').includes(this.marker);
  }

  // SIGTERM to every process once (those that appear later too), SIGKILL at the grace deadline
  // or as soon as only init is left; resolves when nothing of the instance remains.
  async stop(graceMs) {
    if (!this.child) return;
    const signalled = new Set();
    const deadline = Date.now() + graceMs;
    for (;;) {
      const others = this.members().filter((p) => p !== this.initPid);
      if (!others.length || Date.now() >= deadline) break;
      for (const p of others) if (!signalled.has(p)) { signalled.add(p); kill(p, 'SIGTERM'); }
      await sleep(20);
    }
    const hardDeadline = Date.now() + 10000;
    for (;;) {
      const left = this.members();
      if (!left.length) break;
      if (Date.now() >= hardDeadline) { this.log('error', `instance processes survive SIGKILL: ${left.join(' ')}`); break; }
      if (this.nsId) kill(this.initPid, 'SIGKILL'); // the kernel then kills the whole namespace
      else for (const p of left) kill(p, 'SIGKILL');
      await sleep(10);
    }
    await within(this.exited, 5000);
  }
}

function kill(pid, sig) {
  try { process.kill(pid, sig); } catch { /* already gone */ }
}

module.exports = { Sandbox, probe, SYS_PATH };
