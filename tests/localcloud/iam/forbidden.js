'use strict';
// The forbidden set: requests runpool's policies must deny, each made from a real recorded request
// (so its caller, context and names are those of the run) by changing one thing. Every case has a
// control — the same synthetic request with the legitimate value (its own key, its own queue,
// the pool's tag…) — which must be allowed: a case whose control is denied shows nothing.
const { form, queueName, tagsOfType, POOL_TAG } = require('./world');

const clone = (x) => JSON.parse(JSON.stringify(x));
const OUTSIDE_TYPE = 'p5.48xlarge';
// Another instance of the same pool, when the recording has a single one.
const OTHER_INSTANCE = 'i-0fffffffffffffff0';

function variant(line, name, changes) {
  const l = clone(line);
  l.synthetic = name;
  changes(l);
  return l;
}

// Form fields of a launch as RunInstances would carry them (a CreateFleet config as the
// RunInstances of its first override): the template, subnet and type it names.
function asRunInstances(line, w) {
  if (line.operation === 'RunInstances') return clone(line);
  const f = form(line);
  const c = (f.LaunchTemplateConfigs || [])[0] || {};
  const spec = c.LaunchTemplateSpecification || {};
  const o = (c.Overrides || [])[0] || {};
  const t = w.templateOf(spec);
  const request = { Action: 'RunInstances', Version: line.request.Version, MinCount: '1', MaxCount: '1' };
  if (spec.LaunchTemplateId) request['LaunchTemplate.LaunchTemplateId'] = spec.LaunchTemplateId;
  if (spec.LaunchTemplateName) request['LaunchTemplate.LaunchTemplateName'] = spec.LaunchTemplateName;
  const type = o.InstanceType || o.InstanceRequirements?.AllowedInstanceType?.[0] || t?.data?.InstanceType;
  if (type) request.InstanceType = type;
  if (o.SubnetId) request.SubnetId = o.SubnetId;
  return { ...clone(line), operation: 'RunInstances', request };
}

// The same launch without the template: its data as the request's own fields, and no tags.
function untemplated(run, w) {
  const f = form(run);
  const t = f.LaunchTemplate ? w.templateOf(f.LaunchTemplate) : null;
  const d = t?.data || {};
  const request = {};
  for (const [k, v] of Object.entries(run.request)) if (!k.startsWith('LaunchTemplate.') && !k.startsWith('TagSpecification.')) request[k] = v;
  if (!request.ImageId && d.ImageId) request.ImageId = d.ImageId;
  if (!request.InstanceType && d.InstanceType) request.InstanceType = d.InstanceType;
  if (d.IamInstanceProfile?.Name) request['IamInstanceProfile.Name'] = d.IamInstanceProfile.Name;
  if (d.IamInstanceProfile?.Arn) request['IamInstanceProfile.Arn'] = d.IamInstanceProfile.Arn;
  (d.SecurityGroupId || []).forEach((sg, i) => { request[`SecurityGroupId.${i + 1}`] = sg; });
  return { ...clone(run), request };
}

function withInstanceTags(request, tags) {
  const out = { ...request };
  Object.entries(tags).forEach(([k, v], i) => {
    out['TagSpecification.1.ResourceType'] = 'instance';
    out[`TagSpecification.1.Tag.${i + 1}.Key`] = k;
    out[`TagSpecification.1.Tag.${i + 1}.Value`] = v;
  });
  return out;
}

function instanceIdOf(line) { return line.principal.slice('instance:'.length); }

/**
 * forbiddenCases(worlds) -> { cases: [{ name, cloud, forbidden, control, override }], missing: [string] }
 * `worlds`: buildWorlds()'s map. Each case is taken from the first cloud whose recording has what it needs.
 */
