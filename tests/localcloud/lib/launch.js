'use strict';
// Test helper: runs localcloud.js as a child process and hands back its ready line. The child's
// stdin stays open as its lifeline; stop() closes it, which is how the local cloud shuts down.
const { spawn } = require('node:child_process');
const path = require('node:path');

const SCRIPT = path.join(__dirname, '..', 'localcloud.js');

/**
 * launchLocalCloud({ args = ['--quiet'], timeoutMs = 20000, env }) -> Promise<{
 *   ready,            // the parsed ready line (endpoints, credentials, region, stateDir)
 *   child,            // the ChildProcess
 *   stderr(),         // everything it wrote to stderr so far
 *   exited,           // Promise<{ code, signal }>
 *   stop(timeoutMs),  // closes stdin, waits for exit (SIGKILL after timeoutMs); -> { code, signal }
 * }>
 */
function launchLocalCloud({ args = ['--quiet'], timeoutMs = 20_000, env = process.env } = {}) {
  const child = spawn(process.execPath, [SCRIPT, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const stop = async (ms = 10_000) => {
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    const r = await exited;
    clearTimeout(timer);
    return r;
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no ready line in ${timeoutMs} ms; stderr:\n${err}`)); }, timeoutMs);
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      try {
        resolve({ ready: JSON.parse(out.slice(0, nl)), child, stderr: () => err, exited, stop });
      } catch (e) {
        child.kill('SIGKILL');
        reject(new Error(`bad ready line ${JSON.stringify(out.slice(0, nl))}: ${e.message}`));
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`localcloud exited (${code ?? signal}) before ready; stderr:\n${err}`));
    });
  });
}

module.exports = { launchLocalCloud, SCRIPT };
