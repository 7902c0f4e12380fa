#!/usr/bin/env node
'use strict';
// The IAM tier's evaluator (README.md): every AWS request a recording holds (lib/recorder.js,
// `localcloud.js --record-requests`), evaluated with @cloud-copilot/iam-simulate against runpool's
// policies — packaging/iam's JSON documents and the same policies as
// packaging/cloudformation/runpool.yaml creates them — then the forbidden set (forbidden.js).
// Exit 0 when every recorded request is Allowed and every forbidden request denied (its control
// allowed); 1 otherwise; 2 on bad usage or an unreadable recording.
const fs = require('node:fs');
const path = require('node:path');
const { readRecording, buildWorlds } = require('./world');
const { checksFor } = require('./requests');
const { principalOf, namesFor } = require('./context');
const { simulate } = require('./simulate');
const { forbiddenCases } = require('./forbidden');
const { jsonPolicySet, cfnPolicySet } = require('./policies');

const USAGE = `usage: evaluate.js --recording FILE [--policies json|cloudformation|both] [--iam-dir DIR]
       [--controller-policy FILE] [--instance-policy FILE] [--template FILE] [--instance-types T1,T2,…]
       [--report FILE] [--verbose] [--no-forbidden]`;

/**
 * evaluateLine(line, world, policySet, override) -> { allowed, kind, pool, checks: [{ action,
 * resource, part, result, explanation, ignoredContextKeys }], error }
 */
async function evaluateLine(line, w, policySet, override = {}) {
  let principal;
  let names;
  let pool;
  let checks;
  try {
    principal = principalOf(line, w);
    ({ names, pool } = namesFor(line, w, override));
    checks = checksFor(line, w);
  } catch (err) {
    return { allowed: false, kind: line.principal === 'controller' ? 'controller' : 'instance', pool: null, checks: [],
      error: err.message };
  }
  const identityPolicies = policySet.policiesFor(principal.kind, names);
  const out = [];
  for (const c of checks) {
    const context = { ...principal.context, ...c.context };
    const r = await simulate({ principal: principal.arn, action: c.action, resource: c.resource, accountId: w.accountId,
      context, identityPolicies, resourcePolicy: c.resourcePolicy });
    const explanation = r.result !== 'Allowed' && c.note ? [...r.explanation, c.note] : r.explanation;
    out.push({ action: c.action, resource: c.resource, part: c.part || null, result: r.result, explanation,
      ignoredContextKeys: r.ignoredContextKeys, context });
  }
  return { allowed: out.length > 0 && out.every((c) => c.result === 'Allowed'), kind: principal.kind, pool, checks: out,
    error: out.length ? null : 'no authorisation mapped' };
}

function describeLine(line) {
  const who = line.principal;
  const what = line.synthetic ? `[${line.synthetic}] ` : `#${line.seq} `;
  const target = line.request?.TableName || line.queueUrl?.split('/').pop() || line.request?.['InstanceId.1'] ||
    line.request?.logGroupName || '';
  return `${what}${who} ${line.service}:${line.operation}${target ? ` ${target}` : ''}`;
}

