'use strict';
// A few real instance types (vCPUs, memory) so that fleet overrides with InstanceRequirements can be
// resolved to concrete types. Ordered smallest first, which stands in for "lowest price".
const TYPES = [
  ['t3.micro', 2, 1024], ['t3.small', 2, 2048], ['t3.medium', 2, 4096], ['c5.large', 2, 4096],
  ['c6i.large', 2, 4096], ['c7i.large', 2, 4096], ['t3.large', 2, 8192], ['m5.large', 2, 8192],
  ['m6i.large', 2, 8192], ['m7i.large', 2, 8192], ['r5.large', 2, 16384], ['c5.xlarge', 4, 8192],
  ['c6i.xlarge', 4, 8192], ['t3.xlarge', 4, 16384], ['m5.xlarge', 4, 16384], ['m6i.xlarge', 4, 16384],
  ['c5.2xlarge', 8, 16384], ['m5.2xlarge', 8, 32768], ['m6i.2xlarge', 8, 32768],
].map(([name, vcpu, memMiB]) => ({ name, vcpu, memMiB }));

function glob(p) {
  return new RegExp('^' + p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$');
}

const inRange = (v, r) => !r || ((r.Min === undefined || v >= Number(r.Min)) && (r.Max === undefined || v <= Number(r.Max)));

// `req` is the query-shaped InstanceRequirements ({ VCpuCount: {Min,Max}, MemoryMiB: {...},
// AllowedInstanceType: [...], ExcludedInstanceType: [...] }); other criteria are not modelled.
function matchRequirements(req) {
  const allowed = (req.AllowedInstanceType || []).map(glob);
  const excluded = (req.ExcludedInstanceType || []).map(glob);
  return TYPES.filter((t) => inRange(t.vcpu, req.VCpuCount) && inRange(t.memMiB, req.MemoryMiB) &&
    (!allowed.length || allowed.some((g) => g.test(t.name))) && !excluded.some((g) => g.test(t.name)))
    .map((t) => t.name);
}

module.exports = { TYPES, matchRequirements, glob };
