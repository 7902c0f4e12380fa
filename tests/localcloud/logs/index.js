'use strict';
// The local cloud's CloudWatch Logs stand-in: log groups, log streams and their events, behind the
// launcher's SigV4 proxy (signing name `logs`), speaking the JSON 1.1 protocol
// (X-Amz-Target: Logs_20140328.<Op>) with the service's own errors and PutLogEvents' rules:
// chronological batches of at most 10,000 events and 1,048,576 bytes (message bytes + 26 each)
// spanning at most 24 hours; events older than 14 days (or the group's retention) or more than
// 2 hours ahead are accepted but not stored, and reported in rejectedLogEventsInfo.
//
//   createLogs({ log, now }) -> { url, control(method, subpath, body), close() }
// Control (under /_control/logs): GET /events?group=G[&stream=S] -> { events: [{ logStreamName,
// timestamp, message, ingestionTime }] } in time order; GET /groups -> { groups: { G: { streams:
// [S...], retentionInDays } } }; POST /reset forgets everything.
const crypto = require('node:crypto');
const { readBody, listenLocal, closeServer, createServer } = require('../lib/httputil');

const TARGET = 'Logs_20140328.';
const DAY_MS = 24 * 3600 * 1000;
const MAX_EVENTS = 10_000;
const MAX_BATCH_BYTES = 1_048_576;
const EVENT_OVERHEAD = 26;
const MAX_EVENT_BYTES = 262_144 - EVENT_OVERHEAD;
const TOO_OLD_MS = 14 * DAY_MS;
const TOO_NEW_MS = 2 * 3600 * 1000;
const RETENTION_DAYS = new Set([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192,
  2557, 2922, 3288, 3653]);
