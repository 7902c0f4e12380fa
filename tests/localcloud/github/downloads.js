'use strict';
// GET .../runners/downloads: the stand-in runner root (tests/localcloud/runner), packed as a
// real tar.gz with its sha256, served unauthenticated from /_runner/<filename> the way release
// assets are, so an installer can download it and verify the checksum. A self-update asks for
// another version: the same root packed with `bin/standin/VERSION` saying that version (what the
// stand-in runner reports as its own), so an updated runner is told apart from the old one.
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { VERSION } = require('./pipelines');

const TEMPLATE = path.join(__dirname, '..', 'runner');
const VERSION_RE = /^\d+\.\d+\.\d+$/;
const filenameOf = (version) => `actions-runner-linux-x64-${version}.tar.gz`;

function tarGz(dir) {
  return new Promise((resolve, reject) => {
    execFile('tar', ['-czf', '-', '--owner=0', '--group=0', '--exclude=README.md', '-C', dir, '.'],
      { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
  });
}

async function packVersion(version) {
  if (version === VERSION) return tarGz(TEMPLATE);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'runner-package-'));
  try {
    fs.cpSync(TEMPLATE, tmp, { recursive: true });
    fs.writeFileSync(path.join(tmp, 'bin', 'standin', 'VERSION'), `${version}\n`);
    return await tarGz(tmp);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function createDownloads() {
  const packed = new Map(); // version -> Promise<{ body, sha256 }>
  const pack = (version) => {
    if (!packed.has(version)) {
      packed.set(version, packVersion(version).then(
        (body) => ({ body, sha256: crypto.createHash('sha256').update(body).digest('hex') }),
        (err) => { packed.delete(version); throw err; },
      ));
    }
    return packed.get(version);
  };
  return {
    filename: filenameOf(VERSION),
    // The package of `version` (a self-update's target): {version, filename, download_url, sha256_checksum}.
    async package(origin, version = VERSION) {
      if (!VERSION_RE.test(version)) throw new Error(`no runner package ${version}`);
      const { sha256 } = await pack(version);
      return { version, filename: filenameOf(version), download_url: `${origin}/_runner/${filenameOf(version)}`, sha256_checksum: sha256 };
    },
    async list(origin) {
      const p = await this.package(origin);
      return [{ os: 'linux', architecture: 'x64', download_url: p.download_url, filename: p.filename, sha256_checksum: p.sha256_checksum }];
    },
    // -> Buffer or null for an unknown file name
    async get(name) {
      const m = /^actions-runner-linux-x64-(\d+\.\d+\.\d+)\.tar\.gz$/.exec(name);
      return m ? (await pack(m[1])).body : null;
    },
  };
}

module.exports = { createDownloads };
