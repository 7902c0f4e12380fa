'use strict';
// Request counts of one AWS service's proxy per caller and operation, for benchmarks
// (`GET /_control/requests`): what runpoolctl (principal `controller`) and each instance's agent
// (`instance:<id>`) asked of the service. `/_control/stats` counts per operation only, so it cannot
// tell a provision's requests from the heartbeats of the instances running meanwhile.
// A request is counted once its signature is valid, injected faults included (as stats does).

class RequestCounts {
  constructor() { this.reset(); }
  record(principal, operation) {
    const ops = (this.byPrincipal[principal || 'unknown'] ||= {});
    ops[operation] = (ops[operation] || 0) + 1;
  }
  // { principal: { operation: count } }, a copy.
  snapshot() { return JSON.parse(JSON.stringify(this.byPrincipal)); }
  reset() { this.byPrincipal = {}; }
}

module.exports = { RequestCounts };
