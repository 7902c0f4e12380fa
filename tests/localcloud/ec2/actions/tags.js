'use strict';
// CreateTags / DeleteTags on instances, launch templates and fleets.
const { Ec2Error, missing } = require('../errors');
const { allow, dryRun, getInstances, INSTANCE_ID } = require('./common');
const { validateTags } = require('../launch');

// Resolves every resource first, so that a bad id changes nothing (EC2 fails the whole call).
function resources(world, ctx, ids) {
  if (!ids || !ids.length) throw missing('ResourceId');
  return ids.map((id) => {
    if (id.startsWith('i-')) {
      const inst = getInstances(world, [id])[0];
      world.authorizeInstance(ctx, inst.id);
      return inst;
    }
    world.authorizeInstance(ctx, null);
    if (id.startsWith('lt-')) {
      const t = world.templates.get(id);
      if (!t) throw new Ec2Error('InvalidLaunchTemplateId.NotFound', `The specified launch template, with template ID ${id}, does not exist.`);
      return t;
    }
    if (id.startsWith('fleet-')) {
      const f = world.fleets.get(id);
      if (!f) throw new Ec2Error('InvalidFleetId.NotFound', `The fleet ID '${id}' does not exist`);
      return f;
    }
    throw new Ec2Error('InvalidID', `The ID '${id}' is not valid`);
  });
}

function CreateTags(world, p, ctx) {
  allow(p, ['ResourceId', 'Tag', 'DryRun']);
  if (!p.Tag || !p.Tag.length) throw missing('Tag');
  const targets = resources(world, ctx, p.ResourceId);
  for (const r of targets) {
    const imds = !!r.metadata && r.metadata.instanceMetadataTags === 'enabled' && INSTANCE_ID.test(r.id);
    const add = validateTags(p.Tag, { imdsTags: imds });
    const user = [...r.tags.keys()].filter((k) => !k.startsWith('aws:'));
    if (new Set([...user, ...add.keys()]).size > 50) throw new Ec2Error('TagLimitExceeded', 'The maximum number of tags for a resource is 50.');
  }
  dryRun(p);
  for (const r of targets) for (const [k, v] of validateTags(p.Tag)) r.tags.set(k, v);
  return { return: true };
}

// Tag.N.Key alone deletes the key; with Tag.N.Value only when the value matches (an empty Value
// matches only an empty value). No Tag at all deletes every user tag.
function DeleteTags(world, p, ctx) {
  allow(p, ['ResourceId', 'Tag', 'DryRun']);
  const targets = resources(world, ctx, p.ResourceId);
  for (const t of p.Tag || []) {
    if (!t.Key) throw missing('Tag.Key');
    if (/^aws:/i.test(t.Key)) throw new Ec2Error('InvalidParameterValue', `Value ( ${t.Key} ) for parameter key is invalid. Tag keys starting with 'aws:' are reserved for internal use`);
  }
  dryRun(p);
  for (const r of targets) {
    if (!p.Tag) { for (const k of [...r.tags.keys()]) if (!k.startsWith('aws:')) r.tags.delete(k); continue; }
    for (const t of p.Tag) {
      if (t.Value === undefined || r.tags.get(t.Key) === t.Value) r.tags.delete(t.Key);
    }
  }
  return { return: true };
}

module.exports = { CreateTags, DeleteTags };
