'use strict';
// Helpers the actions share: parameter whitelists, numbers, booleans, instance lookups.
const { Ec2Error, missing, invalid } = require('../errors');

// Rejects parameters this stand-in does not model, rather than silently ignoring them.
function allow(p, names) {
  for (const k of Object.keys(p)) {
    if (k === 'Action' || k === 'Version' || names.includes(k)) continue;
    throw new Ec2Error('UnknownParameter', `The parameter ${k} is not recognized by the local EC2 stand-in.`);
  }
}

function int(p, name, { required = false, min = -Infinity } = {}) {
  const v = p[name];
  if (v === undefined) { if (required) throw missing(name); return undefined; }
  const n = Number(v);
  if (typeof v !== 'string' || !/^-?[0-9]+$/.test(v) || n < min) throw invalid(name, v);
  return n;
}

const bool = (v) => v === 'true';

function dryRun(p) {
  if (bool(p.DryRun)) throw new Ec2Error('DryRunOperation', 'Request would have succeeded, but DryRun flag is set.', 412);
}

const INSTANCE_ID = /^i-([0-9a-f]{8}|[0-9a-f]{17})$/;

// The visible instances with these ids, in the order asked; EC2's Malformed/NotFound errors otherwise.
function getInstances(world, ids) {
  const bad = ids.find((id) => !INSTANCE_ID.test(id));
  if (bad !== undefined) throw new Ec2Error('InvalidInstanceID.Malformed', `Invalid id: "${bad}"`);
  const visible = new Map(world.visibleInstances().map((i) => [i.id, i]));
  const absent = ids.filter((id) => !visible.has(id));
  if (absent.length === 1) throw new Ec2Error('InvalidInstanceID.NotFound', `The instance ID '${absent[0]}' does not exist`);
  if (absent.length) throw new Ec2Error('InvalidInstanceID.NotFound', `The instance IDs '${absent.join(', ')}' do not exist`);
  return [...new Set(ids)].map((id) => visible.get(id));
}

module.exports = { allow, int, bool, dryRun, getInstances, INSTANCE_ID };
