'use strict';
// One instance: its record (what DescribeInstances shows), its directory, its IMDS endpoint and its
// processes, and the lifecycle pending -> running -> (stopping -> stopped) / shutting-down -> terminated.
// Lifecycle work is serialised on `this.work`; API calls change the visible state at once, as EC2 does.
const fs = require('node:fs');
const path = require('node:path');
const { Sandbox, SYS_PATH } = require('./sandbox');
const { startImds } = require('./imds');
const { isCloudConfig, applyCloudConfig } = require('./cloud_config');

const STATE_CODES = { pending: 0, running: 16, 'shutting-down': 32, terminated: 48, stopping: 64, stopped: 80 };

// Why an instance went down: [stateReason code, stateReason message, stateTransitionReason prefix].
const REASONS = {
  user: ['Client.UserInitiatedShutdown', 'Client.UserInitiatedShutdown: User initiated shutdown', 'User initiated'],
  instance: ['Client.InstanceInitiatedShutdown', 'Client.InstanceInitiatedShutdown: Instance initiated shutdown', 'User initiated'],
  spot: ['Server.SpotInstanceTermination', 'Server.SpotInstanceTermination: Spot instance termination', 'Service initiated'],
  spotStop: ['Server.SpotInstanceShutdown', 'Server.SpotInstanceShutdown: Spot instance shutdown', 'Service initiated'],
};

const gmt = (d) => d.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, ' GMT');

class Instance {
  // spec: { id, reservationId, imageId, instanceType, lifecycle ('spot'|'on-demand'), az, subnetId,
  //   userData (Buffer|null), tags (Map), metadata {httpTokens, httpPutResponseHopLimit, httpEndpoint,
  //   instanceMetadataTags}, profile ({arn,id,role}|null), shutdownBehavior, interruptionBehavior,
  //   clientToken, launchIndex, keyName, securityGroupIds, fleetId, spotRequestId, disableApiTermination }
  constructor(world, spec, seq) {
    Object.assign(this, spec);
    this.world = world;
    this.seq = seq;
    this.state = 'pending';
    this.launchTime = new Date();
    this.stateReason = null;
    this.transitionReason = '';
    this.terminatedAt = null;
    this.dir = path.join(world.stateDir, 'instances', this.id);
    this.notices = { spot: null, rebalance: null };
    this.timers = new Set();
    this.sandbox = null;
    this.imds = null;
    this.env = null;
    this.creds = null;
    this.wakePending = null;
    this.isScript = !!this.userData && this.userData.subarray(0, 2).toString() === '#!';
    this.isCloudConfig = isCloudConfig(this.userData);
    if (this.recordOnly) {
      // A record without a machine (control route /record-only-instances, for benchmarks at
      // scale): no directory, IMDS or processes; running at once, terminated at once.
      this.state = 'running';
      this.work = Promise.resolve();
      return;
    }
    fs.mkdirSync(path.join(this.dir, 'root'), { recursive: true });
    fs.mkdirSync(path.join(this.dir, 'bin'), { recursive: true });
    if (this.userData) fs.writeFileSync(path.join(this.dir, 'user-data'), this.userData, { mode: this.isScript ? 0o755 : 0o644 });
    this.work = this.boot().catch((err) => this.world.log('error', `instance ${this.id} boot: ${err.stack || err}`));
  }

  get stateCode() { return STATE_CODES[this.state]; }
  privateDnsName() { return this.world.region === 'us-east-1' ? 'ip-127-0-0-1.ec2.internal' : `ip-127-0-0-1.${this.world.region}.compute.internal`; }
  consolePath() { return path.join(this.dir, 'console.log'); }

  console(line) { fs.appendFileSync(this.consolePath(), `[localcloud] ${new Date().toISOString()} ${line}\n`); }

  async boot() {
    this.imds = await startImds(this, this.world);
    const poweroff = path.join(this.dir, 'bin', 'poweroff');
    fs.writeFileSync(poweroff, '#!/bin/sh\n# Instance-initiated shutdown of local-cloud instance ' + this.id +
      ': the EC2 stand-in then applies\n# its InstanceInitiatedShutdownBehavior (terminate or stop). Arguments are ignored.\n' +
      `exec curl -fsS -m 10 -X POST ${this.imds.url}/_localcloud/poweroff >/dev/null\n`, { mode: 0o755 });
    try { fs.symlinkSync('poweroff', path.join(this.dir, 'bin', 'shutdown')); } catch { /* exists */ }
    const nodeDir = path.dirname(process.execPath);
    this.env = {
      PATH: `${path.join(this.dir, 'bin')}:${SYS_PATH}${SYS_PATH.split(':').includes(nodeDir) ? '' : ':' + nodeDir}`,
      HOME: this.dir,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: this.imds.url,
      RUNPOOL_LOCALCLOUD_INSTANCE_DIR: this.dir,
    };
    if (this.state === 'pending') {
      await new Promise((resolve) => {
        const t = setTimeout(resolve, this.world.settings.pendingMs);
        this.wakePending = () => { clearTimeout(t); resolve(); };
      });
      this.wakePending = null;
    }
    if (this.state !== 'pending') return;
    this.setState('running');
    this.console(`instance ${this.id} (${this.instanceType}, ${this.lifecycle}) running; IMDS at ${this.imds.url}`);
    this.sandbox = new Sandbox({ isolation: this.world.isolation, dir: this.dir, env: this.env,
      argv: this.bootArgv(), consolePath: this.consolePath(), log: this.world.log });
    await this.sandbox.start();
    this.sandbox.exited.then((r) => {
      if (this.state === 'running') this.world.log('warn', `instance ${this.id}: its init exited unexpectedly ${JSON.stringify(r)}`);
    });
  }

