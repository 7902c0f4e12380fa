#!/usr/bin/env node
'use strict';
// The main job: the whole run-scoped lifecycle on the local cloud, with the real runpoolctl and
// runpool-agent. Two workflows provision 3 runners each (cold, then warm), the broker runs their
// jobs, release pools the instances: the first release returns once the drains are written and the
// second workflow's provision takes the instances as their agents finish draining; the second
// release waits (--wait) until they are back in the pool. Refresh retires the idle pool once its
// deadline passes. It ends by checking that no instance runs and no runner is registered.
//
//   node scripts/demo.js --build DIR     (scripts/demo.sh sets up, builds and calls this)

const { spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const repo = path.resolve(__dirname, '..');
const { launchLocalCloud } = require(path.join(repo, 'tests/localcloud/lib/launch.js'));

const args = process.argv.slice(2);
const build = path.resolve(args[args.indexOf('--build') + 1] || path.join(repo, 'build'));
const ctl = path.join(build, 'controller/runpoolctl');
const agent = path.join(build, 'agent/runpool-agent');

const t0 = Date.now();
const since = () => ((Date.now() - t0) / 1000).toFixed(1).padStart(6) + 's';
const say = (msg) => console.log(`${since()}  ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function control(cloud, method, p, body) {
  const res = await fetch(cloud.ready.endpoints.control + p, {
    method, headers: { 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`control ${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// Runs runpoolctl; resolves with its stdout, rejects (with stderr) on a non-zero exit.
function runpoolctl(env, argv, { quiet = true } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(ctl, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; if (!quiet) process.stderr.write(d); });
    child.on('exit', (code) => (code === 0 ? resolve(out)
      : reject(new Error(`runpoolctl ${argv.join(' ')} exited ${code}\n${err}`))));
  });
}

