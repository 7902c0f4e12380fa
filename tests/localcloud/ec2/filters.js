'use strict';
// Describe* filters (Filter.N.Name / Filter.N.Value.M: values of one filter OR'ed, filters AND'ed,
// `*` and `?` wildcards) and NextToken pagination over a stable order.
const { Ec2Error } = require('./errors');
const { glob } = require('./catalog');

// getters: { filterName: (item) => value | value[] | undefined }; tags: (item) => Map of the item's tags.
function matcher(filters, getters, tags) {
  const checks = (filters || []).map((f) => {
    const name = f.Name;
    const values = (f.Value || []).map(glob);
    if (!name) throw new Ec2Error('InvalidParameterValue', 'The filter name must not be empty');
    let get;
    if (name.startsWith('tag:')) { const k = name.slice(4); get = (it) => tags(it).get(k); }
    else if (name === 'tag-key') get = (it) => [...tags(it).keys()];
    else if (name === 'tag-value') get = (it) => [...tags(it).values()];
    else if (getters[name]) get = getters[name];
    else throw new Ec2Error('InvalidParameterValue', `The filter '${name}' is invalid`);
    return (it) => {
      const v = get(it);
      const vs = (Array.isArray(v) ? v : [v]).filter((x) => x !== undefined && x !== null).map(String);
      return vs.some((x) => values.some((g) => g.test(x)));
    };
  });
  return (it) => checks.every((c) => c(it));
}

const encode = (scope, key) => Buffer.from(JSON.stringify({ s: scope, k: key })).toString('base64');

// items in a stable order, each with a numeric `seq`; returns { page, nextToken }.
function paginate(items, { scope, maxResults, nextToken, min = 5, max = 1000 }) {
  let start = 0;
  if (nextToken !== undefined) {
    let t;
    try { t = JSON.parse(Buffer.from(nextToken, 'base64').toString()); } catch { t = null; }
    if (!t || t.s !== scope || !Number.isInteger(t.k)) {
      throw new Ec2Error('InvalidPaginationToken', 'The specified pagination token is not valid or is expired.');
    }
    start = items.findIndex((it) => it.seq > t.k);
    if (start < 0) start = items.length;
  }
  if (maxResults === undefined) return { page: items.slice(start), nextToken: undefined };
  const n = Number(maxResults);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Ec2Error('InvalidParameterValue', `Value ( ${maxResults} ) for parameter maxResults is invalid. Expecting a value between ${min} and ${max}.`);
  }
  const page = items.slice(start, start + n);
  const more = start + n < items.length;
  return { page, nextToken: more ? encode(scope, page[page.length - 1].seq) : undefined };
}

module.exports = { matcher, paginate };