  // What the init runs, as cloud-init would: a script user-data itself, a #cloud-config's runcmd
  // (after its write_files), nothing for anything else.
  bootArgv() {
    if (!this.userData) { this.console('no user-data'); return []; }
    if (this.isScript) { this.console('executing user-data script'); return [path.join(this.dir, 'user-data')]; }
    if (!this.isCloudConfig) {
      this.console('user-data is neither a script (#!) nor #cloud-config: stored and served by IMDS, not executed');
      return [];
    }
    try {
      const runcmd = applyCloudConfig(this.userData.toString('utf8'), this.dir, (line) => this.console(line));
      if (!runcmd) { this.console('cloud-config has no runcmd: nothing to run'); return []; }
      this.console('running cloud-config runcmd');
      return [runcmd];
    } catch (err) {
      this.console(`cloud-config not applied: ${err.message}`);
      return [];
    }
  }

  setState(state, why) {
    this.state = state;
    if (why) {
      const [code, message, prefix] = REASONS[why];
      this.stateReason = { code, message };
      this.transitionReason = `${prefix} (${gmt(new Date())})`;
    }
  }

  // TerminateInstances and friends: returns { previous, current } at once; the work follows.
  // `graceMs` overrides the terminateGraceMs setting (0: straight to SIGKILL, as SkipOsShutdown asks).
  terminate(why = 'user', graceMs) {
    const previous = this.state;
    if (previous === 'shutting-down' || previous === 'terminated') return { previous, current: previous };
    if (graceMs !== undefined) this.graceMs = graceMs;
    this.setState('shutting-down', why);
    if (this.wakePending) this.wakePending();
    this.work = this.work.then(() => this.halt()).then(() => {
      this.setState('terminated');
      this.terminatedAt = Date.now();
      this.world.log('info', `instance ${this.id} terminated`);
    }).catch((err) => this.world.log('error', `instance ${this.id} terminate: ${err.stack || err}`));
    return { previous, current: 'shutting-down' };
  }

  stop(why, graceMs) {
    const previous = this.state;
    if (previous !== 'running' && previous !== 'pending') return { previous, current: previous };
    if (graceMs !== undefined) this.graceMs = graceMs;
    this.setState('stopping', why);
    if (this.wakePending) this.wakePending();
    this.work = this.work.then(() => this.halt()).then(() => {
      if (this.state === 'stopping') this.setState('stopped');
    }).catch((err) => this.world.log('error', `instance ${this.id} stop: ${err.stack || err}`));
    return { previous, current: 'stopping' };
  }

  // Ends every process, then closes the IMDS endpoint and revokes the role credentials.
  async halt() {
    if (this.sandbox) {
      this.console(`shutting down (${this.stateReason ? this.stateReason.code : 'stop'})`);
      await this.sandbox.stop(this.graceMs !== undefined ? this.graceMs : this.world.settings.terminateGraceMs);
      this.sandbox = null;
    }
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (this.imds) { await this.imds.close(); this.imds = null; }
    this.world.credentials.revokeInstance(this.id);
    this.creds = null;
  }

  // The OS shut itself down (bin/poweroff): EC2 applies InstanceInitiatedShutdownBehavior.
  instanceInitiatedShutdown() {
    if (this.shutdownBehavior === 'stop') this.stop('instance');
    else this.terminate('instance');
    return this.shutdownBehavior;
  }

  // Injects a spot interruption notice; after `inSeconds` the instance is interrupted for real.
  spotInterruption(action, inSeconds) {
    const at = Date.now() + inSeconds * 1000;
    this.notices.spot = { action, at };
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (action === 'terminate') this.terminate('spot');
      else this.stop('spotStop');
    }, inSeconds * 1000);
    this.timers.add(t);
    return { action, time: new Date(at).toISOString() };
  }

  rebalance() {
    this.notices.rebalance = { at: Date.now() };
    return { noticeTime: new Date(this.notices.rebalance.at).toISOString() };
  }

  // The role credentials IMDS hands out, re-issued before they expire (as EC2 rotates them).
  roleCredentials() {
    const ttl = this.world.settings.credentialTtlMs;
    const c = this.creds;
    if (!c || Date.now() >= +c.expiration - Math.min(5 * 60 * 1000, c.ttl / 2)) {
      this.creds = { ...this.world.credentials.issueForInstance(this.id, ttl), issuedAt: Date.now(), ttl };
    }
    return this.creds;
  }

  summary() {
    return {
      id: this.id, state: this.state, stateCode: this.stateCode, type: this.instanceType, lifecycle: this.lifecycle,
      tags: Object.fromEntries(this.tags), pid: this.sandbox ? this.sandbox.initPid : null,
      pids: this.sandbox ? this.sandbox.members() : [], imdsUrl: this.imds ? this.imds.url : null, dir: this.dir,
      consoleLog: this.consolePath(), userDataIsScript: this.isScript,
      userDataIsCloudConfig: this.isCloudConfig, env: this.env,
      launchTime: this.launchTime.toISOString(), reservationId: this.reservationId, fleetId: this.fleetId || null,
      imageId: this.imageId, availabilityZone: this.az, subnetId: this.subnetId || null,
      shutdownBehavior: this.shutdownBehavior, metadataOptions: this.metadata,
      iamInstanceProfile: this.profile ? this.profile.arn : null, stateReason: this.stateReason, recordOnly: !!this.recordOnly,
      disableApiTermination: !!this.disableApiTermination,
      spotNotice: this.notices.spot && { action: this.notices.spot.action, time: new Date(this.notices.spot.at).toISOString() },
      rebalanceNotice: this.notices.rebalance && { noticeTime: new Date(this.notices.rebalance.at).toISOString() },
      isolation: this.world.isolation.mode,
    };
  }
}

module.exports = { Instance, STATE_CODES };