async function evaluateRecording(lines, policySets, { forbidden = true, instanceTypes = null } = {}) {
  const worlds = buildWorlds(lines);
  for (const { world } of worlds.values()) world.configuredInstanceTypes = instanceTypes;
  const report = { requests: lines.length, clouds: worlds.size, sets: {}, forbidden: null };
  for (const set of policySets) {
    const s = { byKind: {}, byAction: {}, denied: [], absentQueueLookups: 0, ignoredContextKeys: {} };
    for (const { world, lines: ls } of worlds.values()) {
      for (const line of ls) {
        const r = await evaluateLine(line, world, set);
        // Looking up a wake-up queue that does not exist yet (an agent booted before runpoolctl
        // made it): SQS answers AccessDenied instead of QueueDoesNotExist to a caller the absent
        // queue's policy cannot admit, and the agent takes both as "not there yet". Counted apart.
        if (!r.allowed && line.operation === 'GetQueueUrl' && line.status === 400) {
          s.absentQueueLookups++;
          continue;
        }
        const k = (s.byKind[r.kind] ||= { allowed: 0, denied: 0 });
        k[r.allowed ? 'allowed' : 'denied']++;
        for (const c of r.checks) {
          const a = (s.byAction[c.action] ||= { allowed: 0, denied: 0 });
          a[c.result === 'Allowed' ? 'allowed' : 'denied']++;
          for (const key of c.ignoredContextKeys) s.ignoredContextKeys[`${c.action} ${key}`] = true;
        }
        if (!r.allowed) {
          s.denied.push({ request: describeLine(line), cloud: line.cloud, pool: r.pool, error: r.error,
            checks: r.checks.filter((c) => c.result !== 'Allowed').map(({ context, ...c }) => ({ ...c, context })) });
        }
      }
    }
    report.sets[set.name] = s;
  }
  if (forbidden) {
    const { cases, missing } = forbiddenCases(worlds);
    report.forbidden = { cases: [], missing };
    for (const c of cases) {
      const { world } = worlds.get(c.cloud);
      const entry = { name: c.name, request: describeLine(c.forbidden), sets: {} };
      for (const set of policySets) {
        const control = await evaluateLine(c.control, world, set, c.override);
        const bad = await evaluateLine(c.forbidden, world, set, c.override);
        const verdict = bad.allowed ? 'ALLOWED' : (control.allowed ? 'denied' : 'inconclusive');
        entry.sets[set.name] = { verdict,
          forbidden: bad.checks.filter((x) => x.result !== 'Allowed').map(({ context, ...x }) => x),
          controlDenied: control.allowed ? [] : control.checks.filter((x) => x.result !== 'Allowed').map(({ context, ...x }) => x)
            .concat(control.error ? [{ error: control.error }] : []),
          error: bad.error };
      }
      report.forbidden.cases.push(entry);
    }
  }
  report.ok = Object.values(report.sets).every((s) => s.denied.length === 0) &&
    (!report.forbidden || (report.forbidden.missing.length === 0 &&
      report.forbidden.cases.every((c) => Object.values(c.sets).every((x) => x.verdict === 'denied'))));
  return report;
}

// ---- printing ------------------------------------------------------------------------------------

function printReport(report, { verbose = false, out = process.stdout } = {}) {
  const p = (s = '') => out.write(`${s}\n`);
  p(`IAM tier: ${report.requests} recorded requests from ${report.clouds} local cloud(s)`);
  for (const [name, s] of Object.entries(report.sets)) {
    p();
    p(`== policies: ${name}`);
    for (const [kind, c] of Object.entries(s.byKind)) p(`  ${kind}: ${c.allowed} allowed, ${c.denied} denied`);
    if (s.absentQueueLookups) {
      p(`  lookups of a wake-up queue not made yet (AWS: AccessDenied, taken as absent): ${s.absentQueueLookups}`);
    }
    p('  per action (authorisations):');
    for (const [a, c] of Object.entries(s.byAction).sort()) p(`    ${a}: ${c.allowed} allowed${c.denied ? `, ${c.denied} DENIED` : ''}`);
    const ignored = Object.keys(s.ignoredContextKeys);
    if (ignored.length) p(`  context keys the simulator does not apply to their action: ${ignored.join(', ')}`);
    if (!s.denied.length) continue;
    p(`  denied requests: ${s.denied.length}`);
    // Alike denials (same action, same explanation) once, with how many and a few examples.
    const groups = new Map();
    for (const d of s.denied) {
      const why = d.error ? [`error: ${d.error}`] : d.checks.flatMap((c) => [`${c.action} on ${c.resource}${c.part ? ` (${c.part})` : ''}: ${c.result}`,
        ...c.explanation.map((e) => `  ${e}`)]);
      const key = why.join('\n').replace(/i-[0-9a-f]{8,17}/g, 'i-…').replace(/"[A-Z0-9]{5,}:i-…"/g, '"…"');
      if (!groups.has(key)) groups.set(key, { why, requests: [] });
      groups.get(key).requests.push(d.request);
    }
    for (const { why, requests } of groups.values()) {
      p(`  - ${requests.length} request(s), e.g. ${requests.slice(0, verbose ? requests.length : 3).join('; ')}`);
      for (const w of why) p(`      ${w}`);
    }
  }
  if (report.forbidden) {
    const f = report.forbidden;
    p();
    p('== forbidden set');
    for (const c of f.cases) {
      const verdicts = Object.entries(c.sets).map(([n, x]) => `${n}: ${x.verdict}`).join(', ');
      p(`  ${c.name}: ${verdicts}`);
      for (const [n, x] of Object.entries(c.sets)) {
        if (x.verdict === 'denied' && !verbose) continue;
        if (x.verdict === 'ALLOWED') p(`      ${n}: ${c.request} is allowed`);
        for (const d of x.verdict === 'inconclusive' ? x.controlDenied : x.forbidden) {
          if (d.error) { p(`      ${n}: control: ${d.error}`); continue; }
          p(`      ${n}${x.verdict === 'inconclusive' ? ' (its control is denied)' : ''}: ${d.action} on ${d.resource}: ${d.result}`);
          for (const e of d.explanation) p(`        ${e}`);
        }
      }
    }
    for (const m of f.missing) p(`  ${m}: NOT BUILT (the recording has no request to derive it from)`);
  }
  p();
  const counts = summaryCounts(report);
  p(`recorded: ${counts.recordedAllowed} allowed, ${counts.recordedDenied} not allowed (per policy set: ${counts.perSet})`);
  if (report.forbidden) {
    p(`forbidden: ${counts.forbiddenDenied} of ${counts.forbiddenTotal} denied with an allowed control` +
      `${counts.forbiddenMissing ? `, ${counts.forbiddenMissing} not built` : ''}`);
  }
  p(report.ok ? 'IAM tier: OK' : 'IAM tier: FAILED');
}

