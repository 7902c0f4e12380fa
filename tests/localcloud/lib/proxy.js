'use strict';
// The front door of one AWS service (dynamodb, sqs or ec2): every request must carry a valid
// SigV4 signature (lib/sigv4.js), may then be failed or slowed per the fault knobs (lib/faults.js)
// in the service's own error dialect (lib/awserrors.js), and is otherwise forwarded to the
// backend with the caller's identity in `x-localcloud-principal`, the answer streamed back.
const http = require('node:http');
const { verify } = require('./sigv4');
const { faultError, renderError } = require('./awserrors');
const { readBody, listenLocal, closeServer, createServer } = require('./httputil');
const { RequestCounts } = require('./requests');
const { holdsOf } = require('./hold');

const PRINCIPAL = 'x-localcloud-principal';
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade',
  'te', 'trailer', 'proxy-authorization', 'proxy-authenticate', 'expect']); // the body is already read

// 'json' (X-Amz-Target, JSON 1.0) or 'query' (form-encoded Action=...): decides the error dialect.
function protocolOf(service, headers) {
  if (service === 'dynamodb') return 'json';
  if (service === 'ec2') return 'query';
  return headers['x-amz-target'] ? 'json' : 'query';
}

// The operation name faults and stats are keyed by: the X-Amz-Target suffix, or the Action field.
function operationOf(protocol, req, body) {
  if (protocol === 'json') {
    const t = String(req.headers['x-amz-target'] || '');
    return t.slice(t.lastIndexOf('.') + 1) || '*';
  }
  const qi = req.url.indexOf('?');
  return new URLSearchParams(body.toString('utf8')).get('Action') ||
    (qi >= 0 && new URLSearchParams(req.url.slice(qi + 1)).get('Action')) || '*';
}

/**
 * createProxy({ service, region, credentials, faults, log, backend, recorder }) -> proxy
 *   proxy.listen() -> Promise<url>; proxy.url; proxy.backend (settable: 'http://127.0.0.1:P');
 *   proxy.authFailures: { code: count }; proxy.requests: RequestCounts (per principal and
 *   operation, signed requests only); proxy.close() -> Promise.
 *   recorder (lib/recorder.js, optional): every signed request is written to it with its answer's status.
 */
function createProxy({ service, region, credentials, faults, log = () => {}, backend = null, recorder = null }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const proxy = { service, backend, url: null, authFailures: {}, requests: new RequestCounts() };

  const reply = (res, protocol, err) => {
    const { status, headers, body } = renderError(service, protocol, err);
    headers['content-length'] = Buffer.byteLength(body);
    res.writeHead(status, headers);
    res.end(body);
  };

  // `gate` (lib/hold.js, when: 'after'): the answer is read whole and withheld until the test decides.
  function forward(req, res, body, principal, protocol, gate = null, rec = null) {
    const target = new URL(proxy.backend);
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && k !== PRINCIPAL) headers[k] = v;
    headers[PRINCIPAL] = principal;
    headers['content-length'] = String(body.length);
    let upstream = null;
    let clientGone = false;
    res.on('close', () => {
      if (res.writableFinished) return;
      clientGone = true; // never resend for a caller who left (e.g. an abandoned SQS long poll)
      upstream?.destroy();
    });
    const attempt = (retried) => {
      const up = upstream = http.request({ hostname: target.hostname, port: target.port, method: req.method,
        path: req.url, headers, agent }, (upRes) => {
        const out = {};
        for (const [k, v] of Object.entries(upRes.headers)) if (!HOP_BY_HOP.has(k)) out[k] = v;
        upRes.on('aborted', () => res.destroy());
        upRes.on('error', () => res.destroy());
        if (rec) upRes.on('data', (c) => rec.answer(c));
        if (!gate) {
          res.writeHead(upRes.statusCode, upRes.statusMessage, out);
          return upRes.pipe(res);
        }
        const chunks = [];
        upRes.on('data', (c) => chunks.push(c));
        upRes.on('end', () => gate.hold().then((d) => {
          if (d === 'drop' || res.destroyed) return res.destroy();
          res.writeHead(upRes.statusCode, upRes.statusMessage, out);
          res.end(Buffer.concat(chunks));
        }));
      });
      up.on('error', (err) => {
        if (clientGone) return;
        // A pooled connection the backend closed while idle: the body is buffered, so resend once.
        if (!retried && up.reusedSocket && err.code === 'ECONNRESET') return attempt(true);
        if (res.headersSent) return res.destroy();
        log('warn', `${service} proxy: backend ${proxy.backend} failed: ${err.message}`);
        reply(res, protocol, { ...faultError(service, { kind: 'error' }, '*'), status: 502,
          message: `backend unavailable: ${err.code || err.message}` });
      });
      up.end(body);
    };
    attempt(false);
  }

  async function handle(req, res) {
    const body = await readBody(req);
    const protocol = protocolOf(service, req.headers);
    const operation = operationOf(protocol, req, body);
    const v = await verify({ method: req.method, url: req.url, headers: req.headers, body },
      { service, region, credentials });
    if (!v.ok) {
      proxy.authFailures[v.code] = (proxy.authFailures[v.code] || 0) + 1;
      log('debug', `${service} ${operation}: rejected ${v.code}: ${v.message}`);
      return reply(res, protocol, v);
    }
    proxy.requests.record(v.principal, operation);
    const rec = recorder && await recorder.begin({ service, operation, protocol, principal: v.principal,
      userId: credentials.lookup(v.accessKeyId)?.userId, url: req.url, body, proxyUrl: proxy.url });
    if (rec) res.on('close', () => rec.end(res.headersSent ? res.statusCode : null));
    const gate = holdsOf(faults)?.gate({ service, identities: [v.principal, v.accessKeyId], operation, body });
    if (gate?.when === 'before' && await gate.hold() === 'drop') return res.destroy();
    const decision = faults.decide(service, operation);
    await faults.delay(service);
    if (decision) {
      log('debug', `${service} ${operation}: injected ${decision.kind}`);
      return reply(res, protocol, faultError(service, decision, operation));
    }
    if (!proxy.backend) return reply(res, protocol, faultError(service, { kind: 'retryAfter', seconds: 1 }, operation));
    forward(req, res, body, v.principal, protocol, gate?.when === 'after' ? gate : null, rec);
  }

  proxy.server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      log('error', `${service} proxy: ${err.stack || err}`);
      if (res.headersSent) return res.destroy();
      reply(res, protocolOf(service, req.headers), { ...faultError(service, { kind: 'error' }, '*'),
        status: err.status || 500, message: err.message });
    });
  });
  proxy.listen = async () => (proxy.url = await listenLocal(proxy.server));
  proxy.close = async () => { await closeServer(proxy.server); agent.destroy(); };
  return proxy;
}

module.exports = { createProxy, operationOf, protocolOf, PRINCIPAL };
