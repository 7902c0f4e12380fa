'use strict';
// Launch templates: CreateLaunchTemplate, CreateLaunchTemplateVersion, ModifyLaunchTemplate,
// DescribeLaunchTemplates, DescribeLaunchTemplateVersions.
const { Ec2Error, missing, invalid } = require('../errors');
const { allow, dryRun } = require('./common');
const L = require('../launch');
const { templateXml, versionXml } = require('../render');
const { matcher, paginate } = require('../filters');

const NAME = /^[a-zA-Z0-9().\-/_]{3,128}$/;

function checkData(data) {
  if (!data || typeof data !== 'object') throw missing('LaunchTemplateData');
  for (const k of Object.keys(data)) {
    if (!L.LAUNCH_FIELDS.includes(k)) throw new Ec2Error('UnknownParameter', `The parameter LaunchTemplateData.${k} is not recognized by the local EC2 stand-in.`);
  }
  L.decodeUserData(data.UserData);
  L.validateTags(data.TagSpecification && data.TagSpecification.flatMap((s) => s.Tag || []));
  return data;
}

function templateTags(specs) {
  return L.validateTags((specs || []).filter((s) => s.ResourceType === 'launch-template').flatMap((s) => s.Tag || []));
}

function CreateLaunchTemplate(world, p) {
  allow(p, ['LaunchTemplateName', 'LaunchTemplateData', 'VersionDescription', 'ClientToken', 'TagSpecification', 'DryRun']);
  const name = p.LaunchTemplateName;
  if (!name) throw missing('LaunchTemplateName');
  if (!NAME.test(name)) throw new Ec2Error('InvalidLaunchTemplateName.MalformedException', `The launch template name '${name}' is malformed.`);
  const data = checkData(p.LaunchTemplateData);
  const tags = templateTags(p.TagSpecification);
  dryRun(p);
  return world.idempotent('CreateLaunchTemplate', p.ClientToken, p, () => {
    if (world.templateNames.has(name)) {
      throw new Ec2Error('InvalidLaunchTemplateName.AlreadyExistsException', `Launch template name already in use.`);
    }
    const now = new Date();
    const t = { id: L.newId('lt'), name, createTime: now, defaultVersion: 1, tags, seq: ++world.seq,
      versions: [{ number: 1, data, description: p.VersionDescription, createTime: now }] };
    world.templates.set(t.id, t);
    world.templateNames.set(name, t.id);
    return () => ({ launchTemplate: templateXml(world, t) });
  });
}

function CreateLaunchTemplateVersion(world, p) {
  allow(p, ['LaunchTemplateId', 'LaunchTemplateName', 'SourceVersion', 'VersionDescription', 'LaunchTemplateData',
    'ClientToken', 'ResolveAlias', 'DryRun']);
  const t = L.findTemplate(world, p);
  const given = checkData(p.LaunchTemplateData);
  // A version made from a source inherits its parameters except those given here.
  const data = p.SourceVersion !== undefined ? { ...L.findVersion(t, p.SourceVersion).data, ...given } : given;
  dryRun(p);
  return world.idempotent('CreateLaunchTemplateVersion', p.ClientToken, p, () => {
    const v = { number: t.versions.length + 1, data, description: p.VersionDescription, createTime: new Date() };
    t.versions.push(v);
    return () => ({ launchTemplateVersion: versionXml(world, t, v) });
  });
}

function ModifyLaunchTemplate(world, p) {
  allow(p, ['LaunchTemplateId', 'LaunchTemplateName', 'SetDefaultVersion', 'ClientToken', 'DryRun']);
  const t = L.findTemplate(world, p);
  if (p.SetDefaultVersion !== undefined) {
    const v = L.findVersion(t, p.SetDefaultVersion);
    dryRun(p);
    t.defaultVersion = v.number;
  } else dryRun(p);
  return { launchTemplate: templateXml(world, t) };
}

function DescribeLaunchTemplates(world, p) {
  allow(p, ['LaunchTemplateId', 'LaunchTemplateName', 'Filter', 'MaxResults', 'NextToken', 'DryRun']);
  dryRun(p);
  let pool = [...world.templates.values()];
  if (p.LaunchTemplateId || p.LaunchTemplateName) {
    const want = [...(p.LaunchTemplateId || []).map((id) => L.findTemplate(world, { LaunchTemplateId: id })),
      ...(p.LaunchTemplateName || []).map((n) => L.findTemplate(world, { LaunchTemplateName: n }))];
    pool = pool.filter((t) => want.includes(t));
  }
  const match = matcher(p.Filter, { 'launch-template-name': (t) => t.name }, (t) => t.tags);
  const { page, nextToken } = paginate(pool.filter(match), { scope: 'DescribeLaunchTemplates', maxResults: p.MaxResults,
    nextToken: p.NextToken, min: 1, max: 200 });
  return { launchTemplates: page.map((t) => templateXml(world, t)), nextToken };
}

function DescribeLaunchTemplateVersions(world, p) {
  allow(p, ['LaunchTemplateId', 'LaunchTemplateName', 'LaunchTemplateVersion', 'MinVersion', 'MaxVersion', 'Filter',
    'MaxResults', 'NextToken', 'ResolveAlias', 'DryRun']);
  const t = L.findTemplate(world, p);
  dryRun(p);
  let versions;
  if (p.LaunchTemplateVersion) {
    versions = [...new Set(p.LaunchTemplateVersion.map((v) => L.findVersion(t, v)))].sort((a, b) => a.number - b.number);
  } else {
    const lo = p.MinVersion === undefined ? 1 : Number(p.MinVersion);
    const hi = p.MaxVersion === undefined ? Infinity : Number(p.MaxVersion);
    if (!Number.isInteger(lo)) throw invalid('MinVersion', p.MinVersion);
    if (hi !== Infinity && !Number.isInteger(hi)) throw invalid('MaxVersion', p.MaxVersion);
    versions = t.versions.filter((v) => v.number >= lo && v.number <= hi);
  }
  const match = matcher(p.Filter, {
    'is-default-version': (v) => String(v.number === t.defaultVersion),
    'image-id': (v) => v.data.ImageId,
    'instance-type': (v) => v.data.InstanceType,
  }, () => new Map());
  const items = versions.filter(match).map((v) => ({ v, seq: v.number }));
  const { page, nextToken } = paginate(items, { scope: `DescribeLaunchTemplateVersions:${t.id}`, maxResults: p.MaxResults,
    nextToken: p.NextToken, min: 1, max: 200 });
  return { launchTemplateVersionSet: page.map(({ v }) => versionXml(world, t, v)), nextToken };
}

module.exports = { CreateLaunchTemplate, CreateLaunchTemplateVersion, ModifyLaunchTemplate, DescribeLaunchTemplates,
  DescribeLaunchTemplateVersions };
