'use strict';
// GET .../runners/downloads: the stand-in runner root (tests/localcloud/runner), packed as a
// real tar.gz with its sha256, served unauthenticated from /_runner/<filename> the way release
// assets are, so an installer can download it and verify the checksum.
const crypto = require('node:crypto');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { VERSION } = require('./pipelines');

const TEMPLATE = path.join(__dirname, '..', 'runner');
const FILENAME = `actions-runner-linux-x64-${VERSION}.tar.gz`;

function createDownloads() {
  let packed = null;
  const pack = () => (packed ||= new Promise((resolve, reject) => {
    execFile('tar', ['-czf', '-', '--owner=0', '--group=0', '--exclude=README.md', '-C', TEMPLATE, '.'],
      { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
        if (err) { packed = null; return reject(err); }
        resolve({ body: stdout, sha256: crypto.createHash('sha256').update(stdout).digest('hex') });
      });
  }));
  return {
    filename: FILENAME,
    async list(origin) {
      const { sha256 } = await pack();
      return [{ os: 'linux', architecture: 'x64', download_url: `${origin}/_runner/${FILENAME}`, filename: FILENAME, sha256_checksum: sha256 }];
    },
    // -> Buffer or null for an unknown file name
    async get(name) { return name === FILENAME ? (await pack()).body : null; },
  };
}

module.exports = { createDownloads };
