'use strict';
// The one credential store of the local cloud: the controller's static keys and the temporary
// role credentials each instance's IMDS hands out. The SigV4 proxy looks keys up here.
const crypto = require('node:crypto');

// The account every service of the local cloud answers for, and the unique id of the one instance
// role whose credentials IMDS hands out: AWS gives such a request `aws:userid` =
// "<role id>:<instance id>", which the instance policy binds the agent's item to.
const ACCOUNT_ID = '000000000000';
const INSTANCE_ROLE_ID = 'AROA4LOCALCLOUDAGENT1';

class CredentialStore {
  constructor() {
    this.accountId = ACCOUNT_ID;
    this.instanceRoleId = INSTANCE_ROLE_ID;
    this.byKey = new Map();
    this.controller = this.add({ principal: 'controller', accessKeyId: 'AKIDLOCALCLOUDCTRL01',
      secretAccessKey: crypto.randomBytes(30).toString('base64') });
  }
  add(c) { this.byKey.set(c.accessKeyId, { ...c }); return this.byKey.get(c.accessKeyId); }
  // Temporary credentials for an instance role; `ttlMs` lets tests force early expiry.
  issueForInstance(instanceId, ttlMs = 6 * 3600 * 1000) {
    return this.add({
      principal: `instance:${instanceId}`,
      userId: `${INSTANCE_ROLE_ID}:${instanceId}`,
      accessKeyId: 'ASIA' + crypto.randomBytes(8).toString('hex').toUpperCase(),
      secretAccessKey: crypto.randomBytes(30).toString('base64'),
      sessionToken: crypto.randomBytes(48).toString('base64'),
      expiration: new Date(Date.now() + ttlMs),
    });
  }
  lookup(accessKeyId) { return this.byKey.get(accessKeyId); }
  revokeInstance(instanceId) {
    for (const [k, c] of this.byKey) if (c.principal === `instance:${instanceId}`) this.byKey.delete(k);
  }
}
module.exports = { CredentialStore, ACCOUNT_ID, INSTANCE_ROLE_ID };