function summaryCounts(report) {
  let recordedAllowed = 0;
  let recordedDenied = 0;
  const perSet = [];
  for (const [name, s] of Object.entries(report.sets)) {
    const a = Object.values(s.byKind).reduce((n, c) => n + c.allowed, 0);
    const d = Object.values(s.byKind).reduce((n, c) => n + c.denied, 0);
    recordedAllowed += a;
    recordedDenied += d;
    perSet.push(`${name} ${a}/${a + d}`);
  }
  const cases = report.forbidden?.cases || [];
  const verdicts = cases.flatMap((c) => Object.values(c.sets).map((x) => x.verdict));
  return { recordedAllowed, recordedDenied, perSet: perSet.join(', '), forbiddenTotal: verdicts.length,
    forbiddenDenied: verdicts.filter((v) => v === 'denied').length, forbiddenMissing: report.forbidden?.missing.length || 0 };
}

// ---- command line --------------------------------------------------------------------------------

function parseArgs(argv) {
  const o = { recording: null, policies: 'both', iamDir: undefined, controller: undefined, instance: undefined,
    template: undefined, report: null, verbose: false, forbidden: true, instanceTypes: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--recording') o.recording = value();
    else if (a === '--policies') o.policies = value();
    else if (a === '--iam-dir') o.iamDir = value();
    else if (a === '--controller-policy') o.controller = value();
    else if (a === '--instance-policy') o.instance = value();
    else if (a === '--template') o.template = value();
    else if (a === '--report') o.report = value();
    else if (a === '--instance-types') o.instanceTypes = value().split(',').map((t) => t.trim()).filter(Boolean);
    else if (a === '--verbose') o.verbose = true;
    else if (a === '--no-forbidden') o.forbidden = false;
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.recording) throw new Error('--recording is required');
  if (!['json', 'cloudformation', 'both'].includes(o.policies)) throw new Error('--policies: json, cloudformation or both');
  return o;
}

function policySetsOf(o) {
  const sets = [];
  if (o.policies !== 'cloudformation') sets.push(jsonPolicySet({ iamDir: o.iamDir, controller: o.controller, instance: o.instance }));
  if (o.policies !== 'json') sets.push(cfnPolicySet(o.template), cfnPolicySet(o.template, { serve: true }));
  return sets;
}

async function main() {
  let o;
  let lines;
  let sets;
  try {
    o = parseArgs(process.argv.slice(2));
    lines = readRecording(o.recording);
    sets = policySetsOf(o);
  } catch (err) {
    process.stderr.write(`evaluate.js: ${err.message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (!lines.length) {
    process.stderr.write(`evaluate.js: ${o.recording} holds no request: nothing was recorded\n`);
    process.exit(1);
  }
  const kinds = new Set(lines.map((l) => (l.principal === 'controller' ? 'controller' : 'instance')));
  const report = await evaluateRecording(lines, sets, { forbidden: o.forbidden, instanceTypes: o.instanceTypes });
  if (o.report) fs.writeFileSync(o.report, `${JSON.stringify(report, null, 1)}\n`);
  printReport(report, { verbose: o.verbose });
  if (kinds.size < 2) {
    process.stdout.write(`the recording has requests of ${[...kinds].join(', ')} only: both the controller and instances must be covered\n`);
    process.exit(1);
  }
  process.exit(report.ok ? 0 : 1);
}

if (require.main === module) main();
module.exports = { evaluateRecording, evaluateLine, printReport, summaryCounts, parseArgs, policySetsOf, USAGE,
  SOURCE_DIR: path.resolve(__dirname, '..', '..', '..') };
