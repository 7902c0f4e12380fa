'use strict';
// The request recorder (`localcloud.js --record-requests FILE`): one JSON line per signed AWS
// request the proxies accept, appended to FILE, for the IAM tier (tests/localcloud/iam/), which
// evaluates each against runpool's IAM policies. A line holds what AWS would authorise the request
// by: the service and operation, the caller (its principal and the `aws:userid` its credentials
// carry), the decoded request (JSON for the JSON protocols, form fields for the query protocol),
// the queue URL of an SQS request, and where IAM looks at resources the request does not describe —
// the tags of the EC2 instances it names and of the instance that calls — what the EC2 stand-in
// holds when the request arrives. It also has the answer's HTTP status and, for the EC2 calls that
// create launch templates or instances, their ids from the answer.
//
// Each line is one write(2) to a file opened with O_APPEND, so several local clouds (one test
// binary may start several) can share a file without interleaving; `cloud` (the state directory)
// tells whose resources a line speaks of. Bulky or secret-bearing fields that no IAM decision
// reads (user-data, message bodies) are replaced by their length.
const fs = require('node:fs');

const REDACTED_FIELDS = /(^|\.)(UserData|MessageBody)$/;
// EC2 answers whose ids the evaluator needs: launch templates (referred to by id later) and the
// instances a launch made.
const CAPTURE_ANSWER = new Set(['RunInstances', 'CreateFleet', 'CreateLaunchTemplate']);

function redactJson(v, key = '') {
  if (typeof v === 'string') return REDACTED_FIELDS.test(key) ? `<${Buffer.byteLength(v)} bytes>` : v;
  if (Array.isArray(v)) return v.map((x) => redactJson(x, key));
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = redactJson(x, k);
    return out;
  }
  return v;
}

// The request as the service reads it: the JSON document, or the form fields (the query string's
// first, then the body's, as the stand-ins read them).
function decodeRequest(protocol, url, body) {
  const text = body.toString('utf8');
  if (protocol === 'json') {
    try { return redactJson(text ? JSON.parse(text) : {}); } catch { return { '<unparsed>': text.length }; }
  }
  const fields = {};
  const qi = url.indexOf('?');
  for (const params of [qi >= 0 ? url.slice(qi + 1) : '', text]) {
    for (const [k, v] of new URLSearchParams(params)) fields[k] = REDACTED_FIELDS.test(k) ? `<${Buffer.byteLength(v)} bytes>` : v;
  }
  return fields;
}

// Instance ids a request names: InstanceId.N (TerminateInstances, DescribeInstances…) and i-…
// resources of CreateTags/DeleteTags.
function namedInstances(request) {
  const ids = new Set();
  for (const [k, v] of Object.entries(request)) {
    if (typeof v !== 'string') continue;
    if (/^InstanceId(\.\d+)?$/.test(k) || (/^ResourceId(\.\d+)?$/.test(k) && v.startsWith('i-'))) ids.add(v);
  }
  return [...ids];
}

function answerIds(text) {
  const all = (tag) => [...new Set([...text.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((m) => m[1]))];
  const out = {};
  for (const [tag, key] of [['instanceId', 'instanceIds'], ['launchTemplateId', 'launchTemplateIds'],
    ['launchTemplateName', 'launchTemplateNames']]) {
    const v = all(tag);
    if (v.length) out[key] = v;
  }
  return out;
}

/**
 * createRecorder({ file, cloud, region, accountId, instanceRoleId, instanceTags }) -> recorder
 *   instanceTags(id) -> Promise<{tags, type} | null>: what the EC2 stand-in holds for an instance.
 *   recorder.begin({ service, operation, protocol, principal, userId, url, body, proxyUrl })
 *     -> Promise<handle>; handle.answer(chunk) (optional) and handle.end(status) write the line.
 *   recorder.close().
 */
function createRecorder({ file, cloud, region, accountId, instanceRoleId, instanceTags = async () => null }) {
  const fd = fs.openSync(file, 'a');
  let closed = false;
  let seq = 0;
  const callerTags = new Map(); // instance id -> tags (an instance's own tags do not change in runpool)

  async function tagsOf(id) {
    try { return await instanceTags(id); } catch { return null; }
  }

  async function begin({ service, operation, protocol, principal, userId, url, body, proxyUrl }) {
    const request = decodeRequest(protocol, url, body);
    const line = {
      cloud, region, accountId, instanceRoleId, seq: ++seq, time: new Date().toISOString(),
      service, protocol, operation, principal, userId: userId || null, request,
    };
    if (service === 'sqs') {
      const path = url.split('?')[0];
      line.queueUrl = request.QueueUrl || (path && path !== '/' ? proxyUrl + path : null);
    }
    if (principal.startsWith('instance:')) {
      const id = principal.slice('instance:'.length);
      if (!callerTags.has(id)) {
        const t = await tagsOf(id);
        if (t) callerTags.set(id, t.tags);
      }
      line.callerTags = callerTags.get(id) || null;
    }
    if (service === 'ec2') {
      const ids = namedInstances(request);
      if (ids.length) {
        line.instances = {};
        for (const id of ids) line.instances[id] = await tagsOf(id);
      }
    }
    const chunks = CAPTURE_ANSWER.has(operation) && service === 'ec2' ? [] : null;
    let done = false;
    return {
      answer(chunk) { if (chunks) chunks.push(chunk); },
      end(status) {
        if (done || closed) return;
        done = true;
        line.status = status;
        if (chunks) line.answer = answerIds(Buffer.concat(chunks).toString('utf8'));
        fs.writeSync(fd, `${JSON.stringify(line)}\n`);
      },
    };
  }

  return {
    begin,
    close() { if (!closed) { closed = true; fs.closeSync(fd); } },
  };
}

module.exports = { createRecorder, decodeRequest, namedInstances, answerIds };
