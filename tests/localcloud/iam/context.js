'use strict';
// Who made a recorded request, as AWS would see the credentials, and which pool's names its
// policies are instantiated with.
//
// The caller: the controller is a role session of the account (runpoolctl under a workflow's
// OIDC role or an operator's); an instance is a session of the instance role named after the
// instance, whose requests carry what AWS attaches to EC2 role credentials: `aws:userid` =
// "<role id>:<instance id>" (as recorded: the credentials the local cloud issued carry it),
// `ec2:SourceInstanceARN`, `ec2:RoleDelivery`, and `aws:PrincipalAccount` / `aws:PrincipalArn`.
//
// The names: an instance's pool and table are its own tags (runpool:pool, runpool:table, which
// runpoolctl's launch template gives it); the controller's pool is the pool the request's resource
// belongs to — the pool of the table it names, the pool whose `<pool>-` prefix its queue has, the
// pool of the launch template it launches with or changes, the pool tag of the instance it
// terminates — each from the recording (world.js). A request of no known pool is evaluated with a
// pool name that matches nothing, so it is denied.
const { POOL_TAG, TABLE_TAG, queueName, form, tagsOfType } = require('./world');

const CONTROLLER_ROLE = 'runpoolctl';
const NO_POOL = '(no-pool)';

function principalOf(line, w) {
  const account = w.accountId;
  if (line.principal === 'controller') {
    return {
      kind: 'controller',
      arn: `arn:aws:sts::${account}:assumed-role/${CONTROLLER_ROLE}/runpoolctl`,
      context: {
        'aws:PrincipalAccount': account,
        'aws:PrincipalArn': `arn:aws:iam::${account}:role/${CONTROLLER_ROLE}`,
        'aws:userid': `AROA4LOCALCLOUDCONTROL:runpoolctl`,
      },
    };
  }
  const m = /^instance:(i-[0-9a-f]+)$/.exec(line.principal);
  if (!m) throw new Error(`unknown principal ${line.principal}`);
  const id = m[1];
  const role = instanceRole(line, w);
  const userId = line.userId || w.userIds.get(id);
  if (!userId) throw new Error(`${line.principal}: no aws:userid recorded for its credentials`);
  return {
    kind: 'instance',
    instanceId: id,
    arn: `arn:aws:sts::${account}:assumed-role/${role}/${id}`,
    context: {
      'aws:userid': userId,
      'aws:PrincipalAccount': account,
      'aws:PrincipalArn': `arn:aws:iam::${account}:role/${role}`,
      'ec2:SourceInstanceARN': `arn:aws:ec2:${w.region}:${account}:instance/${id}`,
      'ec2:RoleDelivery': '2.0',
    },
  };
}

function callerTags(line, w) {
  const id = line.principal.slice('instance:'.length);
  return line.callerTags || w.instances.get(id)?.tags || null;
}

function instanceRole(line, w) {
  const tags = callerTags(line, w);
  const pool = tags && w.pools.get(tags[POOL_TAG]);
  return pool?.role || '(unknown-role)';
}

// The pool a controller request belongs to (null: none known).
function controllerPool(line, w) {
  const r = line.request;
  const byName = (name) => (name && w.pools.has(name) ? name : null);
  switch (line.service) {
    case 'dynamodb': {
      const table = r.TableName || Object.keys(r.RequestItems || {})[0];
      return w.poolsOfTable(table)[0]?.name || null;
    }
    case 'sqs': {
      if (line.operation === 'ListQueues') return w.poolOfQueue(r.QueueNamePrefix || '');
      const name = ['CreateQueue', 'GetQueueUrl'].includes(line.operation) ? r.QueueName : queueName(line.queueUrl);
      return w.poolOfQueue(name);
    }
    case 'ec2': {
      const f = form(line);
      const fromTemplate = (spec) => {
        const t = spec && w.templateOf(spec);
        return t && !t.unknown ? byName(t.tags[POOL_TAG] || tagsOfType(t.data?.TagSpecification, 'instance')[POOL_TAG]) : null;
      };
      switch (line.operation) {
        case 'RunInstances':
          return fromTemplate(f.LaunchTemplate) || byName(tagsOfType(f.TagSpecification, 'instance')[POOL_TAG]);
        case 'CreateFleet':
          return (f.LaunchTemplateConfigs || []).map((c) => fromTemplate(c.LaunchTemplateSpecification)).find(Boolean) ||
            byName(tagsOfType(f.TagSpecification, 'instance')[POOL_TAG]);
        case 'CreateLaunchTemplate':
          return byName(tagsOfType(f.TagSpecification, 'launch-template')[POOL_TAG]);
        case 'CreateLaunchTemplateVersion': case 'ModifyLaunchTemplate':
          return fromTemplate({ LaunchTemplateId: f.LaunchTemplateId, LaunchTemplateName: f.LaunchTemplateName });
        default: {
          // Instances named: their pool tag (the controller of that pool is the one that would act).
          for (const info of Object.values(line.instances || {})) if (info?.tags?.[POOL_TAG]) return byName(info.tags[POOL_TAG]);
          // Describe… and the like have no resource: any pool's policy answers alike.
          return w.pools.keys().next().value || null;
        }
      }
    }
    case 'logs':
      return w.pools.keys().next().value || null;
    default:
      return null;
  }
}

/**
 * The placeholders' values for a request: { PARTITION, REGION, ACCOUNT_ID, TABLE, POOL,
 * INSTANCE_ROLE, METRICS_LOG_GROUP, INSTANCE_TYPES, RESOURCE_CLASSES }, and the pool (null when none is known).
 * `override.pool` evaluates a controller request as that pool's runpoolctl would make it.
 */
function namesFor(line, w, override = {}) {
  let pool = null;
  let table = null;
  if (line.principal === 'controller') {
    pool = override.pool || controllerPool(line, w);
    table = (pool && w.pools.get(pool)?.table) || line.request.TableName || Object.keys(line.request.RequestItems || {})[0] || null;
  } else {
    const tags = callerTags(line, w);
    pool = tags?.[POOL_TAG] || null;
    table = tags?.[TABLE_TAG] || null;
  }
  const p = pool ? w.pools.get(pool) : null;
  return {
    pool,
    names: {
      PARTITION: 'aws',
      REGION: w.region,
      ACCOUNT_ID: w.accountId,
      TABLE: table || NO_POOL,
      POOL: pool || NO_POOL,
      INSTANCE_ROLE: p?.role || '(unknown-role)',
      // The metrics log group is runpoolctl's setting, which requests do not carry: the group a
      // Logs request names is taken as the pool's.
      METRICS_LOG_GROUP: (line.service === 'logs' && line.request.logGroupName) || `/runpool/${pool || NO_POOL}/metrics`,
      // The types of runpoolctl's resource_classes: given to the evaluator (--instance-types), else
      // those the pool's recorded launch template and launches name.
      INSTANCE_TYPES: w.configuredInstanceTypes?.length ? [...w.configuredInstanceTypes]
        : (p?.instanceTypes.size ? [...p.instanceTypes].sort() : [NO_POOL]),
      // The classes of runpoolctl's resource_classes: those whose pool queues the recording made
      // or found (a queue of no class the pool has is another's).
      RESOURCE_CLASSES: w.classesOf(pool).length ? w.classesOf(pool) : [NO_POOL],
    },
  };
}

module.exports = { principalOf, namesFor, controllerPool, NO_POOL, CONTROLLER_ROLE };
