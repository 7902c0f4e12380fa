'use strict';
// The EC2 stand-in driven by the real AWS SDK for JavaScript (its own serialiser and XML parser):
// instances as real processes, states, filters, pagination, idempotency, fleets, tags, templates, errors.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const E = require('@aws-sdk/client-ec2');
const { createEc2 } = require('../ec2');
const { CredentialStore } = require('../lib/credentials');
const { Faults } = require('../lib/faults');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const b64 = (s) => Buffer.from(s).toString('base64');
const AMI = 'ami-0123456789abcdef0';

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
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ec2-test-'));
  ec2 = await createEc2({ credentials: new CredentialStore(), faults: new Faults(), stateDir, region: 'us-east-1',
    log: (level, msg) => { if (level === 'error') console.error(msg); } });
  client = new E.EC2Client({ region: 'us-east-1', endpoint: ec2.url, maxAttempts: 1,
    credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret' } });
});
test.after(async () => {
  await ec2.close();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

const send = (cmd) => client.send(cmd);
const run = (input) => send(new E.RunInstancesCommand({ MinCount: 1, MaxCount: 1, ImageId: AMI, InstanceType: 't3.micro', ...input }));
const describe = async (ids) => (await send(new E.DescribeInstancesCommand({ InstanceIds: ids })))
  .Reservations.flatMap((r) => r.Instances);
const stateOf = async (id) => (await describe([id]))[0].State.Name;
const ctl = async (method, p, body) => {
  const r = await ec2.control(method, p, body);
  assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
};
async function rejects(promise, code, status) {
  const err = await promise.then(() => null, (e) => e);
  assert.ok(err, `expected ${code}`);
  assert.equal(err.name, code, err.message);
  if (status) assert.equal(err.$metadata.httpStatusCode, status);
  return err;
}
// Host pids whose command line is exactly `argv` (NUL-separated), and their session ids.
function findProcs(argv) {
  const want = argv.join('\0') + '\0';
  const out = [];
  for (const n of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      if (fs.readFileSync(`/proc/${n}/cmdline`, 'latin1') !== want) continue;
      const st = fs.readFileSync(`/proc/${n}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      if (f[0] !== 'Z') out.push({ pid: Number(n), session: Number(f[3]) });
    } catch { /* gone */ }
  }
  return out;
}

test('an instance runs its user-data script in a clean environment; terminate ends every process', async () => {
  const script = '#!/bin/sh\nenv > env.txt\necho started > root/started\n' +
    "setsid sh -c 'exec sleep 987651' &\n" + // leaves the instance's session: must still die
    'exec sleep 987652\n';
  const r = await run({ UserData: b64(script) });
  const inst = r.Instances[0];
  assert.match(inst.InstanceId, /^i-[0-9a-f]{17}$/);
  assert.deepEqual(inst.State, { Code: 0, Name: 'pending' });
  const id = inst.InstanceId;
  await waitFor('running', async () => (await stateOf(id)) === 'running');
  const info = await ctl('GET', `/instances/${id}`);
  const dir = path.join(stateDir, 'instances', id);
  assert.equal(info.dir, dir);
  assert.equal(fs.readFileSync(path.join(dir, 'user-data'), 'utf8'), script);
  await waitFor('the script to write its file', () => fs.existsSync(path.join(dir, 'root', 'started')));
  const env = Object.fromEntries(fs.readFileSync(path.join(dir, 'env.txt'), 'utf8').trim().split('\n').map((l) => {
    const i = l.indexOf('='); return [l.slice(0, i), l.slice(i + 1)];
  }));
  assert.equal(env.HOME, dir);
  assert.equal(env.RUNPOOL_LOCALCLOUD_INSTANCE_DIR, dir);
  assert.equal(env.AWS_EC2_METADATA_SERVICE_ENDPOINT, info.imdsUrl);
  assert.equal(env.PATH.split(':')[0], path.join(dir, 'bin'));
  const extra = Object.keys(env).filter((k) => !['HOME', 'PATH', 'AWS_EC2_METADATA_SERVICE_ENDPOINT',
    'RUNPOOL_LOCALCLOUD_INSTANCE_DIR', 'PWD', 'SHLVL', '_', 'OLDPWD'].includes(k));
  assert.deepEqual(extra, [], 'no variable of the host leaks into the instance');
  assert.deepEqual(env, { ...env, ...info.env });

  const escaped = await waitFor('the escaped process', () => findProcs(['sleep', '987651'])[0]);
  const main = await waitFor('the boot process', () => findProcs(['sleep', '987652'])[0]);
  assert.notEqual(escaped.session, main.session, 'the child really left the session');
  // Fresh looks until it shows: a look may predate the boot script's exec under load.
  await waitFor('the boot process among the instance\'s pids',
    async () => (await ctl('GET', `/instances/${id}`)).pids.includes(main.pid));

  const t = await send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
  assert.deepEqual(t.TerminatingInstances, [{ InstanceId: id, CurrentState: { Code: 32, Name: 'shutting-down' },
    PreviousState: { Code: 16, Name: 'running' } }]);
  assert.equal(await stateOf(id), 'shutting-down');
  await waitFor('terminated', async () => (await stateOf(id)) === 'terminated');
  assert.deepEqual(findProcs(['sleep', '987651']), []);
  assert.deepEqual(findProcs(['sleep', '987652']), []);
  const [gone] = await describe([id]);
  assert.equal(gone.StateReason.Code, 'Client.UserInitiatedShutdown');
  assert.match(gone.StateTransitionReason, /^User initiated \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d GMT\)$/);
  assert.equal(gone.PrivateIpAddress, undefined);
  const again = await send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
  assert.deepEqual(again.TerminatingInstances[0].CurrentState, { Code: 48, Name: 'terminated' });
  assert.deepEqual(again.TerminatingInstances[0].PreviousState, { Code: 48, Name: 'terminated' });
});

test('the instance stays running when its boot script ends; other user-data is not executed', async () => {
  const a = (await run({ UserData: b64('#!/bin/sh\necho bye\n') })).Instances[0].InstanceId;
  const b = (await run({ UserData: b64('touch /tmp/never\n') })).Instances[0].InstanceId;
  const consoleOf = (id) => {
    try { return fs.readFileSync(path.join(stateDir, 'instances', id, 'console.log'), 'utf8'); } catch { return ''; }
  };
  await waitFor('the script to end', () => consoleOf(a).includes('user-data exited with status 0'));
  assert.match(consoleOf(a), /^bye$/m);
  await sleep(100);
  assert.equal(await stateOf(a), 'running');
  await waitFor('b running', async () => (await stateOf(b)) === 'running');
  assert.match(consoleOf(b), /neither a script \(#!\) nor #cloud-config/);
  await send(new E.TerminateInstancesCommand({ InstanceIds: [a, b] }));
});

test('a process ignoring SIGTERM is killed after the grace period', async () => {
  await ctl('POST', '/settings', { terminateGraceMs: 300 });
  try {
    const id = (await run({ UserData: b64("#!/bin/sh\ntrap '' TERM\necho ready > ready\nwhile :; do sleep 0.05; done\n") })).Instances[0].InstanceId;
    const dir = path.join(stateDir, 'instances', id);
    await waitFor('ready', () => fs.existsSync(path.join(dir, 'ready')));
    const t0 = Date.now();
    await send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
    await waitFor('terminated', async () => (await stateOf(id)) === 'terminated');
    const took = Date.now() - t0;
    assert.ok(took >= 280 && took < 3000, `took ${took} ms`);
  } finally {
    await ctl('POST', '/settings', { terminateGraceMs: 1000 });
  }
});

test('bin/poweroff is an instance-initiated shutdown: terminate by default, stop when asked', async () => {
  const script = '#!/bin/sh\necho booted\nsleep 0.1\npoweroff\nsleep 100\n';
  const a = (await run({ UserData: b64(script) })).Instances[0].InstanceId;
  const b = (await run({ UserData: b64(script), InstanceInitiatedShutdownBehavior: 'stop' })).Instances[0].InstanceId;
  await waitFor('a terminated', async () => (await stateOf(a)) === 'terminated');
  await waitFor('b stopped', async () => (await stateOf(b)) === 'stopped');
  const [ia, ib] = await describe([a, b]);
  assert.equal(ia.StateReason.Code, 'Client.InstanceInitiatedShutdown');
  assert.deepEqual(ib.State, { Code: 80, Name: 'stopped' });
  assert.deepEqual((await ctl('GET', `/instances/${b}`)).pids, []);
  const t = await send(new E.TerminateInstancesCommand({ InstanceIds: [b] }));
  assert.equal(t.TerminatingInstances[0].PreviousState.Name, 'stopped');
  await waitFor('b terminated', async () => (await stateOf(b)) === 'terminated');
});

test('DescribeInstances filters and paginates', async () => {
  const a = await run({ MinCount: 8, MaxCount: 8, TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'batch', Value: 'pg-a' }] }] });
  const b = await run({ MinCount: 5, MaxCount: 5, InstanceType: 'c5.large',
    TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'batch', Value: 'pg-b' }, { Key: 'only-b', Value: '' }] }] });
  const s = await run({ InstanceMarketOptions: { MarketType: 'spot' },
    TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'batch', Value: 'pg-s' }] }] });
  assert.equal(a.Instances.length, 8);
  const all = [...a.Instances, ...b.Instances, ...s.Instances].map((i) => i.InstanceId);
  assert.equal(new Set(a.Instances.map((i) => i.InstanceId)).size, 8);
  assert.deepEqual(a.Instances.map((i) => i.AmiLaunchIndex), [0, 1, 2, 3, 4, 5, 6, 7]);

  const filters = [{ Name: 'tag:batch', Values: ['pg-*'] }];
  const pages = [];
  let token;
  do {
    const r = await send(new E.DescribeInstancesCommand({ Filters: filters, MaxResults: 5, NextToken: token }));
    pages.push(r.Reservations.flatMap((x) => x.Instances).map((i) => i.InstanceId));
    token = r.NextToken;
  } while (token && pages.length < 10);
  assert.deepEqual(pages.map((p) => p.length), [5, 5, 4]);
  assert.deepEqual(pages.flat(), all);
  // The SDK's own paginator agrees.
  const viaPaginator = [];
  for await (const page of E.paginateDescribeInstances({ client, pageSize: 5 }, { Filters: filters })) {
    viaPaginator.push(...page.Reservations.flatMap((x) => x.Instances).map((i) => i.InstanceId));
  }
  assert.deepEqual(viaPaginator, all);

  await waitFor('all running', async () => (await describe(all)).every((i) => i.State.Name === 'running'));
  const ids = async (f) => (await send(new E.DescribeInstancesCommand({ Filters: f })))
    .Reservations.flatMap((x) => x.Instances).map((i) => i.InstanceId);
  assert.deepEqual(await ids([{ Name: 'tag:batch', Values: ['pg-b'] }]), b.Instances.map((i) => i.InstanceId));
  assert.deepEqual(await ids([{ Name: 'tag-key', Values: ['only-b'] }]), b.Instances.map((i) => i.InstanceId));
  assert.deepEqual(await ids([...filters, { Name: 'instance-type', Values: ['c5.large'] }]), b.Instances.map((i) => i.InstanceId));
  assert.deepEqual(await ids([...filters, { Name: 'instance-lifecycle', Values: ['spot'] }]), [s.Instances[0].InstanceId]);
  assert.deepEqual(await ids([{ Name: 'instance-id', Values: [all[3], all[9]] }]), [all[3], all[9]]);
  const [spot] = await describe([s.Instances[0].InstanceId]);
  assert.equal(spot.InstanceLifecycle, 'spot');
  assert.match(spot.SpotInstanceRequestId, /^sir-/);

  await send(new E.TerminateInstancesCommand({ InstanceIds: a.Instances.map((i) => i.InstanceId) }));
  await waitFor('a terminated', async () => (await describe(a.Instances.map((i) => i.InstanceId))).every((i) => i.State.Name === 'terminated'));
  const running = await ids([...filters, { Name: 'instance-state-name', Values: ['running'] }]);
  assert.deepEqual(running, [...b.Instances, ...s.Instances].map((i) => i.InstanceId));
  const gone = await ids([...filters, { Name: 'instance-state-name', Values: ['terminated', 'shutting-down'] }]);
  assert.deepEqual(gone, a.Instances.map((i) => i.InstanceId));
  await send(new E.TerminateInstancesCommand({ InstanceIds: running }));
  await rejects(send(new E.DescribeInstancesCommand({ Filters: [{ Name: 'no-such-filter', Values: ['x'] }] })), 'InvalidParameterValue');
  await rejects(send(new E.DescribeInstancesCommand({ MaxResults: 4 })), 'InvalidParameterValue');
  await rejects(send(new E.DescribeInstancesCommand({ NextToken: 'bogus' })), 'InvalidPaginationToken');
});

test('terminated instances vanish after terminatedVisibleMs', async () => {
  await ctl('POST', '/settings', { terminatedVisibleMs: 200 });
  try {
    const id = (await run({})).Instances[0].InstanceId;
    await send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
    await waitFor('terminated', async () => (await stateOf(id)) === 'terminated');
    await sleep(250);
    await rejects(describe([id]), 'InvalidInstanceID.NotFound');
  } finally {
    await ctl('POST', '/settings', { terminatedVisibleMs: 3600000 });
  }
});

test('ClientToken: a repeated RunInstances or CreateFleet launches once', async () => {
  const before = (await ctl('GET', '/calls')).actions.RunInstances || 0;
  const input = { ClientToken: 'idem-run-1', TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'idem', Value: '1' }] }] };
  const r1 = await run(input);
  const r2 = await run(input);
  assert.equal(r2.ReservationId, r1.ReservationId);
  assert.deepEqual(r2.Instances.map((i) => i.InstanceId), r1.Instances.map((i) => i.InstanceId));
  const found = (await send(new E.DescribeInstancesCommand({ Filters: [{ Name: 'client-token', Values: ['idem-run-1'] }] })))
    .Reservations.flatMap((x) => x.Instances);
  assert.equal(found.length, 1);
  const calls = await ctl('GET', '/calls');
  assert.equal(calls.actions.RunInstances, before + 2);
  assert.deepEqual(calls.clientTokens.RunInstances.filter((t) => t === 'idem-run-1'), ['idem-run-1', 'idem-run-1']);
  await rejects(run({ ...input, InstanceType: 'm5.large' }), 'IdempotentParameterMismatch');

  await send(new E.CreateLaunchTemplateCommand({ LaunchTemplateName: 'idem-fleet', LaunchTemplateData: { ImageId: AMI, InstanceType: 't3.small' } }));
  const fleet = { Type: 'instant', ClientToken: 'idem-fleet-1',
    LaunchTemplateConfigs: [{ LaunchTemplateSpecification: { LaunchTemplateName: 'idem-fleet', Version: '$Latest' } }],
    TargetCapacitySpecification: { TotalTargetCapacity: 2, DefaultTargetCapacityType: 'on-demand' } };
  const f1 = await send(new E.CreateFleetCommand(fleet));
  const f2 = await send(new E.CreateFleetCommand(fleet));
  assert.match(f1.FleetId, /^fleet-[0-9a-f-]{36}$/);
  assert.equal(f2.FleetId, f1.FleetId);
  assert.deepEqual(f2.Instances, f1.Instances);
  const byFleet = (await send(new E.DescribeInstancesCommand({ Filters: [{ Name: 'tag:aws:ec2:fleet-id', Values: [f1.FleetId] }] })))
    .Reservations.flatMap((x) => x.Instances);
  assert.equal(byFleet.length, 2);
  await send(new E.TerminateInstancesCommand({ InstanceIds: [...found, ...byFleet].map((i) => i.InstanceId) }));
});

test('CreateFleet instant: partial fulfilment reports capacity errors and keeps what it launched', async () => {
  await send(new E.CreateLaunchTemplateCommand({ LaunchTemplateName: 'fleet-lt', LaunchTemplateData: { ImageId: AMI, InstanceType: 'm5.large',
    TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'from', Value: 'template' }] }] } }));
  await ctl('POST', '/capacity', { instanceType: 'm5.large', usageClass: 'spot', available: false });
  await ctl('POST', '/capacity', { instanceType: 'c5.large', usageClass: 'spot', available: 1 });
  try {
    const r = await send(new E.CreateFleetCommand({
      Type: 'instant',
      LaunchTemplateConfigs: [{ LaunchTemplateSpecification: { LaunchTemplateName: 'fleet-lt', Version: '$Default' },
        Overrides: [{ InstanceType: 'm5.large', SubnetId: 'subnet-0123456789abcdef0' }, { InstanceType: 'c5.large', SubnetId: 'subnet-0123456789abcdef0' }] }],
      TargetCapacitySpecification: { TotalTargetCapacity: 4, OnDemandTargetCapacity: 1, DefaultTargetCapacityType: 'spot' },
      SpotOptions: { AllocationStrategy: 'price-capacity-optimized' },
      TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'pool', Value: 'fleet-test' }] },
        { ResourceType: 'fleet', Tags: [{ Key: 'kind', Value: 'test' }] }],
    }));
    const launched = r.Instances.map((x) => [x.Lifecycle, x.InstanceType, x.InstanceIds.length]);
    assert.deepEqual(launched, [['on-demand', 'm5.large', 1], ['spot', 'c5.large', 1]]);
    assert.equal(r.Instances[1].LaunchTemplateAndOverrides.Overrides.SubnetId, 'subnet-0123456789abcdef0');
    const errs = r.Errors.map((e) => [e.Lifecycle, e.LaunchTemplateAndOverrides.Overrides.InstanceType, e.ErrorCode]);
    assert.deepEqual(errs, [['spot', 'm5.large', 'InsufficientInstanceCapacity'], ['spot', 'c5.large', 'InsufficientInstanceCapacity']]);
    assert.match(r.Errors[0].LaunchTemplateAndOverrides.LaunchTemplateSpecification.LaunchTemplateId, /^lt-[0-9a-f]{17}$/);
    assert.equal(r.Errors[0].LaunchTemplateAndOverrides.LaunchTemplateSpecification.Version, '1');

    const ids = r.Instances.flatMap((x) => x.InstanceIds);
    const insts = await describe(ids);
    assert.deepEqual(insts.map((i) => i.InstanceLifecycle), [undefined, 'spot']);
    const tags = Object.fromEntries(insts[1].Tags.map((t) => [t.Key, t.Value]));
    assert.equal(tags.pool, 'fleet-test');
    assert.equal(tags.from, 'template');
    assert.equal(tags['aws:ec2:fleet-id'], r.FleetId);
    assert.match(tags['aws:ec2launchtemplate:id'], /^lt-/);
    assert.equal(insts[1].SubnetId, 'subnet-0123456789abcdef0');
    assert.match(insts[1].Placement.AvailabilityZone, /^us-east-1[abc]$/);

    // InstanceRequirements resolve to concrete types; a fleet never falls back from spot to on-demand.
    const r2 = await send(new E.CreateFleetCommand({ Type: 'instant',
      LaunchTemplateConfigs: [{ LaunchTemplateSpecification: { LaunchTemplateName: 'fleet-lt', Version: '1' },
        Overrides: [{ InstanceRequirements: { VCpuCount: { Min: 4, Max: 4 }, MemoryMiB: { Min: 16384 }, AllowedInstanceTypes: ['m5.*', 'm6i.*'] } }] }],
      TargetCapacitySpecification: { TotalTargetCapacity: 2, DefaultTargetCapacityType: 'on-demand' } }));
    assert.deepEqual(r2.Errors, []);
    assert.deepEqual(r2.Instances.map((x) => [x.InstanceType, x.InstanceIds.length]), [['m5.xlarge', 2]]);
    await send(new E.TerminateInstancesCommand({ InstanceIds: [...ids, ...r2.Instances.flatMap((x) => x.InstanceIds)] }));
    await rejects(send(new E.CreateFleetCommand({ LaunchTemplateConfigs: [{ LaunchTemplateSpecification: { LaunchTemplateName: 'fleet-lt' } }],
      TargetCapacitySpecification: { TotalTargetCapacity: 1 } })), 'InvalidParameterValue');
  } finally {
    await ctl('DELETE', '/capacity');
  }
});

test('RunInstances capacity errors', async () => {
  await ctl('POST', '/capacity', { instanceType: 'm6i.large', usageClass: 'on-demand', available: false });
  await ctl('POST', '/capacity', { instanceType: 'm6i.large', usageClass: 'spot', available: 2 });
  try {
    const e1 = await rejects(run({ InstanceType: 'm6i.large' }), 'InsufficientInstanceCapacity', 500);
    assert.match(e1.message, /do not have sufficient m6i\.large capacity/);
    const spot = { InstanceType: 'm6i.large', InstanceMarketOptions: { MarketType: 'spot' } };
    const e2 = await rejects(run({ ...spot, MinCount: 3, MaxCount: 3 }), 'InsufficientInstanceCapacity', 500);
    assert.equal(e2.message, 'There is no Spot capacity available that matches your request.');
    const r = await run({ ...spot, MinCount: 1, MaxCount: 5 }); // takes the 2 left
    assert.equal(r.Instances.length, 2);
    await rejects(run(spot), 'InsufficientInstanceCapacity');
    await send(new E.TerminateInstancesCommand({ InstanceIds: r.Instances.map((i) => i.InstanceId) }));
  } finally {
    await ctl('DELETE', '/capacity');
  }
});

test('CreateTags and DeleteTags', async () => {
  const id = (await run({ TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'keep', Value: 'k' }] }] })).Instances[0].InstanceId;
  await send(new E.CreateTagsCommand({ Resources: [id], Tags: [{ Key: 'a', Value: '1' }, { Key: 'b', Value: '2' }, { Key: 'c', Value: '' }] }));
  const tags = async () => Object.fromEntries(((await describe([id]))[0].Tags || []).map((t) => [t.Key, t.Value]));
  assert.deepEqual(await tags(), { keep: 'k', a: '1', b: '2', c: '' });
  await send(new E.CreateTagsCommand({ Resources: [id], Tags: [{ Key: 'a', Value: 'changed' }] }));
  await send(new E.DeleteTagsCommand({ Resources: [id], Tags: [{ Key: 'a', Value: 'not-the-value' }, { Key: 'b' }, { Key: 'c', Value: '' }] }));
  assert.deepEqual(await tags(), { keep: 'k', a: 'changed' });
  await rejects(send(new E.CreateTagsCommand({ Resources: [id], Tags: [{ Key: 'aws:mine', Value: 'x' }] })), 'InvalidParameterValue');
  await rejects(send(new E.CreateTagsCommand({ Resources: [id], Tags: [{ Key: 'has space', Value: 'x' }] })), 'InvalidParameterValue');
  await rejects(send(new E.CreateTagsCommand({ Resources: ['i-00000000000000000'], Tags: [{ Key: 'x', Value: 'y' }] })), 'InvalidInstanceID.NotFound');
  await send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
});

test('launch templates: create, versions, default, describe, launch from them', async () => {
  const data = { ImageId: AMI, InstanceType: 't3.medium', UserData: b64('#!/bin/sh\necho from-template > root/lt\nsleep 100\n'),
    TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'role', Value: 'runner' }, { Key: 'pool', Value: 'lt' }] }],
    MetadataOptions: { HttpTokens: 'required', InstanceMetadataTags: 'enabled' }, IamInstanceProfile: { Name: 'runpool-agent' },
    InstanceInitiatedShutdownBehavior: 'terminate', SecurityGroupIds: ['sg-0123456789abcdef0'] };
  const c = await send(new E.CreateLaunchTemplateCommand({ LaunchTemplateName: 'lt-test', ClientToken: 'lt-tok', LaunchTemplateData: data,
    TagSpecifications: [{ ResourceType: 'launch-template', Tags: [{ Key: 'owner', Value: 'tests' }] }] }));
  const lt = c.LaunchTemplate;
  assert.match(lt.LaunchTemplateId, /^lt-[0-9a-f]{17}$/);
  assert.deepEqual([lt.LaunchTemplateName, lt.DefaultVersionNumber, lt.LatestVersionNumber], ['lt-test', 1, 1]);
  assert.deepEqual(lt.Tags, [{ Key: 'owner', Value: 'tests' }]);
  const again = await send(new E.CreateLaunchTemplateCommand({ LaunchTemplateName: 'lt-test', ClientToken: 'lt-tok', LaunchTemplateData: data,
    TagSpecifications: [{ ResourceType: 'launch-template', Tags: [{ Key: 'owner', Value: 'tests' }] }] }));
  assert.equal(again.LaunchTemplate.LaunchTemplateId, lt.LaunchTemplateId);
  await rejects(send(new E.CreateLaunchTemplateCommand({ LaunchTemplateName: 'lt-test', LaunchTemplateData: data })),
    'InvalidLaunchTemplateName.AlreadyExistsException');

  const v2 = await send(new E.CreateLaunchTemplateVersionCommand({ LaunchTemplateId: lt.LaunchTemplateId, SourceVersion: '1',
    VersionDescription: 'bigger', LaunchTemplateData: { InstanceType: 't3.large' } }));
  assert.equal(v2.LaunchTemplateVersion.VersionNumber, 2);
  assert.equal(v2.LaunchTemplateVersion.DefaultVersion, false);
  assert.equal(v2.LaunchTemplateVersion.LaunchTemplateData.ImageId, AMI, 'inherited from the source version');
  assert.equal(v2.LaunchTemplateVersion.LaunchTemplateData.InstanceType, 't3.large');
  const m = await send(new E.ModifyLaunchTemplateCommand({ LaunchTemplateName: 'lt-test', DefaultVersion: '2' }));
  assert.equal(m.LaunchTemplate.DefaultVersionNumber, 2);
  await rejects(send(new E.ModifyLaunchTemplateCommand({ LaunchTemplateName: 'lt-test', DefaultVersion: '9' })), 'InvalidLaunchTemplateId.VersionNotFound');

  const d = await send(new E.DescribeLaunchTemplatesCommand({ LaunchTemplateNames: ['lt-test'] }));
  assert.deepEqual(d.LaunchTemplates.map((t) => [t.LaunchTemplateId, t.DefaultVersionNumber, t.LatestVersionNumber]), [[lt.LaunchTemplateId, 2, 2]]);
  const byId = await send(new E.DescribeLaunchTemplatesCommand({ LaunchTemplateIds: [lt.LaunchTemplateId] }));
  assert.equal(byId.LaunchTemplates[0].LaunchTemplateName, 'lt-test');
  await rejects(send(new E.DescribeLaunchTemplatesCommand({ LaunchTemplateNames: ['no-such-template'] })), 'InvalidLaunchTemplateName.NotFoundException');
  await rejects(send(new E.DescribeLaunchTemplatesCommand({ LaunchTemplateIds: ['lt-0000000000000000f'] })), 'InvalidLaunchTemplateId.NotFound');

  const vs = await send(new E.DescribeLaunchTemplateVersionsCommand({ LaunchTemplateName: 'lt-test' }));
  assert.deepEqual(vs.LaunchTemplateVersions.map((v) => [v.VersionNumber, v.DefaultVersion]), [[1, false], [2, true]]);
  const v1 = vs.LaunchTemplateVersions[0].LaunchTemplateData;
  assert.equal(v1.UserData, data.UserData);
  assert.deepEqual(v1.TagSpecifications, data.TagSpecifications);
  assert.deepEqual(v1.MetadataOptions, data.MetadataOptions);
  assert.deepEqual(v1.IamInstanceProfile, data.IamInstanceProfile);
  assert.deepEqual(v1.SecurityGroupIds, data.SecurityGroupIds);
  const latest = await send(new E.DescribeLaunchTemplateVersionsCommand({ LaunchTemplateId: lt.LaunchTemplateId, Versions: ['$Latest'] }));
  assert.deepEqual(latest.LaunchTemplateVersions.map((v) => v.VersionNumber), [2]);

  // A launch takes the default version's values, overridable per call; tags merge.
  const r = await send(new E.RunInstancesCommand({ MinCount: 1, MaxCount: 1, LaunchTemplate: { LaunchTemplateName: 'lt-test' },
    TagSpecifications: [{ ResourceType: 'instance', Tags: [{ Key: 'pool', Value: 'override' }] }] }));
  const inst = r.Instances[0];
  assert.equal(inst.InstanceType, 't3.large');
  assert.equal(inst.ImageId, AMI);
  const tags = Object.fromEntries(inst.Tags.map((t) => [t.Key, t.Value]));
  assert.deepEqual(tags, { 'aws:ec2launchtemplate:id': lt.LaunchTemplateId, 'aws:ec2launchtemplate:version': '2', role: 'runner', pool: 'override' });
  assert.equal(inst.IamInstanceProfile.Arn, 'arn:aws:iam::000000000000:instance-profile/runpool-agent');
  await waitFor('the template user-data to run', () => fs.existsSync(path.join(stateDir, 'instances', inst.InstanceId, 'root', 'lt')));
  const o = await send(new E.RunInstancesCommand({ MinCount: 1, MaxCount: 1, InstanceType: 'c5.large',
    LaunchTemplate: { LaunchTemplateId: lt.LaunchTemplateId, Version: '1' } }));
  assert.equal(o.Instances[0].InstanceType, 'c5.large');
  await send(new E.TerminateInstancesCommand({ InstanceIds: [inst.InstanceId, o.Instances[0].InstanceId] }));
});

test('error codes for bad input', async () => {
  const raw = async (body, headers = {}) => {
    const res = await fetch(ec2.url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });
    return { status: res.status, text: await res.text() };
  };
  const bad = await raw('Action=LaunchRockets&Version=2016-11-15');
  assert.equal(bad.status, 400);
  assert.match(bad.text, /^<\?xml[^>]*>\s*<Response><Errors><Error><Code>InvalidAction<\/Code><Message>[^<]+<\/Message><\/Error><\/Errors><RequestID>[0-9a-f-]{36}<\/RequestID><\/Response>$/);
  await rejects(send(new E.RunInstancesCommand({ MinCount: 1, MaxCount: 1 })), 'MissingParameter', 400);
  await rejects(run({ MinCount: 2, MaxCount: 1 }), 'InvalidParameterValue');
  await rejects(run({ ImageId: 'not-an-ami' }), 'InvalidAMIID.Malformed');
  await rejects(run({ UserData: '%%%' }), 'InvalidParameterValue');
  await rejects(run({ LaunchTemplate: { LaunchTemplateName: 'absent' } }), 'InvalidLaunchTemplateName.NotFoundException');
  await rejects(describe(['i-nope']), 'InvalidInstanceID.Malformed');
  await rejects(describe(['i-0123456789abcdef0']), 'InvalidInstanceID.NotFound');
  await rejects(send(new E.TerminateInstancesCommand({ InstanceIds: ['i-0123456789abcdef0'] })), 'InvalidInstanceID.NotFound');
  await rejects(run({ DryRun: true }), 'DryRunOperation', 412);

  // Instance principals (forwarded by the SigV4 proxy) may describe, and terminate only themselves.
  const [x, y] = (await run({ MinCount: 2, MaxCount: 2 })).Instances.map((i) => i.InstanceId);
  const as = { 'x-localcloud-principal': `instance:${x}` };
  const denied = await raw(`Action=RunInstances&Version=2016-11-15&MinCount=1&MaxCount=1&ImageId=${AMI}`, as);
  assert.equal(denied.status, 403);
  assert.match(denied.text, /<Code>UnauthorizedOperation<\/Code>/);
  assert.equal((await raw(`Action=TerminateInstances&Version=2016-11-15&InstanceId.1=${y}`, as)).status, 403);
  assert.equal((await raw(`Action=DescribeInstances&Version=2016-11-15&InstanceId.1=${y}`, as)).status, 200);
  const self = await raw(`Action=TerminateInstances&Version=2016-11-15&InstanceId.1=${x}`, as);
  assert.equal(self.status, 200);
  assert.match(self.text, /<currentState><code>32<\/code><name>shutting-down<\/name><\/currentState>/);
  await send(new E.TerminateInstancesCommand({ InstanceIds: [y] }));
  const calls = await ctl('GET', '/calls');
  assert.ok(calls.errors.InvalidAction >= 1 && calls.errors.UnauthorizedOperation >= 2);
});

test('fallback isolation (a session, no PID namespace) still ends processes that left the session', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ec2-fallback-'));
  const warnings = [];
  const other = await createEc2({ credentials: new CredentialStore(), faults: new Faults(), stateDir: dir, isolation: 'session',
    log: (level, msg) => { if (level === 'warn') warnings.push(msg); } });
  try {
    assert.ok(warnings.some((w) => /not a PID namespace/.test(w)));
    const c = new E.EC2Client({ region: 'us-east-1', endpoint: other.url, maxAttempts: 1, credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
    const script = "#!/bin/sh\nsetsid sh -c 'exec sleep 987653' &\nexec sleep 987654\n";
    const id = (await c.send(new E.RunInstancesCommand({ MinCount: 1, MaxCount: 1, ImageId: AMI, UserData: b64(script) }))).Instances[0].InstanceId;
    const escaped = await waitFor('the escaped process', () => findProcs(['sleep', '987653'])[0]);
    const main = await waitFor('the boot process', () => findProcs(['sleep', '987654'])[0]);
    assert.notEqual(escaped.session, main.session);
    assert.equal((await other.control('GET', `/instances/${id}`)).json.isolation, 'session');
    await c.send(new E.TerminateInstancesCommand({ InstanceIds: [id] }));
    await waitFor('terminated', async () => (await other.control('GET', `/instances/${id}`)).json.state === 'terminated');
    assert.deepEqual([...findProcs(['sleep', '987653']), ...findProcs(['sleep', '987654'])], []);
  } finally {
    await other.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('record-only instances: described, filtered, paginated and terminated like others, with no machine', async () => {
  const made = await ctl('POST', '/record-only-instances', { count: 7, instanceType: 'c7i.large', tags: { 'runpool:pool': 'scale-ro', k: 'v' } });
  assert.equal(made.instanceIds.length, 7);
  assert.match(made.reservationId, /^r-[0-9a-f]{17}$/);
  for (const id of made.instanceIds) assert.match(id, /^i-[0-9a-f]{17}$/);
  const filters = [{ Name: 'tag:runpool:pool', Values: ['scale-ro'] }, { Name: 'instance-state-name', Values: ['running'] }];
  const pages = [];
  let token;
  do {
    const r = await send(new E.DescribeInstancesCommand({ Filters: filters, MaxResults: 5, NextToken: token }));
    pages.push(r.Reservations.flatMap((x) => x.Instances));
    token = r.NextToken;
  } while (token && pages.length < 5);
  assert.deepEqual(pages.map((p) => p.length), [5, 2]);
  const seen = pages.flat();
  assert.deepEqual(seen.map((i) => i.InstanceId), made.instanceIds);
  assert.ok(seen.every((i) => i.InstanceType === 'c7i.large' && i.ImageId === 'ami-12345678'));
  assert.deepEqual(seen[0].Tags.map((t) => [t.Key, t.Value]).sort(), [['k', 'v'], ['runpool:pool', 'scale-ro']]);

  const summary = await ctl('GET', `/instances/${made.instanceIds[0]}`);
  assert.equal(summary.recordOnly, true);
  assert.equal(summary.pid, null);
  assert.deepEqual(summary.pids, []);
  assert.equal(summary.imdsUrl, null);
  assert.equal(fs.existsSync(summary.dir), false);

  await send(new E.TerminateInstancesCommand({ InstanceIds: made.instanceIds.slice(0, 3) }));
  await waitFor('terminated', async () => (await describe(made.instanceIds.slice(0, 3))).every((i) => i.State.Name === 'terminated'));
  assert.deepEqual((await describe(made.instanceIds.slice(3))).map((i) => i.State.Name), ['running', 'running', 'running', 'running']);
  await send(new E.TerminateInstancesCommand({ InstanceIds: made.instanceIds.slice(3) }));

  for (const bad of [{}, { count: 0 }, { count: 50001 }, { count: 1, lifecycle: 'x' }, { count: 1, instanceType: 'bad' },
    { count: 1, imageId: 'ami-x' }, { count: 1, tags: { 'aws:x': 'y' } }, { count: 1, tags: { k: 1 } }, { count: 1, extra: true }]) {
    const r = await ec2.control('POST', '/record-only-instances', bad);
    assert.equal(r.status, 400, JSON.stringify(bad));
  }
});

test('termination protection: a TerminateInstances naming a protected instance fails whole, as on EC2', async () => {
  const made = await ec2.control('POST', '/record-only-instances', { count: 2 });
  const [locked, other] = made.json.instanceIds;
  const on = await ec2.control('POST', `/instances/${locked}/termination-protection`, { enabled: true });
  assert.deepEqual(on.json, { instanceId: locked, disableApiTermination: true });
  assert.equal((await ec2.control('GET', `/instances/${locked}`)).json.disableApiTermination, true);
  assert.equal((await ec2.control('POST', `/instances/${locked}/termination-protection`, {})).status, 400);
  await assert.rejects(client.send(new E.TerminateInstancesCommand({ InstanceIds: [other, locked] })), (err) => {
    assert.equal(err.name, 'OperationNotPermitted');
    assert.equal(err.message, `The instance '${locked}' may not be terminated. Modify its 'disableApiTermination' instance attribute and try again.`);
    return true;
  });
  assert.equal(await stateOf(other), 'running', 'the whole call failed: the other instance too');
  await client.send(new E.TerminateInstancesCommand({ InstanceIds: [other] }));
  assert.equal(await stateOf(other), 'terminated');
  await ec2.control('POST', `/instances/${locked}/termination-protection`, { enabled: false });
  await client.send(new E.TerminateInstancesCommand({ InstanceIds: [locked] }));
  assert.equal(await stateOf(locked), 'terminated');
  assert.equal((await ec2.control('POST', `/instances/${locked}/termination-protection`, { enabled: true })).status, 409);
});
