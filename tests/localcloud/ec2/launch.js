'use strict';
// What RunInstances and CreateFleet share: resolving a launch template version, merging it with the
// request (the request wins), validating the result and creating the instances.
const crypto = require('node:crypto');
const { Ec2Error, missing, invalid } = require('./errors');
const { Instance } = require('./instance');

const hex = (n) => crypto.randomBytes(Math.ceil(n / 2)).toString('hex').slice(0, n);
const newId = (prefix, n = 17) => `${prefix}-${hex(n)}`;

// Launch parameters a template may carry and a launch may override (query names).
const LAUNCH_FIELDS = ['ImageId', 'InstanceType', 'UserData', 'KeyName', 'SecurityGroupId', 'SecurityGroup',
  'TagSpecification', 'MetadataOptions', 'IamInstanceProfile', 'InstanceInitiatedShutdownBehavior',
  'InstanceMarketOptions', 'EbsOptimized', 'Monitoring', 'DisableApiTermination', 'BlockDeviceMapping',
  'CreditSpecification', 'Placement', 'InstanceRequirements'];

const TEMPLATE_ID = /^lt-[0-9a-f]{17}$/;

function findTemplate(world, spec) {
  const { LaunchTemplateId: id, LaunchTemplateName: name } = spec || {};
  if (id && name) throw new Ec2Error('InvalidParameterCombination', 'Specify either the launch template ID or the launch template name, not both.');
  let t;
  if (id) {
    if (!TEMPLATE_ID.test(id)) throw new Ec2Error('InvalidLaunchTemplateId.Malformed', `The specified ID for the launch template is malformed: ${id}`);
    t = world.templates.get(id);
    if (!t) throw new Ec2Error('InvalidLaunchTemplateId.NotFound', `The specified launch template, with template ID ${id}, does not exist.`);
  } else if (name) {
    t = world.templates.get(world.templateNames.get(name));
    if (!t) throw new Ec2Error('InvalidLaunchTemplateName.NotFoundException', `The specified launch template, with template name ${name}, does not exist.`);
  } else {
    throw missing('LaunchTemplateId or LaunchTemplateName');
  }
  return t;
}

function findVersion(t, v) {
  const n = v === undefined || v === '$Default' ? t.defaultVersion : v === '$Latest' ? t.versions.length : Number(v);
  const version = Number.isInteger(n) && n >= 1 ? t.versions[n - 1] : undefined;
  if (!version) throw new Ec2Error('InvalidLaunchTemplateId.VersionNotFound', `Could not find launch template version ${v} for template ${t.id}.`);
  return version;
}

const instanceTags = (specs) => (specs || []).filter((s) => s.ResourceType === 'instance').flatMap((s) => s.Tag || []);

// Template data merged with the request's launch fields; instance tags and MetadataOptions merge key by key.
function merge(data, req) {
  const out = { ...(data || {}) };
  for (const f of LAUNCH_FIELDS) if (req[f] !== undefined) out[f] = req[f];
  const tags = new Map();
  for (const t of [...instanceTags(data && data.TagSpecification), ...instanceTags(req.TagSpecification)]) tags.set(t.Key, t.Value);
  out.instanceTags = [...tags].map(([Key, Value]) => ({ Key, Value }));
  out.MetadataOptions = { ...((data && data.MetadataOptions) || {}), ...(req.MetadataOptions || {}) };
  return out;
}

const IMDS_TAG_KEY = /^[A-Za-z0-9+\-=._:@,]+$/;

