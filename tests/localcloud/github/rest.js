'use strict';
// The self-hosted runner REST API (repository, organization and enterprise forms, and a moved
// repository's /repositories/{id} form), as documented at
// docs.github.com/rest/actions/self-hosted-runners. Handlers take a context
// { params, query, body, principal, origin } and return { status, body, headers? }, or throw
// an HttpError carrying GitHub's error body.
const crypto = require('node:crypto');
const { isoSec } = require('./http');
const { Model, SYSTEM_LABELS, lc, dedupe } = require('./model');
const { encodeJitConfig } = require('./runnerfiles');

const DOC = 'https://docs.github.com/rest/actions/self-hosted-runners';

class HttpError extends Error {
  constructor(status, message, extra = {}) {
    super(message);
    this.status = status;
    this.body = { message, documentation_url: extra.doc || DOC, status: String(status), ...(extra.errors ? { errors: extra.errors } : {}) };
  }
}

// GitHub's 5xx answer: `{"message":"Server Error"}` and nothing else.
function serverError(status) {
  const e = new HttpError(status, 'Server Error');
  e.body = { message: 'Server Error' };
  return e;
}

const scopeOf = (p) => ({ owner: p.owner ?? p.org ?? (p.enterprise != null ? `enterprise:${p.enterprise}` : undefined), repo: p.repo ?? null });

// The path a moved repository's REST path redirects to (/repositories/<id>/…), or null.
function redirectFor(model, apiPath) {
  const m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(apiPath);
  if (!m) return null;
  const id = model.movedRepo(decodeURIComponent(m[1]), decodeURIComponent(m[2]));
  return id == null ? null : `/repositories/${id}${m[3] || ''}`;
}

// /repositories/{repository_id}/… names the repository by id: its current owner and name.
function resolveRepository(model, ctx) {
  if (ctx.params.repository_id === undefined) return;
  const repo = model.reposById.get(Number(ctx.params.repository_id));
  if (!repo) throw new HttpError(404, 'Not Found');
  ctx.params = { ...ctx.params, owner: repo.owner, repo: repo.repo };
}

// Runner endpoints need a PAT or installation token that may act on the owner. GitHub Apps
// cannot manage an enterprise's runners.
function access(model, principal, owner) {
  if (principal.kind === 'installation' && /^enterprise:/i.test(owner)) throw new HttpError(403, 'Resource not accessible by integration');
  if (!model.hasOwner(owner)) throw new HttpError(404, 'Not Found');
  if (principal.kind === 'pat' && principal.owners && !principal.owners.has(lc(owner))) throw new HttpError(404, 'Not Found');
  if (principal.kind === 'installation' && lc(principal.installation.owner) !== lc(owner)) throw new HttpError(403, 'Resource not accessible by integration');
  if (principal.kind === 'app') throw new HttpError(403, 'Resource not accessible by integration');
}

function restRunner(broker, r) {
  return {
    id: r.id, name: r.name, os: r.os, status: broker.sessionLive(r) ? 'online' : 'offline', busy: r.busy,
    ephemeral: r.ephemeral, runner_group_id: r.runnerGroupId,
    labels: r.labels.map((l) => ({ id: broker.model.labelId(l.name), name: l.name, type: l.type })),
  };
}

function checkLabels(labels, min) {
  if (!Array.isArray(labels) || labels.length < min || labels.length > 100 ||
      labels.some((l) => typeof l !== 'string' || !l.trim() || l.length > 256 || l.includes(','))) {
    throw new HttpError(422, `Invalid request.\n\n"labels" must be an array of ${min} to 100 non-empty label names.`);
  }
}

// Link header with GitHub's rel order: prev, next, last, first.
function linkHeader(base, query, page, perPage, last) {
  const url = (n) => {
    const q = new URLSearchParams(query);
    q.set('per_page', String(perPage));
    q.set('page', String(n));
    return `<${base}?${q}>`;
  };
  const parts = [];
  if (page > 1) parts.push(`${url(page - 1)}; rel="prev"`);
  if (page < last) parts.push(`${url(page + 1)}; rel="next"`, `${url(last)}; rel="last"`);
  if (page > 1) parts.push(`${url(1)}; rel="first"`);
  return parts.join(', ');
}

