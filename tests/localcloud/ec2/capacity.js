'use strict';
// Injected capacity: per instance type, usage class ('spot'|'on-demand') and optionally availability
// zone, whether launches succeed. `available` is true (unlimited, the default), false (none), or a
// number of instances still launchable from that pool (each launch uses some up).
class Capacity {
  constructor() { this.rules = new Map(); }
  key(type, usage, zone) { return `${type}|${usage}|${zone || '*'}`; }

  set({ instanceType, usageClass, availabilityZone, available }) {
    if (typeof instanceType !== 'string' || !instanceType) throw new Error('instanceType (string) is required');
    if (usageClass !== 'spot' && usageClass !== 'on-demand') throw new Error("usageClass must be 'spot' or 'on-demand'");
    const ok = typeof available === 'boolean' || (Number.isInteger(available) && available >= 0);
    if (!ok) throw new Error('available must be true, false or an integer >= 0');
    if (availabilityZone !== undefined && typeof availabilityZone !== 'string') throw new Error('availabilityZone must be a string');
    this.rules.set(this.key(instanceType, usageClass, availabilityZone), available);
  }

  reset() { this.rules.clear(); }

  list() {
    return [...this.rules].map(([k, available]) => {
      const [instanceType, usageClass, zone] = k.split('|');
      return { instanceType, usageClass, availabilityZone: zone === '*' ? undefined : zone, available };
    });
  }

  // Grants up to `n` instances from the pool and returns how many; a zone rule wins over a '*' rule.
  take(type, usage, zone, n) {
    let k = this.key(type, usage, zone);
    if (!this.rules.has(k)) k = this.key(type, usage);
    const a = this.rules.has(k) ? this.rules.get(k) : true;
    if (a === true) return n;
    if (a === false) return 0;
    const got = Math.min(a, n);
    this.rules.set(k, a - got);
    return got;
  }

  // Gives back instances granted but not launched (RunInstances below MinCount launches none).
  giveBack(type, usage, zone, n) {
    let k = this.key(type, usage, zone);
    if (!this.rules.has(k)) k = this.key(type, usage);
    const a = this.rules.get(k);
    if (typeof a === 'number') this.rules.set(k, a + n);
  }
}

module.exports = { Capacity };