// Validates user tags (Key/Value list) and returns a Map. `imdsTags`: keys must also suit instance metadata.
function validateTags(list, { imdsTags = false } = {}) {
  const m = new Map();
  for (const t of list || []) {
    const k = t.Key;
    if (k === undefined || k === '') throw missing('Tag.Key');
    if (k.length > 128) throw invalid('Tag.Key', k, 'Tag keys may be at most 128 characters long.');
    if (/^aws:/i.test(k)) throw new Ec2Error('InvalidParameterValue', `Value ( ${k} ) for parameter key is invalid. Tag keys starting with 'aws:' are reserved for internal use`);
    const v = t.Value === undefined ? '' : t.Value;
    if (v.length > 256) throw invalid('Tag.Value', v, 'Tag values may be at most 256 characters long.');
    if (imdsTags && (!IMDS_TAG_KEY.test(k) || k === '.' || k === '..' || k === '_index')) {
      throw new Ec2Error('InvalidParameterValue', `The tag key '${k}' is not allowed when tags in instance metadata are enabled.`);
    }
    m.set(k, v);
  }
  if (m.size > 50) throw new Ec2Error('TagLimitExceeded', 'The maximum number of tags for a resource is 50.');
  return m;
}

function decodeUserData(b64) {
  if (b64 === undefined || b64 === '') return null;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 === 1) {
    throw new Ec2Error('InvalidParameterValue', 'Invalid BASE64 encoding of user data.');
  }
  const buf = Buffer.from(b64, 'base64');
  if (buf.length > 16384) throw new Ec2Error('InvalidParameterValue', 'User data is limited to 16384 bytes');
  return buf;
}

function profileOf(world, p) {
  if (!p || (!p.Arn && !p.Name)) return null;
  if (p.Arn && !/^arn:aws[a-z-]*:iam::[0-9]{12}:instance-profile\/.+/.test(p.Arn)) {
    throw new Ec2Error('InvalidParameterValue', `Value (${p.Arn}) for parameter iamInstanceProfile.arn is invalid.`);
  }
  const name = p.Name || p.Arn.split('/').pop();
  const arn = p.Arn || `arn:aws:iam::${world.accountId}:instance-profile/${name}`;
  const id = 'AIPA' + crypto.createHash('sha256').update(arn).digest('hex').slice(0, 17).toUpperCase();
  return { arn, id, role: name }; // the local cloud's role is named after its instance profile
}

const zoneOfSubnet = (world, subnetId) =>
  world.region + 'abc'[crypto.createHash('sha256').update(subnetId).digest()[0] % 3];

// Where a launch lands: an explicit zone, else the subnet's zone, else the Placement zone, else <region>a.
function zoneFor(world, base, subnetId, az) {
  if (subnetId && !/^subnet-([0-9a-f]{8}|[0-9a-f]{17})$/.test(subnetId)) {
    throw new Ec2Error('InvalidSubnetID.Malformed', `Invalid id: "${subnetId}" (expecting "subnet-...")`);
  }
  return az || (subnetId ? zoneOfSubnet(world, subnetId) : base.az || world.region + 'a');
}

// EC2's own InsufficientInstanceCapacity answers (a server error: HTTP 500, which SDKs retry).
function capacityError(world, lifecycle, type, az) {
  return new Ec2Error('InsufficientInstanceCapacity', lifecycle === 'spot'
    ? 'There is no Spot capacity available that matches your request.'
    : `We currently do not have sufficient ${type} capacity in the Availability Zone you requested (${az}). ` +
      'Our system will be working on provisioning additional capacity.', 500);
}