function routes({ model, broker, downloads }) {
  const find = (ctx) => {
    const { owner, repo } = scopeOf(ctx.params);
    const r = model.runners.get(Number(ctx.params.runner_id));
    if (!r || r.scopeKey !== Model.scopeKey(owner, repo)) throw new HttpError(404, 'Not Found');
    return r;
  };
  const labelsBody = (r) => {
    const labels = restRunner(broker, r).labels;
    return { status: 200, body: { total_count: labels.length, labels } };
  };
  const custom = (names) => names.map((n) => ({ name: n.trim(), type: 'custom' }));
  const readOnly = (r) => r.labels.filter((l) => l.type === 'read-only');

  const handlers = {
    'POST /registration-token': (ctx) => token(ctx, 'registration'),
    'POST /remove-token': (ctx) => token(ctx, 'remove'),
    'POST /generate-jitconfig': async (ctx) => {
      const { owner, repo } = scopeOf(ctx.params);
      const b = ctx.body;
      if (typeof b.name !== 'string' || !b.name.trim()) throw new HttpError(422, 'Invalid request.\n\n"name" wasn\'t supplied.');
      if (!Number.isInteger(b.runner_group_id)) throw new HttpError(422, 'Invalid request.\n\n"runner_group_id" wasn\'t supplied.');
      checkLabels(b.labels, 1);
      if (b.work_folder !== undefined && typeof b.work_folder !== 'string') throw new HttpError(422, 'Invalid request.\n\n"work_folder" must be a string.');
      const group = model.groupsOf(owner, repo).find((g) => g.id === b.runner_group_id);
      if (!group) throw new HttpError(404, `Runner group ${b.runner_group_id} not found`);
      if (model.findByName(owner, repo, b.name)) throw new HttpError(409, `Already exists - A runner with the name ${b.name} already exists.`);
      const { publicKey, privateKey } = await new Promise((res, rej) => crypto.generateKeyPair('rsa', { modulusLength: 2048 }, (e, pub, priv) => (e ? rej(e) : res({ publicKey: pub, privateKey: priv }))));
      if (model.findByName(owner, repo, b.name)) throw new HttpError(409, `Already exists - A runner with the name ${b.name} already exists.`);
      const r = model.createRunner({
        owner, repo, name: b.name, ephemeral: true, publicKey, workFolder: b.work_folder || '_work', group,
        labels: [...SYSTEM_LABELS.map((n) => ({ name: n, type: 'read-only' })), ...custom(b.labels)],
      });
      return { status: 201, body: { runner: restRunner(broker, r), encoded_jit_config: encodeJitConfig({ runner: r, origin: ctx.origin, privateKey }) } };
    },
    'GET ': (ctx) => {
      const { owner, repo } = scopeOf(ctx.params);
      const key = Model.scopeKey(owner, repo);
      const name = ctx.query.get('name');
      const perPage = Math.min(100, Math.max(1, parseInt(ctx.query.get('per_page'), 10) || 30));
      const page = Math.max(1, parseInt(ctx.query.get('page'), 10) || 1);
      const all = [...model.runners.values()].filter((r) => r.scopeKey === key && (name == null || lc(r.name) === lc(name))).sort((a, b) => a.id - b.id);
      const last = Math.max(1, Math.ceil(all.length / perPage));
      const link = linkHeader(ctx.base, ctx.query, page, perPage, last);
      return {
        status: 200, headers: link ? { link } : {},
        body: { total_count: all.length, runners: all.slice((page - 1) * perPage, page * perPage).map((r) => restRunner(broker, r)) },
      };
    },
    'GET /downloads': async (ctx) => ({ status: 200, body: await downloads.list(ctx.origin) }),
    'GET /{runner_id}': (ctx) => ({ status: 200, body: restRunner(broker, find(ctx)) }),
    'DELETE /{runner_id}': (ctx) => {
      const r = find(ctx);
      const failWith = model.takeRemovalError(r, 'rest');
      if (failWith) throw serverError(failWith);
      if (r.busy) throw new HttpError(422, `Bad request - Runner "${r.name}" is still running a job"`, { doc: `${DOC}#delete-a-self-hosted-runner-from-a-repository` });
      model.deleteRunner(r);
      return { status: 204 };
    },
    'GET /{runner_id}/labels': (ctx) => labelsBody(find(ctx)),
    'POST /{runner_id}/labels': (ctx) => {
      const r = find(ctx);
      checkLabels(ctx.body.labels, 1);
      r.labels = dedupe([...r.labels, ...custom(ctx.body.labels)]);
      broker.pump();
      return labelsBody(r);
    },
    'PUT /{runner_id}/labels': (ctx) => {
      const r = find(ctx);
      checkLabels(ctx.body.labels, 0);
      r.labels = dedupe([...readOnly(r), ...custom(ctx.body.labels)]);
      broker.pump();
      return labelsBody(r);
    },
    'DELETE /{runner_id}/labels': (ctx) => {
      const r = find(ctx);
      r.labels = readOnly(r);
      return labelsBody(r);
    },
    'DELETE /{runner_id}/labels/{name}': (ctx) => {
      const r = find(ctx);
      const l = r.labels.find((x) => lc(x.name) === lc(ctx.params.name));
      if (!l) throw new HttpError(404, 'Not Found');
      if (l.type === 'read-only') throw new HttpError(422, `Cannot remove read-only label ${l.name}`);
      r.labels = r.labels.filter((x) => x !== l);
      return labelsBody(r);
    },
  };

  function token(ctx, kind) {
    const { owner, repo } = scopeOf(ctx.params);
    const t = model.issueRunnerToken(kind, owner, repo);
    return { status: 201, body: { token: t.token, expires_at: isoSec(t.expiresAt) } };
  }

  const out = [];
  for (const prefix of ['/repos/{owner}/{repo}/actions/runners', '/orgs/{org}/actions/runners',
    '/enterprises/{enterprise}/actions/runners', '/repositories/{repository_id}/actions/runners']) {
    for (const [key, h] of Object.entries(handlers)) {
      const [method, suffix] = key.split(' ');
      out.push([method, prefix + suffix, async (ctx) => {
        resolveRepository(model, ctx);
        access(model, ctx.principal, scopeOf(ctx.params).owner);
        return h(ctx);
      }]);
    }
  }
  return out;
}

module.exports = { routes, HttpError, serverError, restRunner, access, redirectFor, resolveRepository, linkHeader };
