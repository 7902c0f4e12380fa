'use strict';
// #cloud-config user-data booted by the EC2 stand-in like cloud-init would (ec2/cloud_config.js),
// driven through RunInstances by the real AWS SDK: write_files under the instance's directory with
// their modes and encodings, then runcmd (strings as shell lines, lists as quoted words) with the
// instance's environment; unsupported keys reported, a malformed document not run.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const E = require('@aws-sdk/client-ec2');
const { createEc2 } = require('../ec2');
const { runcmdScript } = require('../ec2/cloud_config');
const { CredentialStore } = require('../lib/credentials');
const { Faults } = require('../lib/faults');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const b64 = (s) => Buffer.from(s).toString('base64');

async function waitFor(what, fn, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

let ec2; let client; let stateDir;
test.before(async () => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ec2-cloud-config-test-'));
  ec2 = await createEc2({ credentials: new CredentialStore(), faults: new Faults(), stateDir, region: 'us-east-1',
    log: (level, msg) => { if (level === 'error') console.error(msg); } });
  client = new E.EC2Client({ region: 'us-east-1', endpoint: ec2.url, maxAttempts: 1,
    credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' } });
});
test.after(async () => {
  await ec2.close();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

const launch = async (userData) => (await client.send(new E.RunInstancesCommand({ MinCount: 1, MaxCount: 1,
  ImageId: 'ami-0123456789abcdef0', InstanceType: 't3.micro', UserData: b64(userData) }))).Instances[0].InstanceId;
const terminate = (id) => client.send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
const dirOf = (id) => path.join(stateDir, 'instances', id);
const consoleOf = (id) => {
  try { return fs.readFileSync(path.join(dirOf(id), 'console.log'), 'utf8'); } catch { return ''; }
};
const modeOf = (p) => fs.statSync(p).mode & 0o7777;

test('runcmd becomes one sh script: strings verbatim, list items shell-quoted', () => {
  assert.equal(runcmdScript(['echo "$HOME" | cat', ['printf', '%s\n', "it's $x", 'a b']]),
    `#!/bin/sh\necho "$HOME" | cat\n'printf' '%s\n' 'it'\\''s $x' 'a b'\n`);
});

test('a #cloud-config boots: files written with their modes, then runcmd runs with the instance environment', async () => {
  const tool = '#!/bin/sh\necho "tool ran with $1 in $RUNPOOL_LOCALCLOUD_INSTANCE_DIR" > "$RUNPOOL_LOCALCLOUD_INSTANCE_DIR/tool.out"\n';
  const script = '#!/bin/bash\n\n  # indented, then a blank line above\necho "$HOME"\n';
  const userData = [
    '#cloud-config',
    '# a comment',
    'packages: [jq]',
    'write_files:',
    '  - path: /var/lib/demo/boot.sh',
    '    owner: root:root',
    '    permissions: "0700"',
    '    content: |2+',
    ...script.split('\n').slice(0, -1).map((l) => (l ? `      ${l}` : '')),
    '  - path: /opt/demo/tool',
    '    permissions: "0755"',
    '    encoding: b64',
    `    content: ${b64(tool)}`,
    '  - path: /etc/demo/secret',
    '    permissions: 0600',
    '    content: s3cret',
    '  - path: /etc/demo/default-mode',
    '    content: "plain"',
    'runcmd:',
    '  - \'"${RUNPOOL_LOCALCLOUD_INSTANCE_DIR:-}/opt/demo/tool" "two words" && echo "string item ran" > "$RUNPOOL_LOCALCLOUD_INSTANCE_DIR/string.out"\'',
    '  - [sh, -c, \'printf "%s|" "$@" > "$RUNPOOL_LOCALCLOUD_INSTANCE_DIR/list.out"\', sh, "a b", "it\'s", "$HOME"]',
    '',
  ].join('\n');
  const id = await launch(userData);
  const dir = dirOf(id);
  try {
    await waitFor('runcmd to end', () => consoleOf(id).includes('user-data exited with status 0'));
    assert.equal(fs.readFileSync(path.join(dir, 'var/lib/demo/boot.sh'), 'utf8'), script);
    assert.equal(modeOf(path.join(dir, 'var/lib/demo/boot.sh')), 0o700);
    assert.equal(fs.readFileSync(path.join(dir, 'opt/demo/tool'), 'utf8'), tool);
    assert.equal(modeOf(path.join(dir, 'opt/demo/tool')), 0o755);
    assert.equal(fs.readFileSync(path.join(dir, 'etc/demo/secret'), 'utf8'), 's3cret');
    assert.equal(modeOf(path.join(dir, 'etc/demo/secret')), 0o600, 'unquoted 0600 is octal, as in YAML 1.1');
    assert.equal(modeOf(path.join(dir, 'etc/demo/default-mode')), 0o644);
    assert.equal(fs.readFileSync(path.join(dir, 'tool.out'), 'utf8'), `tool ran with two words in ${dir}\n`);
    assert.equal(fs.readFileSync(path.join(dir, 'string.out'), 'utf8'), 'string item ran\n');
    assert.equal(fs.readFileSync(path.join(dir, 'list.out'), 'utf8'), "a b|it's|$HOME|", 'list words are not expanded');
    const out = consoleOf(id);
    assert.match(out, /cloud-config: packages is not supported by the local cloud: ignored/);
    assert.match(out, /cloud-config: wrote \/etc\/demo\/secret \(mode 0600\)/);
    assert.match(out, /running cloud-config runcmd/);
  } finally {
    await terminate(id);
  }
});

test('a malformed or escaping #cloud-config runs nothing; one without runcmd only writes files', async () => {
  const bad = await launch('#cloud-config\nwrite_files: [\nruncmd:\n  - touch ran\n');
  const escaping = await launch('#cloud-config\nwrite_files:\n  - path: /../../escaped\n    content: x\nruncmd:\n  - touch ran\n');
  const quiet = await launch('#cloud-config\nwrite_files:\n  - path: /etc/only\n    content: x\n');
  try {
    await waitFor('bad refused', () => consoleOf(bad).includes('cloud-config not applied'));
    await waitFor('escaping refused', () => /cloud-config not applied: .*leaves the instance's directory/.test(consoleOf(escaping)));
    await waitFor('quiet booted', () => consoleOf(quiet).includes('cloud-config has no runcmd'));
    await sleep(200);
    for (const id of [bad, escaping]) assert.equal(fs.existsSync(path.join(dirOf(id), 'ran')), false);
    assert.equal(fs.existsSync(path.join(stateDir, 'escaped')), false);
    assert.equal(fs.readFileSync(path.join(dirOf(quiet), 'etc/only'), 'utf8'), 'x');
  } finally {
    for (const id of [bad, escaping, quiet]) await terminate(id);
  }
});
