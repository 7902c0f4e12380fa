'use strict';
// The EC2 query protocol's parameters: a flat form (`Filter.1.Value.2=x`) turned into nested objects
// and 1-based lists ({ Filter: [{ Value: [ , 'x'] }] } compacted to dense arrays in index order).
const { Ec2Error } = require('./errors');

function parseForm(text) {
  const flat = {};
  for (const [k, v] of new URLSearchParams(text)) flat[k] = v;
  return flat;
}

// Builds the nested structure. A numeric segment makes its parent a list; a key used both as a leaf
// and as a parent (`A=1&A.B=2`) is rejected, as EC2 would not understand it either.
function nest(flat) {
  const root = {};
  for (const [key, value] of Object.entries(flat)) {
    const parts = key.split('.');
    let node = root;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      const last = i === parts.length - 1;
      const numeric = /^[1-9][0-9]*$/.test(part);
      if (numeric && !(node instanceof Map)) throw bad(key);
      const get = (k) => (node instanceof Map ? node.get(k) : node[k]);
      const set = (k, v) => (node instanceof Map ? node.set(k, v) : (node[k] = v));
      const k = numeric ? Number(part) : part;
      if (last) {
        if (get(k) !== undefined) throw bad(key);
        set(k, value);
        break;
      }
      const nextNumeric = /^[1-9][0-9]*$/.test(parts[i + 1]);
      let child = get(k);
      if (child === undefined) { child = nextNumeric ? new Map() : {}; set(k, child); }
      if (typeof child === 'string' || (child instanceof Map) !== nextNumeric) throw bad(key);
      node = child;
    }
  }
  return densify(root);
}

function densify(node) {
  if (node instanceof Map) return [...node.keys()].sort((a, b) => a - b).map((k) => densify(node.get(k)));
  if (node && typeof node === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(node)) out[k] = densify(v);
    return out;
  }
  return node;
}

function bad(key) {
  return new Ec2Error('InvalidParameter', `The parameter ${key} is not valid in this position`);
}

module.exports = { parseForm, nest };