async function until(what, fn, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

async function runJobs(cloud, label, workflow, n) {
  const jobs = [];
  for (let i = 1; i <= n; i++) {
    jobs.push(await control(cloud, 'POST', '/_control/github/jobs', {
      labels: [label], name: `${workflow} / job ${i}`, durationMs: 1500,
      // Each job fails if it finds what an earlier workflow left, then leaves files in its work
      // folder, /tmp and /dev/shm, and a process that escaped the runner's own job cleanup.
      run: [
        // The local instances share this machine's /tmp: a file of this workflow's other jobs is
        // not an earlier workflow's.
        `wf=${workflow.replace(/\W/g, '')}`,
        'for f in leftover-* /tmp/runpool-demo-leftover-* /dev/shm/runpool-demo-leftover-*; do',
        '  case "$f" in *"-$wf-"*) continue ;; esac',
        '  if [ -e "$f" ]; then echo "found what an earlier workflow left behind: $f"; exit 1; fi',
        'done',
        'if pgrep -f runpool-demo-leftover >/dev/null; then echo "found an earlier workflow\'s process"; exit 1; fi',
        // Instances share this machine's /tmp but not their process ids: the runner's name is unique.
        'tag="$wf-$RUNNER_NAME"',
        `echo "made by ${workflow}" > "leftover-$tag-.txt"`,
        `echo "made by ${workflow}" > "/tmp/runpool-demo-leftover-$tag-"`,
        `echo "made by ${workflow}" > "/dev/shm/runpool-demo-leftover-$tag-"`,
        "RUNNER_TRACKING_ID= nohup bash -c 'exec -a runpool-demo-leftover sleep 3000' >/dev/null 2>&1 &",
      ].join('\n'),
    }));
  }
  say(`${workflow}: queued ${n} jobs for runs-on: ${label}`);
  const done = await until(`${workflow}'s jobs`, async () => {
    const all = await Promise.all(jobs.map((j) => control(cloud, 'GET', `/_control/github/jobs/${j.id}`)));
    return all.every((j) => j.state === 'completed' || j.state === 'lost') ? all : null;
  }, 120_000);
  for (const j of done) {
    say(`  ${j.name}: ${j.result || j.state} on ${j.runnerName}, started ${j.startLatencyMs} ms after queueing` +
        (j.lateMs ? `, ${j.lateMs} ms late` : ''));
  }
  return done;
}

async function workflow(cloud, run, name, label, waitForDrains) {
  const started = Date.now();
  const out = JSON.parse(await run(['--json', 'provision', '--count', '3', '--resource-class', 'small',
    '--label', label]));
  const ms = Date.now() - started;
  say(`${name}: provision --count 3 → ${out.warm} warm, ${out.launched} launched, all running in ${ms} ms`);
  const jobs = await runJobs(cloud, label, name, 3);
  if (name === 'workflow 2') {
    // Each job's own search decides: it fails when it finds what workflow 1 left.
    const found = jobs.filter((j) => j.result !== 'Succeeded');
    say(found.length === 0
      ? `${name}: its jobs, each run as a job user of its own, looked for what workflow 1 left on the reused ` +
        'instances (files in the work folder, /tmp and /dev/shm; its escaped process) and found nothing'
      : `${name}: ${found.length} of its jobs did not succeed (one that found what workflow 1 left says so above)`);
  }
  const releaseStarted = Date.now();
  if (waitForDrains) {
    await run(['release', '--wait', '--label', label]);
    say(`${name}: release --wait → the instances drained, deregistered, cleaned and back in the pool in ` +
        `${Date.now() - releaseStarted} ms`);
  } else {
    const rel = JSON.parse(await run(['--json', 'release', '--label', label]));
    say(`${name}: release → ${rel.draining.length} drain(s) written in ${Date.now() - releaseStarted} ms; the ` +
        'agents drain, deregister and clean on their own, and the next provision takes them');
  }
  return { ms, warm: out.warm, launched: out.launched, jobs, instances: out.instance_ids || out.instanceIds };
}

async function main() {
  for (const f of [ctl, agent]) if (!fs.existsSync(f)) throw new Error(`${f} is missing: build first`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'runpool-demo-'));
  fs.chmodSync(work, 0o755);  // the runner user must reach its roots below
  const cloud = await launchLocalCloud({ args: ['--quiet'] });
  let failures = [];
  try {
    const { ready } = cloud;
    say(`local cloud up: DynamoDB ${ready.endpoints.dynamodb}, SQS ${ready.endpoints.sqs}, EC2 ${ready.endpoints.ec2}, ` +
        `GitHub ${ready.endpoints.github}`);
    const token = crypto.randomBytes(20).toString('hex');
    await control(cloud, 'POST', '/_control/github/pats', { token, owners: ['octo-org'] });
    await control(cloud, 'POST', '/_control/github/settings', { pollMs: 1000, lockExpiryMs: 5000 });

    const template = path.join(work, 'runner-template');
    fs.cpSync(path.join(repo, 'tests/localcloud/runner'), template, { recursive: true });
    // The runner as released (no drain of its own): runpoolctl removes its labels at the drain, the
    // agent waits out one long poll (1 s here), then deregisters it once idle.
    fs.writeFileSync(path.join(template, '.standin.json'), JSON.stringify({ mode: 'stock' }));

    const config = path.join(work, 'pool.conf');
    fs.writeFileSync(config, [
      `table = runpool-demo`, `pool = demo`, `region = ${ready.region}`,
      `endpoint_dynamodb = ${ready.endpoints.dynamodb}`, `endpoint_sqs = ${ready.endpoints.sqs}`,
      `endpoint_ec2 = ${ready.endpoints.ec2}`,
      `github_api_url = ${ready.endpoints.github}`, `github_server_url = ${ready.endpoints.githubWeb}`,
      `github_owner = octo-org/app`,
      `resource_classes = small=c7i.large,m7i.large`, `usage_class = spot`,
      `subnets = subnet-0a1b2c3d4e5f60001 subnet-0a1b2c3d4e5f60002`, `image_id = ami-0123456789abcdef0`,
      `instance_profile = runpool-agent`, `instance_role_id = ${ready.instanceRoleId}`,
      `user_data_template = ${path.join(repo, 'cloud-init/user-data.sh.in')}`, `agent_binary = ${agent}`,
      `agent_runner_root = ${work}/{instance_id}/runner`, `agent_runner_template = ${template}`,
      `agent_extra = drain_poll_wait=1s; job_users_state=${work}/{instance_id}/job-users`, `agent_heartbeat_interval = 1s`, `agent_assignment_poll_interval = 200ms`,
      `poll_interval = 200ms`, `claim_wait = 1s`, `max_heartbeat_age = 10s`, `claim_min_remaining = 2s`,
      `idle_ttl = 25s`, `orphan_grace = 30s`,
    ].join('\n') + '\n');
    const env = {
      PATH: process.env.PATH, HOME: process.env.HOME || work,
      AWS_ACCESS_KEY_ID: ready.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: ready.credentials.secretAccessKey,
      RUNPOOL_GITHUB_TOKEN: token,
    };
    const run = (argv) => runpoolctl(env, ['--config', config, ...argv]);

    await run(['init']);
    say('runpoolctl init: state table, pool queue and launch template created');

    const w1 = await workflow(cloud, run, 'workflow 1', 'demo-run-101-1', false);
    const w2 = await workflow(cloud, run, 'workflow 2', 'demo-run-102-1', true);


    say('status:');
    for (const line of (await run(['status'])).trimEnd().split('\n')) console.log(`          ${line}`);

    say('waiting for the idle pool to pass its deadline (idle_ttl = 25s), then refresh');
    await sleep(26_000);
    const refreshOut = await run(['refresh']);
    for (const line of refreshOut.trimEnd().split('\n')) console.log(`          ${line}`);
    await until('every instance terminated', async () => {
      const { instances } = await control(cloud, 'GET', '/_control/ec2/instances');
      return instances.every((i) => i.state === 'terminated');
    }, 60_000);
    await run(['refresh']);  // closes the records of the now terminated instances

    // The checks.
    const { instances } = await control(cloud, 'GET', '/_control/ec2/instances');
    const { runners } = await control(cloud, 'GET', '/_control/github/runners');
    const { jobs } = await control(cloud, 'GET', '/_control/github/jobs');
    const live = instances.filter((i) => i.state !== 'terminated');
    if (live.length) failures.push(`${live.length} instance(s) still ${live.map((i) => i.state).join(', ')}`);
    if (runners.length) failures.push(`${runners.length} runner(s) still registered: ${runners.map((r) => r.name)}`);
    // A job fails when it finds an earlier workflow's files or processes: success means clean reuse.
    const bad = jobs.filter((j) => j.state !== 'completed' || j.result !== 'Succeeded');
    if (bad.length) failures.push(`${bad.length} job(s) not succeeded: ${bad.map((j) => `${j.name}=${j.state}`)}`);
    if (w1.launched !== 3 || w2.warm !== 3) failures.push(`expected 3 cold then 3 warm, got ${w1.launched} + ${w2.warm}`);

    console.log('\nSummary');
    console.log(`  workflow 1 (cold): ${w1.launched} launched, running after ${w1.ms} ms`);
    console.log(`  workflow 2 (warm): ${w2.warm} claimed from the pool, running after ${w2.ms} ms` +
                (w1.ms ? ` (${(w1.ms / Math.max(w2.ms, 1)).toFixed(1)}× faster)` : ''));
    console.log(`  jobs: ${jobs.length} queued, ${jobs.length - bad.length} succeeded, ` +
                `${jobs.filter((j) => j.lateMs > 0).length} late`);
    console.log(`  instances launched in all: ${instances.length}; running now: ${live.length}`);
    console.log(`  runners registered now: ${runners.length}`);
    if (failures.length) {
      console.log(`\nFAILED:\n  ${failures.join('\n  ')}`);
    } else {
      console.log('\nOK: no instance left running, no runner left registered, every job ran.');
    }
  } finally {
    await cloud.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
  process.exitCode = failures.length ? 1 : 0;
}

main().catch((e) => {
  console.error(`demo failed: ${e.stack || e}`);
  process.exitCode = 1;
});
