'use strict';
// The runner's observable output, in the real runner's formats: stdout lines stamped
// `yyyy-MM-dd HH:mm:ssZ`, `_diag/<Name>_<yyyyMMdd-HHmmss>-utc.log` lines
// `[<ts> INFO Component] message`, and RUNNER_PERFLOG counters `Counter:ISO8601`.
const fs = require('node:fs');
const path = require('node:path');

const ts = (d = new Date()) => d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');

class Log {
  constructor(root, name) {
    const dir = path.join(root, '_diag');
    fs.mkdirSync(dir, { recursive: true });
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').replace(/\.\d+Z$/, '');
    this.file = path.join(dir, `${name}_${stamp}-utc.log`);
  }
  out(line = '') { process.stdout.write(`${line}\n`); }
  err(line) { process.stderr.write(`${line}\n`); }
  stamped(msg) { this.out(`${ts()}: ${msg}`); }
  diag(component, msg, level = 'INFO') {
    fs.appendFileSync(this.file, `[${ts()} ${level} ${component}] ${msg}\n`);
  }
  perf(counter) {
    const dir = process.env.RUNNER_PERFLOG;
    if (!dir) return;
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.appendFileSync(path.join(dir, 'Runner.perf'), `${counter}:${new Date().toISOString()}\n`);
    } catch { /* perf counters are best effort, as in the real runner */ }
  }
}

module.exports = { Log, ts };
