#!/usr/bin/env node
'use strict';
// The local cloud (docs/local-cloud.md): dynalite, local-aws-sqs, the EC2 and CloudWatch Logs
// stand-ins, each behind the SigV4-checking fault proxy, STS and a container credentials endpoint,
// the GitHub stand-in, and the control API, all on 127.0.0.1.
// Prints one ready JSON line on stdout; stops on SIGINT, SIGTERM or end of stdin, so a harness
// that dies takes the local cloud with it.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { CredentialStore } = require('./lib/credentials');
const { Faults } = require('./lib/faults');
const { createProxy } = require('./lib/proxy');
const { createControlHandler } = require('./lib/control');
const { createLogs } = require('./logs');
const { createSts } = require('./sts');
const { createContainerCredentials } = require('./sts/container');
const { createRecorder } = require('./lib/recorder');
const { listenLocal, closeServer, createServer, keepAlive } = require('./lib/httputil');

const USAGE = 'usage: localcloud.js [--state-dir DIR] [--region REGION] [--quiet] [--ignore-stdin] [--record-requests FILE]';

function parseArgs(argv) {
  const opts = { stateDir: null, region: 'us-east-1', quiet: false, ignoreStdin: false, recordRequests: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value\n${USAGE}`);
      return argv[++i];
    };
    if (a === '--state-dir') opts.stateDir = path.resolve(value());
    else if (a === '--region') opts.region = value();
    else if (a === '--quiet') opts.quiet = true;
    else if (a === '--ignore-stdin') opts.ignoreStdin = true; // for `node localcloud.js &` from a shell
    else if (a === '--record-requests') opts.recordRequests = path.resolve(value()); // lib/recorder.js
    else throw new Error(`unknown argument ${a}\n${USAGE}`);
  }
  return opts;
}

function makeLog(quiet) {
  return (level, msg) => {
    if (quiet && (level === 'debug' || level === 'info')) return;
    process.stderr.write(`[localcloud ${level}] ${msg}\n`);
  };
}

// Loads a concurrently-written stand-in if its module exists; null (with a warning) if not.
function optionalModule(name, log) {
  const dir = path.join(__dirname, name);
  if (!fs.existsSync(path.join(dir, 'index.js'))) {
    log('warn', `${name}/index.js not found: starting without the ${name} stand-in`);
    return null;
  }
  return require(dir);
}

// Starts everything; returns { ready, close }. On failure, closes what had started and rethrows.
async function start(opts, log) {
  const closers = []; // run in reverse order on close
  const close = async () => {
    for (const fn of closers.reverse()) {
      try { await fn(); } catch (err) { log('error', `close: ${err.stack || err}`); }
    }
    closers.length = 0;
  };
  try {
    let stateDir = opts.stateDir;
    if (stateDir) fs.mkdirSync(stateDir, { recursive: true });
    else {
      stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'localcloud-'));
      closers.push(() => fs.rmSync(stateDir, { recursive: true, force: true }));
    }
    const { region } = opts;
    const credentials = new CredentialStore();
    const { accountId, instanceRoleId } = credentials;
    const faults = new Faults();
    const proxies = {};
    const endpoints = {};
    let ec2 = null;
    // Every signed request, one JSON line each, for the IAM tier (tests/localcloud/iam/).
    let recorder = null;
    if (opts.recordRequests) {
      recorder = createRecorder({ file: opts.recordRequests, cloud: stateDir, region, accountId, instanceRoleId,
        instanceTags: async (id) => {
          if (!ec2) return null;
          const r = await ec2.control('GET', `/instances/${encodeURIComponent(id)}`);
          return r.status === 200 ? { tags: r.json.tags, type: r.json.type } : null;
        } });
      closers.push(() => recorder.close());
    }
    const addProxy = async (service, backend) => {
      const p = createProxy({ service, region, credentials, faults, log, backend, recorder });
      await p.listen();
      closers.push(() => p.close());
      proxies[service] = p;
      endpoints[service] = p.url;
      return p;
    };

    // DynamoDB: dynalite, in memory, no artificial table-state delays.
    const dynalite = keepAlive(require('dynalite')({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }));
    const dynaliteUrl = await listenLocal(dynalite);
    closers.push(() => closeServer(dynalite));
    await addProxy('dynamodb', dynaliteUrl);

    // SQS: local-aws-sqs's request handler on our own server, configured with the *proxy's* port
    // so the QueueUrls it hands out lead back through the proxy.
    const sqsProxy = await addProxy('sqs', null);
    const { createRequestHandler } = require('local-aws-sqs');
    const { requestHandler } = createRequestHandler({ port: Number(new URL(sqsProxy.url).port),
      hostname: '127.0.0.1', region, accountId });
    const sqsServer = createServer(requestHandler);
    sqsProxy.backend = await listenLocal(sqsServer);
    closers.push(() => closeServer(sqsServer));

    const ec2Mod = optionalModule('ec2', log);
    if (ec2Mod) {
      ec2 = await ec2Mod.createEc2({ credentials, faults, stateDir, region, log });
      closers.push(() => ec2.close());
      await addProxy('ec2', ec2.url);
    }
    // CloudWatch Logs: our stand-in (groups, streams, events), for the metrics runpoolctl sends.
    const logs = await createLogs({ log });
    closers.push(() => logs.close());
    await addProxy('logs', logs.url);

    // STS and a container credentials endpoint: temporary credentials for runpoolctl's credential chain.
    const sts = await createSts({ credentials, region, log });
    closers.push(() => sts.close());
    endpoints.sts = sts.url;
    const container = await createContainerCredentials({ credentials, log });
    closers.push(() => container.close());
    endpoints.container = container.url;

    const githubMod = optionalModule('github', log);
    let github = null;
    if (githubMod) {
      github = await githubMod.createGithub({ faults, stateDir, log });
      closers.push(() => github.close());
      endpoints.github = `${github.url}/api/v3`;
      endpoints.githubWeb = github.url;
    }

    const control = createServer(createControlHandler({ faults, credentials, proxies, ec2, github, logs, log }));
    endpoints.control = await listenLocal(control);
    closers.push(() => closeServer(control));

    const c = credentials.controller;
    const ready = { ready: true, region, accountId, instanceRoleId, credentials: { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey },
      endpoints, stateDir };
    return { ready, close };
  } catch (err) {
    await close();
    throw err;
  }
}

async function main() {
  let opts;
  try { opts = parseArgs(process.argv.slice(2)); } catch (err) {
    process.stderr.write(`localcloud: ${err.message}\n`);
    process.exit(1);
  }
  const log = makeLog(opts.quiet);
  let cloud;
  try { cloud = await start(opts, log); } catch (err) {
    process.stderr.write(`localcloud: failed to start: ${err.stack || err}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = async (why, code = 0) => {
    if (stopping) return;
    stopping = true;
    log('info', `stopping (${why})`);
    // A stand-in that hangs on close must not keep the local cloud alive forever.
    setTimeout(() => { process.stderr.write('localcloud: close timed out\n'); process.exit(1); }, 30_000).unref();
    await cloud.close();
    process.exit(code);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('uncaughtException', (err) => { log('error', `uncaught: ${err.stack || err}`); stop('uncaught exception', 1); });
  process.on('unhandledRejection', (err) => { log('error', `unhandled rejection: ${err && err.stack || err}`); stop('unhandled rejection', 1); });
  if (!opts.ignoreStdin) {
    process.stdin.on('end', () => stop('stdin closed'));
    process.stdin.on('error', () => stop('stdin error'));
    process.stdin.resume();
  }
  process.stdout.write(`${JSON.stringify(cloud.ready)}\n`);
  log('info', `ready: ${JSON.stringify(cloud.ready.endpoints)}`);
}

if (require.main === module) main();
module.exports = { start, parseArgs };
