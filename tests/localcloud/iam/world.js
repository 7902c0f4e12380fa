'use strict';
// What the IAM tier knows of one local cloud's resources, learnt from its recorded requests
// (lib/recorder.js) in the order they were made: tables (their partition key), pools (their table,
// instance role, launch templates, from `runpoolctl init`'s CreateLaunchTemplate), launch
// templates (tags, data), queues (their Policy attribute), and instances (their tags, as the EC2
// stand-in held them when a request named them or came from them).
const fs = require('node:fs');
const { nest } = require('../ec2/query');

const POOL_TAG = 'runpool:pool';
const TABLE_TAG = 'runpool:table';

function readRecording(file) {
  const text = fs.readFileSync(file, 'utf8');
  const lines = [];
  text.split('\n').forEach((l, i) => {
    if (!l.trim()) return;
    try { lines.push(JSON.parse(l)); } catch (err) { throw new Error(`${file}:${i + 1}: not JSON: ${err.message}`); }
  });
  return lines;
}

// EC2 form fields as nested objects and lists (the stand-in's own reading).
function form(line) {
  if (!line._nested) Object.defineProperty(line, '_nested', { value: nest(line.request), enumerable: false });
  return line._nested;
}

// [{Key, Value}] of TagSpecification entries of a resource type, as {key: value}.
function tagsOfType(specs, type) {
  const out = {};
  for (const s of specs || []) if (s && s.ResourceType === type) for (const t of s.Tag || []) out[t.Key] = t.Value ?? '';
  return out;
}

// A queue's name from its URL (…/<account>/<name>).
function queueName(url) {
  const m = /\/([^/?]+)\/?(?:\?.*)?$/.exec(url || '');
  return m ? decodeURIComponent(m[1]) : null;
}

// The Policy attribute a CreateQueue / SetQueueAttributes request sets (JSON or query protocol).
function policyAttribute(line) {
  const r = line.request;
  if (line.protocol === 'json') return r.Attributes && typeof r.Attributes.Policy === 'string' ? r.Attributes.Policy : undefined;
  for (let i = 1; r[`Attribute.${i}.Name`] !== undefined; i++) {
    if (r[`Attribute.${i}.Name`] === 'Policy') return r[`Attribute.${i}.Value`];
  }
  return undefined;
}

class CloudWorld {
  constructor(id) {
    this.id = id;
    this.region = null;
    this.accountId = null;
    this.instanceRoleId = null;
    this.tables = new Map();      // table -> { hashKey, indexes: Set }
    this.pools = new Map();       // pool -> { name, table, role, templates: Set(ids and names), instanceTypes: Set }
    this.templates = new Map();   // id or name -> { id, name, tags, data }
    this.queues = new Map();      // queue name -> { policy (JSON string) | null }
    this.queueNames = new Set();  // every queue created or found (GetQueueUrl) in the recording
    this.instances = new Map();   // instance id -> { tags, type }
    this.userIds = new Map();     // instance id -> the aws:userid its credentials carried
  }

  pool(name) {
    if (!this.pools.has(name)) this.pools.set(name, { name, table: null, role: null, templates: new Set(), instanceTypes: new Set() });
    return this.pools.get(name);
  }

  template(ref) { return ref ? this.templates.get(ref) || null : null; }

  // The launch template a RunInstances (LaunchTemplate.*) or CreateFleet config
  // (LaunchTemplateSpecification) names.
  templateOf(spec) {
    if (!spec) return null;
    return this.template(spec.LaunchTemplateId) || this.template(spec.LaunchTemplateName) ||
      { id: spec.LaunchTemplateId || null, name: spec.LaunchTemplateName || null, tags: {}, data: {}, unknown: true };
  }

  // The pool whose queues are named `<pool>-…` (the longest pool name that fits).
  poolOfQueue(name) {
    let best = null;
    for (const p of this.pools.keys()) if (name && name.startsWith(`${p}-`) && (!best || p.length > best.length)) best = p;
    return best;
  }

  // A pool's resource classes: the <class> of its queues <pool>-<class> the recording made or
  // found, which are not its wake-up queues <pool>-wake-<instance id>.
  classesOf(pool) {
    return [...this.queueNames].filter((q) => pool && this.poolOfQueue(q) === pool && !q.startsWith(`${pool}-wake-`))
      .map((q) => q.slice(pool.length + 1)).sort();
  }

  poolsOfTable(table) { return [...this.pools.values()].filter((p) => p.table === table); }