function forbiddenCases(worlds) {
  const cases = [];
  const wanted = new Set();
  const add = (name, cloud, control, forbidden, override = {}) => {
    if (cases.some((c) => c.name === name)) return;
    cases.push({ name, cloud, override, control: { ...control, synthetic: `${name} (control)` },
      forbidden: { ...forbidden, synthetic: name } });
  };
  const need = (name) => wanted.add(name);

  for (const [cloud, { world: w, lines }] of worlds) {
    const agentLines = lines.filter((l) => l.principal.startsWith('instance:') && l.status >= 200 && l.status < 500);
    const poolOf = (id) => w.instances.get(id)?.tags?.[POOL_TAG];
    // Instance A (a caller with both reads and writes recorded) and B, another instance of A's pool.
    const get = agentLines.find((l) => l.service === 'dynamodb' && l.operation === 'GetItem');
    const update = agentLines.find((l) => l.service === 'dynamodb' && l.operation === 'UpdateItem' &&
      (!get || l.principal === get.principal));
    const others = (a) => [...w.instances.keys()].filter((id) => id !== a && poolOf(id) && poolOf(id) === poolOf(a));

    for (const n of ['an instance reads another instance\'s record', 'an instance updates another instance\'s record',
      'an instance sets its own record\'s state', 'an instance sets its own record\'s label',
      'an instance sets its own record\'s deadline_ms', 'an instance sets its own record\'s seal_key',
      'an instance sets its own record\'s spot_run', 'an instance sets its own record\'s spot_rerun', 'an instance reads old values back (ReturnValues ALL_OLD)',
      'an instance reads new values back (ReturnValues ALL_NEW)', 'an instance reads old values back (ReturnValues UPDATED_OLD)',
      'an instance scans the table', 'an instance queries the by_label index', 'an instance reads another instance\'s wake-up queue',
      'an instance terminates another instance', 'the controller launches without the pool\'s tag',
      'the controller launches with another pool\'s tag', 'the controller launches an instance type outside the pool\'s list',
      'the controller passes another role', 'the controller terminates an instance of another pool',
      'the controller terminates an instance of no pool', 'the controller tags an instance with another key than its label',
      'the controller relabels an instance of another pool',
      'the controller reaches another pool\'s queue whose name starts with this pool\'s name']) need(n);

    // The own record's key is "<role id>:<instance id>" (aws:userid); another's is B's.
    const keyed = (l, key) => variant(l, 'key', (x) => {
      const hk = w.tables.get(x.request.TableName)?.hashKey || Object.keys(x.request.Key || {})[0];
      x.request.Key = { ...(x.request.Key || {}), [hk]: { S: key } };
    });
    if (get && update) {
      const a = instanceIdOf(get);
      const own = get.userId || w.userIds.get(a);
      const b = others(a)[0] || OTHER_INSTANCE;
      const otherKey = w.userIds.get(b) || `${w.instanceRoleId}:${b}`;
      add('an instance reads another instance\'s record', cloud, keyed(get, own), keyed(get, otherKey));
      add('an instance updates another instance\'s record', cloud, keyed(update, own), keyed(update, otherKey));
      const ownUpdate = keyed(update, own);
      // seal_key: a thief who could replace the instance's public key would have the next
      // assignment's tokens sealed to a key of its own. spot_run, spot_rerun: which run's job is
      // re-run after a spot interruption, and whether it was, are the controller's to say.
      for (const field of ['state', 'label', 'deadline_ms', 'seal_key', 'spot_run', 'spot_rerun']) {
        add(`an instance sets its own record's ${field}`, cloud, ownUpdate, variant(ownUpdate, field, (x) => {
          const ue = x.request.UpdateExpression || '';
          x.request.UpdateExpression = /\bSET\s/i.test(ue) ? ue.replace(/\bSET\s+/i, 'SET #forbidden = :forbidden, ')
            : `SET #forbidden = :forbidden ${ue}`.trim();
          x.request.ExpressionAttributeNames = { ...(x.request.ExpressionAttributeNames || {}), '#forbidden': field };
          x.request.ExpressionAttributeValues = { ...(x.request.ExpressionAttributeValues || {}), ':forbidden': { S: 'x' } };
        }));
      }
      for (const rv of ['ALL_OLD', 'ALL_NEW', 'UPDATED_OLD']) {
        const which = rv === 'ALL_NEW' ? 'new values' : 'old values';
        add(`an instance reads ${which} back (ReturnValues ${rv})`, cloud, ownUpdate,
          variant(ownUpdate, rv, (x) => { x.request.ReturnValues = rv; }));
      }
      // Scan and Query are granted to no instance: the control is its own GetItem.
      add('an instance scans the table', cloud, keyed(get, own), variant(get, 'scan', (x) => {
        x.operation = 'Scan';
        x.request = { TableName: x.request.TableName };
      }));
      add('an instance queries the by_label index', cloud, keyed(get, own), variant(get, 'query', (x) => {
        x.operation = 'Query';
        x.request = { TableName: x.request.TableName, IndexName: 'by_label', KeyConditionExpression: '#l = :l',
          ExpressionAttributeNames: { '#l': 'label' }, ExpressionAttributeValues: { ':l': { S: 'some-label' } } };
      }));
    }

    // Another instance's wake-up queue: A's own receive, aimed at B's queue (B's policy applies).
    // B is another instance of the pool whose queue the recording created; else B's queue is
    // taken to have A's policy with B's id in A's place (as runpoolctl makes one per instance).
    for (const recv of agentLines.filter((l) => l.service === 'sqs' && l.operation === 'ReceiveMessage')) {
      const a = instanceIdOf(recv);
      const own = queueName(recv.queueUrl);
      const ownPolicy = w.queues.get(own)?.policy;
      if (!own || !own.endsWith(a) || !ownPolicy) continue;
      const prefix = own.slice(0, -a.length);
      const b = others(a).find((id) => w.queues.get(prefix + id)?.policy) || OTHER_INSTANCE;
      if (!w.queues.get(prefix + b)?.policy) w.queues.set(prefix + b, { policy: ownPolicy.split(a).join(b) });
      add('an instance reads another instance\'s wake-up queue', cloud, recv, variant(recv, 'other queue', (x) => {
        x.queueUrl = recv.queueUrl.replace(new RegExp(`${a}$`), b);
        if (x.request.QueueUrl) x.request.QueueUrl = x.queueUrl;
      }));
      break;
    }

    // Another instance terminated by an instance: its own TerminateInstances aimed at B.
    // B: another instance of A's pool, or one with A's tags when the recording has none.
    for (const t of agentLines.filter((l) => l.service === 'ec2' && l.operation === 'TerminateInstances')) {
      const a = instanceIdOf(t);
      if (t.request['InstanceId.1'] !== a || !t.instances?.[a]) continue;
      const b = others(a)[0] || OTHER_INSTANCE;
      const bInfo = w.instances.get(b) || { ...t.instances[a] };
      add('an instance terminates another instance', cloud, t, variant(t, 'other instance', (x) => {
        x.request['InstanceId.1'] = b;
        x.instances = { [b]: bInfo };
      }));
      break;
    }

    // Launches: a real RunInstances / CreateFleet of a pool, as RunInstances.
    const launch = lines.find((l) => l.principal === 'controller' && ['RunInstances', 'CreateFleet'].includes(l.operation) &&
      l.status >= 200 && l.status < 300);
    if (launch) {
      const run = asRunInstances(launch, w);
      const runForm = form(run);
      const t = runForm.LaunchTemplate ? w.templateOf(runForm.LaunchTemplate) : null;
      const pool = t?.tags?.[POOL_TAG] || tagsOfType(t?.data?.TagSpecification, 'instance')[POOL_TAG];
      if (pool) {
        const bare = untemplated(run, w);
        const tags = { ...tagsOfType(t?.data?.TagSpecification, 'instance') };
        const tagged = variant(bare, 'tagged', (x) => { x.request = withInstanceTags(x.request, tags); });
        add('the controller launches without the pool\'s tag', cloud, tagged, bare, { pool });
        add('the controller launches with another pool\'s tag', cloud, tagged,
          variant(bare, 'other pool tag', (x) => { x.request = withInstanceTags(x.request, { ...tags, [POOL_TAG]: `${pool}-other` }); }), { pool });
        add('the controller launches an instance type outside the pool\'s list', cloud, run,
          variant(run, 'type', (x) => { x.request.InstanceType = OUTSIDE_TYPE; }), { pool });
        add('the controller passes another role', cloud, tagged,
          variant(tagged, 'role', (x) => {
            delete x.request['IamInstanceProfile.Arn'];
            x.request['IamInstanceProfile.Name'] = 'another-role';
          }), { pool });
      }
    }

    // The controller's own queue request (a pool queue <pool>-<class>, a wake-up queue
    // <pool>-wake-<id>) aimed at pool <pool>-x's queue of the same class or instance: a queue whose
    // name starts with the pool's name and a dash, but another pool's.
    for (const [name, isWake] of [['the controller reaches another pool\'s queue whose name starts with this pool\'s name', false],
      ['the controller reaches another pool\'s wake-up queue whose name starts with this pool\'s name', true]]) {
      const q = lines.find((l) => {
        if (l.principal !== 'controller' || l.service !== 'sqs' || !(l.status >= 200 && l.status < 300)) return false;
        const qn = ['CreateQueue', 'GetQueueUrl'].includes(l.operation) ? l.request.QueueName : queueName(l.queueUrl);
        const pool = w.poolOfQueue(qn);
        return pool && qn.startsWith(`${pool}-wake-`) === isWake;
      });
      if (!q) continue;
      const qn = ['CreateQueue', 'GetQueueUrl'].includes(q.operation) ? q.request.QueueName : queueName(q.queueUrl);
      const pool = w.poolOfQueue(qn);
      const other = `${pool}-x-${qn.slice(pool.length + 1)}`;
      add(name, cloud, q, variant(q, 'other pool\'s queue', (x) => {
        if (x.request.QueueName) x.request.QueueName = other;
        if (x.queueUrl) x.queueUrl = x.queueUrl.replace(/[^/]+\/?$/, other);
        if (x.request.QueueUrl) x.request.QueueUrl = x.queueUrl;
      }), { pool });
    }

    // Terminations by the controller: one of a pool's instances, aimed at another pool's (or none).
    const term = lines.find((l) => l.principal === 'controller' && l.operation === 'TerminateInstances' &&
      Object.values(l.instances || {}).some((i) => i?.tags?.[POOL_TAG]));
    if (term) {
      const [id, info] = Object.entries(term.instances).find(([, i]) => i?.tags?.[POOL_TAG]);
      const pool = info.tags[POOL_TAG];
      const control = variant(term, 'one', (x) => {
        for (const k of Object.keys(x.request)) if (k.startsWith('InstanceId.')) delete x.request[k];
        x.request['InstanceId.1'] = id;
        x.instances = { [id]: info };
      });
      const foreign = [...w.instances.entries()].find(([, i]) => i?.tags?.[POOL_TAG] && i.tags[POOL_TAG] !== pool);
      const otherId = foreign ? foreign[0] : 'i-0eeeeeeeeeeeeeee0';
      const otherInfo = foreign ? foreign[1] : { tags: { ...info.tags, [POOL_TAG]: `${pool}-other` }, type: info.type };
      add('the controller terminates an instance of another pool', cloud, control, variant(control, 'other pool', (x) => {
        x.request['InstanceId.1'] = otherId;
        x.instances = { [otherId]: otherInfo };
      }), { pool });
      add('the controller terminates an instance of no pool', cloud, control, variant(control, 'no pool', (x) => {
        x.request['InstanceId.1'] = 'i-0dddddddddddddd00';
        x.instances = { 'i-0dddddddddddddd00': { tags: { Name: 'not-runpool' }, type: info.type } };
      }), { pool });
    }

    // A claim's relabelling (CreateTags runpool:label on a pool instance after its launch), aimed
    // at another tag key (moving the instance into another pool) or at another pool's instance.
    const relabel = lines.find((l) => l.principal === 'controller' && l.operation === 'CreateTags' &&
      l.status >= 200 && l.status < 300 && Object.values(l.instances || {}).some((i) => i?.tags?.[POOL_TAG]));
    if (relabel) {
      const [id, info] = Object.entries(relabel.instances).find(([, i]) => i?.tags?.[POOL_TAG]);
      const pool = info.tags[POOL_TAG];
      const one = variant(relabel, 'one', (x) => {
        for (const k of Object.keys(x.request)) if (k.startsWith('ResourceId.')) delete x.request[k];
        x.request['ResourceId.1'] = id;
        x.instances = { [id]: info };
      });
      add('the controller tags an instance with another key than its label', cloud, one, variant(one, 'pool tag', (x) => {
        x.request['Tag.1.Key'] = POOL_TAG;
        x.request['Tag.1.Value'] = `${pool}-other`;
      }), { pool });
      const otherId = 'i-0ccccccccccccccc0';
      add('the controller relabels an instance of another pool', cloud, one, variant(one, 'other pool', (x) => {
        x.request['ResourceId.1'] = otherId;
        x.instances = { [otherId]: { tags: { ...info.tags, [POOL_TAG]: `${pool}-other` }, type: info.type } };
      }), { pool });
    }
  }
  const missing = [...wanted].filter((n) => !cases.some((c) => c.name === n));
  return { cases, missing };
}

module.exports = { forbiddenCases, OUTSIDE_TYPE };
