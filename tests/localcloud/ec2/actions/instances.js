'use strict';
// RunInstances, DescribeInstances, TerminateInstances, StopInstances.
const { Ec2Error, missing, invalid } = require('../errors');
const { allow, int, dryRun, getInstances, bool } = require('./common');
const L = require('../launch');
const { instanceXml, reservationsXml, state } = require('../render');
const { matcher, paginate } = require('../filters');

function RunInstances(world, p) {
  allow(p, ['MinCount', 'MaxCount', 'LaunchTemplate', 'ClientToken', 'SubnetId', 'DryRun', ...L.LAUNCH_FIELDS]);
  const min = int(p, 'MinCount', { required: true });
  const max = int(p, 'MaxCount', { required: true });
  if (min < 1) throw invalid('MinCount', min, 'MinCount must be at least 1.');
  if (max < min) throw invalid('MaxCount', max, 'MaxCount must be greater than or equal to MinCount.');
  if (p.InstanceRequirements) throw new Ec2Error('UnknownParameter', 'The parameter InstanceRequirements is not recognized');
  let lt = null;
  if (p.LaunchTemplate) {
    const t = L.findTemplate(world, p.LaunchTemplate);
    lt = { t, v: L.findVersion(t, p.LaunchTemplate.Version) };
  }
  const base = L.launchBase(world, L.merge(lt && lt.v.data, p));
  dryRun(p);
  return world.idempotent('RunInstances', p.ClientToken, p, () => {
    const az = L.zoneFor(world, base, p.SubnetId);
    const granted = world.capacity.take(base.instanceType, base.lifecycle, az, max);
    if (granted < min) {
      world.capacity.giveBack(base.instanceType, base.lifecycle, az, granted);
      throw L.capacityError(world, base.lifecycle, base.instanceType, az);
    }
    const insts = L.createInstances(world, base, granted, { subnetId: p.SubnetId, az, clientToken: p.ClientToken,
      systemTags: lt ? L.templateTags(lt.t, lt.v) : undefined });
    const reservationId = insts[0].reservationId;
    // A retried call (same token) answers with the same reservation, as it is now.
    return () => ({ reservationId, ownerId: world.accountId, groupSet: [], instancesSet: insts.map(instanceXml) });
  });
}

const INSTANCE_FILTERS = {
  'instance-id': (i) => i.id,
  'instance-state-name': (i) => i.state,
  'instance-state-code': (i) => i.stateCode,
  'instance-type': (i) => i.instanceType,
  'instance-lifecycle': (i) => (i.lifecycle === 'spot' ? 'spot' : undefined),
  'availability-zone': (i) => i.az,
  'subnet-id': (i) => i.subnetId,
  'image-id': (i) => i.imageId,
  'reservation-id': (i) => i.reservationId,
  'client-token': (i) => i.clientToken,
  'iam-instance-profile.arn': (i) => i.profile && i.profile.arn,
  'spot-instance-request-id': (i) => i.spotRequestId,
  'private-ip-address': (i) => (i.state === 'terminated' ? undefined : '127.0.0.1'),
  'key-name': (i) => i.keyName,
};

function DescribeInstances(world, p) {
  allow(p, ['InstanceId', 'Filter', 'MaxResults', 'NextToken', 'DryRun']);
  dryRun(p);
  if (p.InstanceId && p.MaxResults !== undefined) {
    throw new Ec2Error('InvalidParameterCombination', 'The parameter instancesSet cannot be used with the parameter maxResults');
  }
  const match = matcher(p.Filter, INSTANCE_FILTERS, (i) => i.tags);
  const pool = p.InstanceId ? getInstances(world, p.InstanceId).sort((a, b) => a.seq - b.seq) : world.visibleInstances();
  const { page, nextToken } = paginate(pool.filter(match), { scope: 'DescribeInstances', maxResults: p.MaxResults, nextToken: p.NextToken });
  return { reservationSet: reservationsXml(world, page), nextToken };
}

function TerminateInstances(world, p, ctx) {
  allow(p, ['InstanceId', 'DryRun', 'Force', 'SkipOsShutdown']);
  if (!p.InstanceId || !p.InstanceId.length) throw missing('InstanceId');
  const insts = getInstances(world, p.InstanceId);
  for (const i of insts) world.authorizeInstance(ctx, i.id);
  const locked = insts.find((i) => i.disableApiTermination);
  if (locked) {
    throw new Ec2Error('OperationNotPermitted', `The instance '${locked.id}' may not be terminated. Modify its 'disableApiTermination' instance attribute and try again.`);
  }
  dryRun(p);
  const graceOverride = bool(p.SkipOsShutdown) ? 0 : undefined;
  return {
    instancesSet: insts.map((i) => {
      const { previous, current } = i.terminate('user', graceOverride);
      return { instanceId: i.id, currentState: state(current), previousState: state(previous) };
    }),
  };
}

// StopInstances: a running instance goes stopping -> stopped; one already stopping or stopped answers
// with its state (EC2 accepts the repeat); pending, shutting-down and terminated instances are refused
// with IncorrectInstanceState, and a spot instance whose interruption behaviour is not stop with
// UnsupportedOperation, both before anything changes. Force skips the OS shutdown, as SkipOsShutdown does.
function StopInstances(world, p, ctx) {
  allow(p, ['InstanceId', 'DryRun', 'Force', 'SkipOsShutdown']);
  if (!p.InstanceId || !p.InstanceId.length) throw missing('InstanceId');
  const insts = getInstances(world, p.InstanceId);
  for (const i of insts) world.authorizeInstance(ctx, i.id);
  for (const i of insts) {
    if (i.lifecycle === 'spot' && i.interruptionBehavior !== 'stop') {
      throw new Ec2Error('UnsupportedOperation', `You can't stop the Spot Instance '${i.id}' because it is associated with a one-time Spot Instance request. You can only stop Spot Instances associated with persistent Spot Instance requests.`);
    }
    if (!['running', 'stopping', 'stopped'].includes(i.state) || i.recordOnly) {
      throw new Ec2Error('IncorrectInstanceState', `The instance '${i.id}' is not in a state from which it can be stopped.`);
    }
  }
  dryRun(p);
  const graceOverride = bool(p.Force) || bool(p.SkipOsShutdown) ? 0 : undefined;
  return {
    instancesSet: insts.map((i) => {
      const { previous, current } = i.stop('user', graceOverride);
      return { instanceId: i.id, currentState: state(current), previousState: state(previous) };
    }),
  };
}

module.exports = { RunInstances, DescribeInstances, TerminateInstances, StopInstances };
