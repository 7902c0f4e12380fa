'use strict';
// A minimal cloud-init for "#cloud-config" user-data, enough to boot runpool's instances the way EC2
// does: write_files (under the instance's directory, the prefix the boot script reads from
// RUNPOOL_LOCALCLOUD_INSTANCE_DIR) and runcmd, run as cloud-init runs it — one generated sh script,
// a string item a line verbatim, a list item a command whose words are shell-quoted. Other keys are
// reported and ignored. Parsed as YAML 1.1, like cloud-init's PyYAML (0700 is octal there).
const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');

const SUPPORTED = new Set(['write_files', 'runcmd']);

function isCloudConfig(buf) {
  return !!buf && buf.subarray(0, 13).toString() === '#cloud-config';
}

const shellQuote = (word) => `'${String(word).replace(/'/g, "'\\''")}'`;

// The runcmd script cloud-init writes (its util.shellify).
function runcmdScript(items) {
  const lines = items.map((item) => (Array.isArray(item) ? item.map(shellQuote).join(' ') : String(item)));
  return `#!/bin/sh\n${lines.join('\n')}\n`;
}

function fileData(f) {
  const encoding = String(f.encoding || 'text/plain').toLowerCase();
  const content = f.content == null ? '' : String(f.content);
  if (encoding === 'b64' || encoding === 'base64') return Buffer.from(content, 'base64');
  if (encoding === 'text/plain') return Buffer.from(content, 'utf8');
  throw new Error(`write_files ${f.path}: encoding ${encoding} is not supported here`);
}

// cloud-init's permissions: an integer, or an octal string; 0644 when absent.
function fileMode(f) {
  if (f.permissions == null) return 0o644;
  const mode = typeof f.permissions === 'number' ? f.permissions : /^[0-7]+$/.test(String(f.permissions))
    ? parseInt(String(f.permissions), 8) : NaN;
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o7777) throw new Error(`write_files ${f.path}: bad permissions ${f.permissions}`);
  return mode;
}

// Applies the document to the instance directory `dir`; returns the runcmd script's path, or null
// when there is nothing to run. `say` gets the console lines. Throws on what cloud-init would refuse.
function applyCloudConfig(text, dir, say) {
  const doc = YAML.parse(text, { version: '1.1' });
  if (doc == null) return null;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new Error('the document is not a mapping');
  for (const key of Object.keys(doc)) {
    if (!SUPPORTED.has(key)) say(`cloud-config: ${key} is not supported by the local cloud: ignored`);
  }
  const files = doc.write_files == null ? [] : doc.write_files;
  if (!Array.isArray(files)) throw new Error('write_files is not a list');
  for (const f of files) {
    if (!f || typeof f.path !== 'string' || !path.isAbsolute(f.path)) throw new Error('a write_files entry has no absolute path');
    const target = path.join(dir, f.path);
    if (!target.startsWith(dir + path.sep)) throw new Error(`write_files ${f.path} leaves the instance's directory`);
    const mode = fileMode(f);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, fileData(f), { flag: f.append === true ? 'a' : 'w' });
    fs.chmodSync(target, mode);  // writeFileSync's mode passes through the umask and spares an existing file
    say(`cloud-config: wrote ${f.path} (mode ${mode.toString(8).padStart(4, '0')})`);
  }
  const runcmd = doc.runcmd == null ? [] : doc.runcmd;
  if (!Array.isArray(runcmd)) throw new Error('runcmd is not a list');
  if (runcmd.length === 0) return null;
  const script = path.join(dir, 'var', 'lib', 'cloud', 'instance', 'scripts', 'runcmd');
  fs.mkdirSync(path.dirname(script), { recursive: true });
  fs.writeFileSync(script, runcmdScript(runcmd));
  fs.chmodSync(script, 0o700);
  return script;
}

module.exports = { isCloudConfig, applyCloudConfig, runcmdScript };
