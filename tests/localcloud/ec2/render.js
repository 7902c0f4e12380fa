'use strict';
// Model -> the XML shapes of the EC2 API (element names as in the 2016-11-15 schema).
const { STATE_CODES } = require('./instance');

const state = (name) => ({ code: STATE_CODES[name], name });
const tagSet = (tags) => (tags.size ? [...tags].map(([key, value]) => ({ key, value })) : undefined);

function instanceXml(inst) {
  const gone = inst.state === 'terminated';
  return {
    instanceId: inst.id,
    imageId: inst.imageId,
    instanceState: state(inst.state),
    privateDnsName: gone ? '' : inst.privateDnsName(),
    dnsName: '',
    reason: inst.transitionReason,
    keyName: inst.keyName,
    amiLaunchIndex: inst.launchIndex,
    productCodes: [],
    instanceType: inst.instanceType,
    launchTime: inst.launchTime,
    placement: { availabilityZone: inst.az, groupName: '', tenancy: 'default' },
    monitoring: { state: 'disabled' },
    subnetId: gone ? undefined : inst.subnetId,
    privateIpAddress: gone ? undefined : '127.0.0.1',
    groupSet: (inst.securityGroupIds || []).map((groupId) => ({ groupId })),
    stateReason: inst.stateReason || undefined,
    architecture: inst.world.arch,
    rootDeviceType: 'ebs',
    rootDeviceName: '/dev/xvda',
    blockDeviceMapping: [],
    instanceLifecycle: inst.lifecycle === 'spot' ? 'spot' : undefined,
    spotInstanceRequestId: inst.spotRequestId,
    virtualizationType: 'hvm',
    clientToken: inst.clientToken || '',
    tagSet: tagSet(inst.tags),
    hypervisor: 'xen',
    iamInstanceProfile: inst.profile ? { arn: inst.profile.arn, id: inst.profile.id } : undefined,
    ebsOptimized: false,
    enaSupport: true,
    metadataOptions: { state: 'applied', ...inst.metadata, httpProtocolIpv6: 'disabled' },
    platformDetails: 'Linux/UNIX',
  };
}

// Consecutive instances of one reservation form one <item> of reservationSet.
function reservationsXml(world, instances) {
  const out = [];
  for (const inst of instances) {
    const last = out[out.length - 1];
    if (last && last.reservationId === inst.reservationId) { last.instancesSet.push(instanceXml(inst)); continue; }
    const r = world.reservations.get(inst.reservationId);
    out.push({ reservationId: inst.reservationId, ownerId: world.accountId, requesterId: r && r.requesterId,
      groupSet: [], instancesSet: [instanceXml(inst)] });
  }
  return out;
}

// Query-shaped data (what CreateLaunchTemplate received) -> response elements: lowerCamel names,
// lists named <x>Set, with the few irregular names of the schema.
const LIST_NAMES = { LicenseSpecification: 'licenseSet', Tag: 'tagSet' };
const lc = (s) => s[0].toLowerCase() + s.slice(1);
function echo(v) {
  if (Array.isArray(v)) return v.map(echo);
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[Array.isArray(x) ? (LIST_NAMES[k] || lc(k) + 'Set') : lc(k)] = echo(x);
    return out;
  }
  return v;
}

function templateXml(world, t) {
  return { createTime: t.createTime, createdBy: world.createdBy, defaultVersionNumber: t.defaultVersion,
    latestVersionNumber: t.versions.length, launchTemplateId: t.id, launchTemplateName: t.name, tagSet: tagSet(t.tags) };
}

function versionXml(world, t, v) {
  return { createTime: v.createTime, createdBy: world.createdBy, defaultVersion: v.number === t.defaultVersion,
    launchTemplateData: echo(v.data), launchTemplateId: t.id, launchTemplateName: t.name,
    versionDescription: v.description, versionNumber: v.number };
}

module.exports = { instanceXml, reservationsXml, templateXml, versionXml, state };
