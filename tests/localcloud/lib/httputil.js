'use strict';
// Small HTTP helpers shared by the proxy and the control API.
const http = require('node:http');

// Resolves with the whole request body as a Buffer; rejects (err.status = 413) past `limit` bytes.
function readBody(req, limit = 16 * 1024 * 1024) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > limit) {
        reject(Object.assign(new Error(`request body over ${limit} bytes`), { status: 413 }));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

// Listens on 127.0.0.1, an OS-chosen port; resolves with 'http://127.0.0.1:P'.
function listenLocal(server) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(`http://127.0.0.1:${server.address().port}`);
    });
  });
}

// Closes a server and drops its idle keep-alive connections so close() does not wait on them.
function closeServer(server) {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeIdleConnections?.();
    setTimeout(() => server.closeAllConnections?.(), 200).unref();
  });
}

// Keep-alive server settings: longer than typical client idle pools so a reused connection is
// rarely closed under a client's feet (the C++ clients reuse connections).
function keepAlive(server) {
  server.keepAliveTimeout = 30_000;
  server.headersTimeout = 31_000;
  return server;
}

const createServer = (handler) => keepAlive(http.createServer(handler));

module.exports = { readBody, sendJson, listenLocal, closeServer, keepAlive, createServer };
