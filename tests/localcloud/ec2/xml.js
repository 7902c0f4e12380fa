'use strict';
// Writes EC2-style XML from plain values: an object is an element per key, an array a list of
// <item> children, a primitive a text element; undefined/null members are left out.
const crypto = require('node:crypto');

const NS = 'http://ec2.amazonaws.com/doc/2016-11-15/';

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' }[c]));
}

function el(name, value) {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) {
    return value.length ? `<${name}>${value.map((v) => el('item', v)).join('')}</${name}>` : `<${name}/>`;
  }
  if (value instanceof Date) return `<${name}>${value.toISOString()}</${name}>`;
  if (typeof value === 'object') {
    return `<${name}>${Object.entries(value).map(([k, v]) => el(k, v)).join('')}</${name}>`;
  }
  return `<${name}>${esc(value)}</${name}>`;
}

const requestId = () => crypto.randomUUID();

function response(action, body, id = requestId()) {
  const inner = Object.entries(body).map(([k, v]) => el(k, v)).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${NS}"><requestId>${id}</requestId>${inner}</${action}Response>`;
}

function errorResponse(code, message, id = requestId()) {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${esc(code)}</Code>` +
    `<Message>${esc(message)}</Message></Error></Errors><RequestID>${id}</RequestID></Response>`;
}

module.exports = { el, esc, response, errorResponse, NS };