const GROUP_NAME = /^[.\-_/#A-Za-z0-9]{1,512}$/;

class LogsError extends Error {
  constructor(code, message, status = 400) { super(message); this.code = code; this.status = status; }
}
const invalid = (message) => new LogsError('InvalidParameterException', message);
const noGroup = () => new LogsError('ResourceNotFoundException', 'The specified log group does not exist.');

function requireString(body, key, { pattern, max = 512 } = {}) {
  const v = body[key];
  if (typeof v !== 'string' || v.length < 1 || v.length > max) {
    throw invalid(`1 validation error detected: Value at '${key}' failed to satisfy constraint: ` +
      `Member must have length between 1 and ${max}`);
  }
  if (pattern && !pattern.test(v)) {
    throw invalid(`1 validation error detected: Value '${v}' at '${key}' failed to satisfy constraint: ` +
      `Member must satisfy regular expression pattern: ${pattern.source}`);
  }
  return v;
}

function createLogs({ log = () => {}, now = () => Date.now() } = {}) {
  const accountId = '000000000000';
  let groups = new Map(); // name -> { creationTime, retentionInDays, streams: Map(name -> stream) }
  const region = 'us-east-1';
  const arn = (g, s) => `arn:aws:logs:${region}:${accountId}:log-group:${g}${s === undefined ? ':*' : `:log-stream:${s}`}`;

  const group = (body) => {
    const g = groups.get(requireString(body, 'logGroupName', { pattern: GROUP_NAME }));
    if (!g) throw noGroup();
    return g;
  };
  const stream = (body) => {
    const g = group(body);
    const s = g.streams.get(requireString(body, 'logStreamName', { pattern: /^[^:*]*$/ }));
    if (!s) throw new LogsError('ResourceNotFoundException', 'The specified log stream does not exist.');
    return s;
  };

  function putLogEvents(body) {
    const g = group(body);
    const s = stream(body);
    const events = body.logEvents;
    if (!Array.isArray(events) || events.length < 1 || events.length > MAX_EVENTS) {
      throw invalid(`1 validation error detected: Value at 'logEvents' failed to satisfy constraint: ` +
        `Member must have length between 1 and ${MAX_EVENTS}`);
    }
    let bytes = 0;
    events.forEach((e, i) => {
      if (!e || !Number.isSafeInteger(e.timestamp) || e.timestamp < 0) {
        throw invalid(`logEvents.${i + 1}.timestamp must be a number`);
      }
      if (typeof e.message !== 'string' || e.message.length < 1) {
        throw invalid(`1 validation error detected: Value at 'logEvents.${i + 1}.member.message' failed to satisfy ` +
          'constraint: Member must have length greater than or equal to 1');
      }
      const size = Buffer.byteLength(e.message, 'utf8');
      if (size > MAX_EVENT_BYTES) throw invalid(`Log event too large: ${size} bytes exceeds limit of ${MAX_EVENT_BYTES}`);
      bytes += size + EVENT_OVERHEAD;
      if (i > 0 && e.timestamp < events[i - 1].timestamp) {
        throw invalid('Log events in a single PutLogEvents request must be in chronological order.');
      }
    });
    if (bytes > MAX_BATCH_BYTES) throw invalid(`Upload too large: ${bytes} bytes exceeds limit of ${MAX_BATCH_BYTES}`);
    if (events[events.length - 1].timestamp - events[0].timestamp > DAY_MS) {
      throw invalid('The batch of log events in a single PutLogEvents request cannot span more than 24 hours.');
    }
    const t = now();
    const info = {};
    const expiredBefore = g.retentionInDays ? t - g.retentionInDays * DAY_MS : -Infinity;
    events.forEach((e, i) => {
      if (e.timestamp < t - TOO_OLD_MS) { info.tooOldLogEventEndIndex = i + 1; return; }
      if (e.timestamp < expiredBefore) { info.expiredLogEventEndIndex = i + 1; return; }
      if (e.timestamp > t + TOO_NEW_MS) {
        if (info.tooNewLogEventStartIndex === undefined) info.tooNewLogEventStartIndex = i;
        return;
      }
      s.events.push({ timestamp: e.timestamp, message: e.message, ingestionTime: t });
    });
    s.lastIngestionTime = t;
    const out = { nextSequenceToken: crypto.randomBytes(16).toString('hex') };
    if (Object.keys(info).length) out.rejectedLogEventsInfo = info;
    return out;
  }

  const OPS = {
    CreateLogGroup(body) {
      const name = requireString(body, 'logGroupName', { pattern: GROUP_NAME });
      if (groups.has(name)) throw new LogsError('ResourceAlreadyExistsException', 'The specified log group already exists');
      groups.set(name, { creationTime: now(), retentionInDays: undefined, streams: new Map() });
      return {};
    },
    DeleteLogGroup(body) {
      group(body);
      groups.delete(body.logGroupName);
      return {};
    },
    PutRetentionPolicy(body) {
      const g = group(body);
      if (!RETENTION_DAYS.has(body.retentionInDays)) {
        throw invalid(`1 validation error detected: Value '${body.retentionInDays}' at 'retentionInDays' failed to ` +
          'satisfy constraint: Member must satisfy enum value set');
      }
      g.retentionInDays = body.retentionInDays;
      return {};
    },
    DescribeLogGroups(body) {
      const prefix = body.logGroupNamePrefix || '';
      return { logGroups: [...groups].filter(([n]) => n.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([n, g]) => ({ logGroupName: n, creationTime: g.creationTime, arn: arn(n), storedBytes: 0,
          ...(g.retentionInDays ? { retentionInDays: g.retentionInDays } : {}) })) };
    },
    CreateLogStream(body) {
      const g = group(body);
      const name = requireString(body, 'logStreamName', { pattern: /^[^:*]*$/ });
      if (g.streams.has(name)) {
        throw new LogsError('ResourceAlreadyExistsException', 'The specified log stream already exists');
      }
      g.streams.set(name, { creationTime: now(), events: [], lastIngestionTime: undefined });
      return {};
    },
    DescribeLogStreams(body) {
      const g = group(body);
      const prefix = body.logStreamNamePrefix || '';
      return { logStreams: [...g.streams].filter(([n]) => n.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([n, s]) => {
          const ts = s.events.map((e) => e.timestamp);
          return { logStreamName: n, creationTime: s.creationTime, arn: arn(body.logGroupName, n), storedBytes: 0,
            ...(ts.length ? { firstEventTimestamp: Math.min(...ts), lastEventTimestamp: Math.max(...ts) } : {}),
            ...(s.lastIngestionTime ? { lastIngestionTime: s.lastIngestionTime } : {}) };
        }) };
    },
    PutLogEvents: putLogEvents,
    GetLogEvents(body) {
      const s = stream(body);
      const limit = body.limit === undefined ? MAX_EVENTS : body.limit;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EVENTS) throw invalid('limit must be between 1 and 10000');
      const events = sorted(s.events).slice(0, limit);
      const token = `f/${crypto.randomBytes(8).toString('hex')}`;
      return { events, nextForwardToken: token, nextBackwardToken: `b/${token.slice(2)}` };
    },
  };

  const sorted = (events) => [...events].sort((a, b) => a.timestamp - b.timestamp);

  const reply = (res, status, obj) => {
    const body = JSON.stringify(obj);
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'content-length': Buffer.byteLength(body),
      'x-amzn-requestid': crypto.randomUUID() });
    res.end(body);
  };

  const server = createServer(async (req, res) => {
    try {
      const raw = (await readBody(req, 2 * MAX_BATCH_BYTES)).toString('utf8');
      const target = String(req.headers['x-amz-target'] || '');
      const op = target.startsWith(TARGET) ? OPS[target.slice(TARGET.length)] : undefined;
      if (req.method !== 'POST' || !op) {
        throw new LogsError('UnknownOperationException', `unknown operation ${JSON.stringify(target)}`);
      }
      let body;
      try { body = raw.trim() ? JSON.parse(raw) : {}; } catch { body = null; }
      if (!body || typeof body !== 'object' || Array.isArray(body)) {
        throw new LogsError('SerializationException', 'the body is not a JSON object');
      }
      reply(res, 200, op(body));
    } catch (err) {
      if (!(err instanceof LogsError)) {
        log('error', `logs: ${err.stack || err}`);
        err = new LogsError('ServiceUnavailableException', err.message, 500);
      }
      reply(res, err.status, { __type: err.code, message: err.message });
    }
  });

  async function control(method, subpath) {
    const qi = subpath.indexOf('?');
    const p = qi < 0 ? subpath : subpath.slice(0, qi);
    const q = new URLSearchParams(qi < 0 ? '' : subpath.slice(qi + 1));
    const key = `${method} ${p}`;
    if (key === 'GET /events') {
      const g = groups.get(q.get('group') || '');
      if (!g) return { status: 404, json: { error: `no log group ${JSON.stringify(q.get('group'))}` } };
      const only = q.get('stream');
      if (only !== null && !g.streams.has(only)) {
        return { status: 404, json: { error: `no log stream ${JSON.stringify(only)}` } };
      }
      const events = [];
      for (const [n, s] of g.streams) {
        if (only === null || only === n) for (const e of s.events) events.push({ logStreamName: n, ...e });
      }
      return { status: 200, json: { events: sorted(events) } };
    }
    if (key === 'GET /groups') {
      const describe = (g) => ({ streams: [...g.streams.keys()].sort(),
        ...(g.retentionInDays ? { retentionInDays: g.retentionInDays } : {}) });
      return { status: 200, json: { groups: Object.fromEntries([...groups].map(([n, g]) => [n, describe(g)])) } };
    }
    if (key === 'POST /reset') {
      groups = new Map();
      return { status: 200, json: { ok: true } };
    }
    return { status: 404, json: { error: `no control route ${method} /_control/logs${p}` } };
  }

  const logs = { url: null, control, close: () => closeServer(server) };
  return listenLocal(server).then((url) => { logs.url = url; return logs; });
}

module.exports = { createLogs, LogsError };