// Validated, instance-independent parts of a launch from merged parameters.
function launchBase(world, eff) {
  if (!eff.ImageId) throw missing('ImageId');
  if (!/^ami-([0-9a-f]{8}|[0-9a-f]{17})$/.test(eff.ImageId)) {
    throw new Ec2Error('InvalidAMIID.Malformed', `Invalid id: "${eff.ImageId}" (expecting "ami-...")`);
  }
  const instanceType = eff.InstanceType || 'm1.small'; // EC2's own default
  if (!/^[a-z][a-z0-9-]*\.[a-z0-9-]+$/.test(instanceType)) {
    throw new Ec2Error('InvalidParameterValue', `Invalid value '${instanceType}' for InstanceType.`);
  }
  const mo = eff.MetadataOptions || {};
  const s = world.settings;
  const metadata = {
    httpTokens: mo.HttpTokens || 'required',
    httpPutResponseHopLimit: Number(mo.HttpPutResponseHopLimit || 2),
    httpEndpoint: mo.HttpEndpoint || 'enabled',
    instanceMetadataTags: mo.InstanceMetadataTags || s.defaultInstanceMetadataTags,
  };
  for (const [k, ok] of [['httpTokens', ['required', 'optional']], ['httpEndpoint', ['enabled', 'disabled']],
    ['instanceMetadataTags', ['enabled', 'disabled']]]) {
    if (!ok.includes(metadata[k])) throw invalid(`MetadataOptions.${k}`, metadata[k]);
  }
  const shutdownBehavior = eff.InstanceInitiatedShutdownBehavior || s.defaultShutdownBehavior;
  if (!['stop', 'terminate'].includes(shutdownBehavior)) throw invalid('InstanceInitiatedShutdownBehavior', shutdownBehavior);
  const market = eff.InstanceMarketOptions || {};
  if (market.MarketType && !['spot', 'capacity-block'].includes(market.MarketType)) throw invalid('InstanceMarketOptions.MarketType', market.MarketType);
  return {
    imageId: eff.ImageId, instanceType, metadata, shutdownBehavior,
    userData: decodeUserData(eff.UserData),
    tags: validateTags(eff.instanceTags, { imdsTags: metadata.instanceMetadataTags === 'enabled' }),
    profile: profileOf(world, eff.IamInstanceProfile),
    lifecycle: market.MarketType === 'spot' ? 'spot' : 'on-demand',
    interruptionBehavior: (market.SpotOptions && market.SpotOptions.InstanceInterruptionBehavior) || 'terminate',
    keyName: eff.KeyName, securityGroupIds: eff.SecurityGroupId || [],
    disableApiTermination: eff.DisableApiTermination === 'true',
    az: eff.Placement && eff.Placement.AvailabilityZone,
  };
}

// Creates `count` instances of one reservation. opts: { subnetId, az, clientToken, fleetId,
// systemTags (Map of aws:* tags), lifecycle, instanceType, imageId, requesterId }.
function createInstances(world, base, count, opts = {}) {
  const reservationId = newId('r');
  const instances = [];
  const subnetId = opts.subnetId;
  const az = zoneFor(world, base, subnetId, opts.az);
  world.reservations.set(reservationId, { id: reservationId, requesterId: opts.requesterId });
  for (let i = 0; i < count; i++) {
    const lifecycle = opts.lifecycle || base.lifecycle;
    const tags = new Map([...(opts.systemTags || []), ...base.tags]);
    const inst = new Instance(world, {
      ...base, id: newId('i'), reservationId, launchIndex: i, subnetId, az, lifecycle, tags,
      instanceType: opts.instanceType || base.instanceType, imageId: opts.imageId || base.imageId,
      clientToken: opts.clientToken, fleetId: opts.fleetId,
      spotRequestId: lifecycle === 'spot' ? `sir-${hex(8)}` : undefined,
    }, ++world.seq);
    world.instances.set(inst.id, inst);
    instances.push(inst);
  }
  world.log('info', `launched ${instances.map((x) => x.id).join(' ')} (${base.instanceType}, ${opts.lifecycle || base.lifecycle}, ${az})`);
  return instances;
}

// The launch template tags EC2 puts on instances launched from a template.
const templateTags = (t, v) => new Map([['aws:ec2launchtemplate:id', t.id], ['aws:ec2launchtemplate:version', String(v.number)]]);

module.exports = { LAUNCH_FIELDS, findTemplate, findVersion, merge, launchBase, createInstances, validateTags,
  decodeUserData, zoneFor, capacityError, templateTags, newId, hex };
