'use strict';
// CreateFleet, Type=instant: tries the launch template/override pools per usage class and reports
// what it could not launch in errorSet (partial fulfilment), never falling back across usage classes.
const crypto = require('node:crypto');
const { Ec2Error, missing, invalid } = require('../errors');
const { allow, int, dryRun } = require('./common');
const L = require('../launch');
const { matchRequirements } = require('../catalog');

const PRIORITIZED = ['prioritized', 'capacity-optimized-prioritized'];

// One pool per (launch template version, override), InstanceRequirements expanded to matching types.
function poolsOf(world, configs, instanceTags) {
  const pools = [];
  for (const cfg of configs) {
    const spec = cfg.LaunchTemplateSpecification;
    if (!spec) throw missing('LaunchTemplateConfigs.LaunchTemplateSpecification');
    const t = L.findTemplate(world, spec);
    const v = L.findVersion(t, spec.Version);
    for (const ov of cfg.Overrides && cfg.Overrides.length ? cfg.Overrides : [{}]) {
      const types = ov.InstanceRequirements ? matchRequirements(ov.InstanceRequirements) : [ov.InstanceType || v.data.InstanceType];
      const eff = L.merge(v.data, { ImageId: ov.ImageId, TagSpecification: [{ ResourceType: 'instance', Tag: instanceTags }] });
      for (const type of types) {
        const base = L.launchBase(world, { ...eff, InstanceType: type });
        const weight = ov.WeightedCapacity === undefined ? 1 : Number(ov.WeightedCapacity);
        if (!(weight > 0)) throw invalid('WeightedCapacity', ov.WeightedCapacity);
        pools.push({ t, v, ov, base, subnetId: ov.SubnetId, weight,
          priority: ov.Priority === undefined ? Infinity : Number(ov.Priority),
          az: L.zoneFor(world, base, ov.SubnetId, ov.AvailabilityZone) });
      }
    }
  }
  return pools;
}

const overridesXml = (pool) => ({
  instanceType: pool.base.instanceType, subnetId: pool.ov.SubnetId, availabilityZone: pool.ov.AvailabilityZone,
  weightedCapacity: pool.ov.WeightedCapacity, priority: pool.ov.Priority, imageId: pool.ov.ImageId,
});
const ltao = (pool) => ({
  launchTemplateSpecification: { launchTemplateId: pool.t.id, version: String(pool.v.number) },
  overrides: overridesXml(pool),
});

function CreateFleet(world, p) {
  allow(p, ['Type', 'LaunchTemplateConfigs', 'TargetCapacitySpecification', 'SpotOptions', 'OnDemandOptions',
    'TagSpecification', 'ClientToken', 'DryRun', 'ExcessCapacityTerminationPolicy', 'ReplaceUnhealthyInstances',
    'TerminateInstancesWithExpiration', 'ValidFrom', 'ValidUntil', 'Context']);
  const type = p.Type || 'maintain';
  if (type !== 'instant') {
    throw new Ec2Error('InvalidParameterValue', `Fleets of type '${type}' are not supported by the local EC2 stand-in; use Type=instant.`);
  }
  if (!p.LaunchTemplateConfigs || !p.LaunchTemplateConfigs.length) throw missing('LaunchTemplateConfigs');
  const tcs = p.TargetCapacitySpecification;
  if (!tcs) throw missing('TargetCapacitySpecification');
  if (tcs.TargetCapacityUnitType && tcs.TargetCapacityUnitType !== 'units') {
    throw new Ec2Error('InvalidParameterValue', 'Only TargetCapacityUnitType=units is supported by the local EC2 stand-in.');
  }
  const total = int(tcs, 'TotalTargetCapacity', { required: true, min: 1 });
  const onDemand = Math.min(int(tcs, 'OnDemandTargetCapacity', { min: 0 }) || 0, total);
  const spot = Math.min(int(tcs, 'SpotTargetCapacity', { min: 0 }) || 0, total - onDemand);
  const def = tcs.DefaultTargetCapacityType || 'on-demand';
  if (!['spot', 'on-demand'].includes(def)) throw invalid('DefaultTargetCapacityType', def);
  const need = { 'on-demand': onDemand, spot };
  need[def] += total - onDemand - spot;
  const tagsOf = (rt) => (p.TagSpecification || []).filter((s) => s.ResourceType === rt).flatMap((s) => s.Tag || []);
  const fleetTags = L.validateTags(tagsOf('fleet'));
  const pools = poolsOf(world, p.LaunchTemplateConfigs, tagsOf('instance'));
  if (!pools.length) throw new Ec2Error('InvalidParameterValue', 'No instance type matches the InstanceRequirements.');
  dryRun(p);

  return world.idempotent('CreateFleet', p.ClientToken, p, () => {
    const fleetId = `fleet-${crypto.randomUUID()}`;
    const got = new Map(); // "lifecycle|pool index" -> count
    const errors = [];
    for (const lifecycle of ['on-demand', 'spot']) {
      let left = need[lifecycle];
      if (left <= 0) continue;
      const strategy = ((lifecycle === 'spot' ? p.SpotOptions : p.OnDemandOptions) || {}).AllocationStrategy || 'lowest-price';
      const order = pools.map((pool, i) => ({ pool, i }));
      if (PRIORITIZED.includes(strategy)) order.sort((a, b) => a.pool.priority - b.pool.priority);
      const fail = ({ pool }) => errors.push({ launchTemplateAndOverrides: ltao(pool), lifecycle,
        errorCode: 'InsufficientInstanceCapacity', errorMessage: L.capacityError(world, lifecycle, pool.base.instanceType, pool.az).message });
      const grant = (o, n) => {
        const g = world.capacity.take(o.pool.base.instanceType, lifecycle, o.pool.az, n);
        if (g) got.set(`${lifecycle}|${o.i}`, (got.get(`${lifecycle}|${o.i}`) || 0) + g);
        left -= g * o.pool.weight;
        return g;
      };
      if (strategy === 'diversified') { // one at a time across pools
        let open = order;
        while (left > 0 && open.length) {
          const next = [];
          for (const o of open) {
            if (left <= 0) break;
            if (grant(o, 1) === 1) next.push(o); else fail(o);
          }
          open = next;
        }
      } else {
        for (const o of order) {
          if (left <= 0) break;
          const n = Math.ceil(left / o.pool.weight);
          if (grant(o, n) < n) fail(o);
        }
      }
    }
    const fleetInstanceSet = [];
    const ids = [];
    for (const [key, count] of got) {
      const [lifecycle, i] = key.split('|');
      const pool = pools[Number(i)];
      const systemTags = new Map([...L.templateTags(pool.t, pool.v), ['aws:ec2:fleet-id', fleetId]]);
      const insts = L.createInstances(world, pool.base, count, { subnetId: pool.subnetId, az: pool.az, lifecycle,
        fleetId, systemTags });
      ids.push(...insts.map((x) => x.id));
      fleetInstanceSet.push({ launchTemplateAndOverrides: ltao(pool), lifecycle, instanceIds: insts.map((x) => x.id),
        instanceType: pool.base.instanceType });
    }
    world.fleets.set(fleetId, { id: fleetId, tags: fleetTags, instanceIds: ids, seq: ++world.seq });
    const body = { fleetId, errorSet: errors, fleetInstanceSet };
    return () => body;
  });
}

module.exports = { CreateFleet };
