'use strict';
// One authorisation through @cloud-copilot/iam-simulate (Strict mode), memoised (an agent's
// heartbeats ask the same question thousands of times), and its explanation in a few lines.
const { runSimulation, getDenialReasons } = require('@cloud-copilot/iam-simulate');

const cache = new Map();

/**
 * simulate({ principal, action, resource, accountId, context, identityPolicies, resourcePolicy })
 *   -> { result: 'Allowed' | 'ImplicitlyDenied' | 'ExplicitlyDenied' | 'Error', explanation: [string],
 *        ignoredContextKeys: [string] }
 */
async function simulate(q) {
  const key = JSON.stringify(q);
  if (!cache.has(key)) cache.set(key, run(q));
  return cache.get(key);
}

async function run({ principal, action, resource, accountId, context, identityPolicies, resourcePolicy }) {
  const sim = {
    request: { principal, action, resource: { resource, accountId }, contextVariables: context },
    identityPolicies, serviceControlPolicies: [], resourceControlPolicies: [],
  };
  if (resourcePolicy) sim.resourcePolicy = resourcePolicy;
  const r = await runSimulation(sim, { simulationMode: 'Strict' });
  if (r.resultType === 'error') {
    return { result: 'Error', explanation: [`the simulator refused the request: ${JSON.stringify(r.errors)}`], ignoredContextKeys: [] };
  }
  const single = r.resultType === 'single' ? r.result : r.results[0];
  const ignored = single?.ignoredContextKeys || [];
  if (r.overallResult === 'Allowed') return { result: 'Allowed', explanation: [], ignoredContextKeys: ignored };
  return { result: r.overallResult, explanation: explain(single?.analysis, context, resourcePolicy), ignoredContextKeys: ignored };
}

function fmt(v) { return JSON.stringify(v); }

// Why each statement that names the action (and, for identity policies, the resource) did not
// apply: its conditions that failed, with the request's value of the key.
function statementReasons(where, analysis, context) {
  const out = [];
  for (const s of analysis?.unmatchedStatements || []) {
    if (!s.actionMatch) continue;
    const sid = s.statement?.Sid || s.explain?.identifier || '?';
    const why = [];
    if (!s.resourceMatch) why.push(`resource ${fmt(s.statement?.Resource)} does not match`);
    if (s.principalMatch && !/Match$/.test(s.principalMatch)) why.push(`principal ${fmt(s.statement?.Principal)} does not match (${s.principalMatch})`);
    for (const c of s.explain?.conditions || []) {
      if (c.matches) continue;
      const key = c.conditionKeyValue;
      const want = Array.isArray(c.values) ? c.values.map((v) => v.value) : c.values?.value;
      const have = key in context ? context[key] : '(absent)';
      why.push(`${c.operator} ${key} ${fmt(want)}${c.resolvedConditionKeyValue ? ` (resolved ${fmt(c.resolvedConditionKeyValue)})` : ''}; ` +
        `the request has ${fmt(have)}${c.unmatchedValues ? `, unmatched ${fmt(c.unmatchedValues)}` : ''}`);
    }
    if (s.conditionMatch && s.conditionMatch !== 'Match' && !why.length) why.push(`conditions: ${s.conditionMatch}`);
    out.push(`${where} statement ${sid}: ${why.join('; ') || 'did not apply'}`);
  }
  for (const s of analysis?.denyStatements || []) out.push(`${where} statement ${s.statement?.Sid || '?'} denies explicitly`);
  for (const s of analysis?.allowStatements || []) {
    if (s.principalMatch === 'AccountLevelMatch') {
      out.push(`${where} statement ${s.statement?.Sid || '?'} names the account as principal: it only delegates to identity policies`);
    }
  }
  return out;
}

function explain(analysis, context, resourcePolicy) {
  if (!analysis) return ['no analysis'];
  const lines = [];
  try {
    for (const d of getDenialReasons(analysis)) {
      lines.push(`denied by the ${d.policyType} policies (${d.denialType}${d.statementId ? `, ${d.statementId}` : ''})`);
    }
  } catch { /* the reasons below say enough */ }
  const identity = statementReasons('identity', analysis.identityAnalysis, context);
  lines.push(...(identity.length ? identity : ['no identity statement grants this action on this resource']));
  if (resourcePolicy) {
    const res = statementReasons('queue policy', analysis.resourceAnalysis, context);
    lines.push(...(res.length ? res : [`queue policy: ${analysis.resourceAnalysis?.result || 'no statement applies'}`]));
  }
  return lines;
}

module.exports = { simulate, explain };