  learn(line) {
    this.region ||= line.region;
    this.accountId ||= line.accountId;
    this.instanceRoleId ||= line.instanceRoleId;
    if (line.principal.startsWith('instance:')) {
      const id = line.principal.slice('instance:'.length);
      if (line.userId) this.userIds.set(id, line.userId);
      if (line.callerTags) this.noteInstance(id, { tags: line.callerTags });
    }
    for (const [id, info] of Object.entries(line.instances || {})) if (info) this.noteInstance(id, info);
    const ok = line.status >= 200 && line.status < 300;
    const r = line.request;
    if (line.service === 'dynamodb' && line.operation === 'CreateTable') {
      const hash = (r.KeySchema || []).find((k) => k.KeyType === 'HASH');
      const indexes = new Set([...(r.GlobalSecondaryIndexes || []), ...(r.LocalSecondaryIndexes || [])].map((i) => i.IndexName));
      if (hash) this.tables.set(r.TableName, { hashKey: hash.AttributeName, indexes });
    }
    if (line.service === 'sqs' && ['CreateQueue', 'GetQueueUrl'].includes(line.operation) && ok && r.QueueName) {
      this.queueNames.add(r.QueueName);
    }
    if (line.service === 'sqs' && (line.operation === 'CreateQueue' || line.operation === 'SetQueueAttributes')) {
      const name = line.operation === 'CreateQueue' ? (r.QueueName) : queueName(line.queueUrl);
      const policy = policyAttribute(line);
      if (name && (ok || line.status == null)) {
        const q = this.queues.get(name) || { policy: null };
        if (policy !== undefined) q.policy = policy || null;
        this.queues.set(name, q);
      }
    }
    if (line.service === 'ec2' && line.operation === 'CreateLaunchTemplate' && ok) {
      const f = form(line);
      const data = f.LaunchTemplateData || {};
      const tags = tagsOfType(f.TagSpecification, 'launch-template');
      const t = { id: (line.answer?.launchTemplateIds || [])[0] || null, name: f.LaunchTemplateName || null, tags, data };
      if (t.id) this.templates.set(t.id, t);
      if (t.name) this.templates.set(t.name, t);
      const poolName = tags[POOL_TAG] || tagsOfType(data.TagSpecification, 'instance')[POOL_TAG];
      if (poolName) {
        const p = this.pool(poolName);
        p.table ||= tags[TABLE_TAG] || tagsOfType(data.TagSpecification, 'instance')[TABLE_TAG] || null;
        p.role ||= roleOfProfile(data.IamInstanceProfile);
        if (t.id) p.templates.add(t.id);
        if (t.name) p.templates.add(t.name);
        if (data.InstanceType) p.instanceTypes.add(data.InstanceType);
      }
    }
    if (line.service === 'ec2' && (line.operation === 'RunInstances' || line.operation === 'CreateFleet')) {
      const f = form(line);
      const specs = line.operation === 'RunInstances' ? [f.LaunchTemplate] : (f.LaunchTemplateConfigs || []).map((c) => c.LaunchTemplateSpecification);
      for (const spec of specs) {
        const t = this.templateOf(spec);
        const tags = { ...tagsOfType(t?.data?.TagSpecification, 'instance'), ...tagsOfType(f.TagSpecification, 'instance') };
        if (!tags[POOL_TAG]) continue;
        const p = this.pool(tags[POOL_TAG]);
        p.table ||= tags[TABLE_TAG] || null;
        p.role ||= roleOfProfile(f.IamInstanceProfile) || roleOfProfile(t?.data?.IamInstanceProfile);
        for (const type of launchTypes(line.operation, f, t)) p.instanceTypes.add(type);
      }
    }
  }

  noteInstance(id, info) {
    const prev = this.instances.get(id) || {};
    this.instances.set(id, { ...prev, ...Object.fromEntries(Object.entries(info).filter(([, v]) => v != null)) });
  }
}

// The role an instance profile holds. The local cloud models no IAM roles: runpool's instance
// profile and its role are taken to share a name (as an operator's `aws iam create-instance-profile`
// for the role of the same name makes them); an ARN's last path segment is that name.
function roleOfProfile(profile) {
  if (!profile) return null;
  if (profile.Name) return profile.Name;
  if (profile.Arn) return profile.Arn.split('/').pop();
  return null;
}

// The instance types a launch may start: RunInstances' InstanceType (or its template's); each
// CreateFleet override's InstanceType or its requirements' AllowedInstanceType list, else the template's.
function launchTypes(operation, f, template) {
  if (operation === 'RunInstances') {
    const t = f.InstanceType || template?.data?.InstanceType;
    return t ? [t] : [];
  }
  const out = [];
  for (const c of f.LaunchTemplateConfigs || []) {
    const tmpl = template || null;
    for (const o of c.Overrides || [{}]) {
      if (o.InstanceType) out.push(o.InstanceType);
      else if (o.InstanceRequirements?.AllowedInstanceType) out.push(...o.InstanceRequirements.AllowedInstanceType);
      else if (tmpl?.data?.InstanceType) out.push(tmpl.data.InstanceType);
    }
  }
  return [...new Set(out)];
}

// One CloudWorld per local cloud (line.cloud), each fed its lines in request order.
function buildWorlds(lines) {
  const byCloud = new Map();
  for (const l of lines) {
    if (!byCloud.has(l.cloud)) byCloud.set(l.cloud, []);
    byCloud.get(l.cloud).push(l);
  }
  const worlds = new Map();
  for (const [cloud, ls] of byCloud) {
    ls.sort((a, b) => a.seq - b.seq);
    const w = new CloudWorld(cloud);
    for (const l of ls) w.learn(l);
    worlds.set(cloud, { world: w, lines: ls });
  }
  return worlds;
}

module.exports = { readRecording, buildWorlds, CloudWorld, form, tagsOfType, queueName, policyAttribute, roleOfProfile,
  launchTypes, POOL_TAG, TABLE_TAG };
