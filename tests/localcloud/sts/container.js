'use strict';
// A container credentials endpoint, as ECS's agent and EKS Pod Identity's serve one: GET the
// task's path, with `Authorization: <token>` when the task was given one, answers
// {AccessKeyId, SecretAccessKey, Token, Expiration, RoleArn} (the controller's role session,
// issued into the CredentialStore so the SigV4 proxies accept it); an unknown path answers 404, a
// missing or wrong token 401, each with {Code, Message}.
// Tests make a task (never part of the real endpoint):
//   POST /_localcloud/tasks {ttlMs?, token?: bool} -> {path, url, authorizationToken}
const crypto = require('node:crypto');
const { readBody, listenLocal, closeServer, createServer, sendJson } = require('../lib/httputil');
const { CONTROLLER_ROLE } = require('./index');

const iso = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** createContainerCredentials({ credentials, log }) -> Promise<{ url, addTask(opts), stats, close() }> */
async function createContainerCredentials({ credentials, log = () => {} }) {
  const tasks = new Map(); // path -> { token, ttlMs }
  const stats = { served: 0, refused: 0 };

  function addTask({ ttlMs = 6 * 3600 * 1000, token = true } = {}) {
    const path = `/v2/credentials/${crypto.randomUUID()}`;
    const task = { token: token ? crypto.randomBytes(24).toString('base64url') : null, ttlMs };
    tasks.set(path, task);
    return { path, authorizationToken: task.token };
  }

  async function handle(req, res) {
    const body = await readBody(req, 64 * 1024);
    if (req.method === 'POST' && req.url === '/_localcloud/tasks') {
      let opts;
      try { opts = body.length ? JSON.parse(body.toString('utf8')) : {}; } catch { opts = null; }
      if (!opts || typeof opts !== 'object' || (opts.ttlMs !== undefined && !(Number.isFinite(opts.ttlMs) && opts.ttlMs > 0))) {
        return sendJson(res, 400, { error: 'body must be {ttlMs?: number > 0, token?: boolean}' });
      }
      const t = addTask(opts);
      return sendJson(res, 200, { ...t, url: `${server.url}${t.path}` });
    }
    if (req.method === 'GET' && req.url === '/_localcloud/stats') return sendJson(res, 200, stats);
    const task = req.method === 'GET' ? tasks.get(req.url) : undefined;
    if (!task) {
      stats.refused++;
      return sendJson(res, 404, { Code: 'NotFound', Message: 'No credentials for this path' });
    }
    if (task.token !== null && req.headers.authorization !== task.token) {
      stats.refused++;
      return sendJson(res, 401, { Code: 'AccessDenied', Message: 'The authorization token is missing or wrong' });
    }
    const session = `task-${crypto.randomBytes(4).toString('hex')}`;
    const c = credentials.add({ principal: 'controller', userId: `${CONTROLLER_ROLE.id}:${session}`,
      accessKeyId: 'ASIA' + crypto.randomBytes(8).toString('hex').toUpperCase(),
      secretAccessKey: crypto.randomBytes(30).toString('base64'), sessionToken: crypto.randomBytes(64).toString('base64'),
      expiration: new Date(Date.now() + task.ttlMs) });
    stats.served++;
    log('debug', `container credentials: ${c.accessKeyId} for ${req.url}`);
    return sendJson(res, 200, { RoleArn: `arn:aws:iam::${credentials.accountId}:role/${CONTROLLER_ROLE.name}`,
      AccessKeyId: c.accessKeyId, SecretAccessKey: c.secretAccessKey, Token: c.sessionToken,
      Expiration: iso(c.expiration.getTime()) });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      log('error', `container credentials: ${err.stack || err}`);
      if (res.headersSent) return res.destroy();
      sendJson(res, 500, { Code: 'InternalError', Message: 'internal error' });
    });
  });
  server.url = await listenLocal(server);
  return { url: server.url, addTask, stats, close: () => closeServer(server) };
}

module.exports = { createContainerCredentials };
