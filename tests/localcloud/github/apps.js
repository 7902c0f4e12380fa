'use strict';
// GitHub App endpoints: finding an installation and minting installation access tokens, both
// with the App's JWT (Authorization: Bearer <JWT>).
const { HttpError, resolveRepository } = require('./rest');
const { lc } = require('./model');

const DOC = 'https://docs.github.com/rest/apps/apps';
const PERMISSIONS = { administration: 'write', organization_self_hosted_runners: 'write', metadata: 'read' };

function routes({ model, auth }) {
  const needApp = (ctx) => {
    if (ctx.principal.kind !== 'app') throw new HttpError(401, 'A JSON web token could not be decoded', { doc: DOC });
    return ctx.principal.app;
  };
  const installationView = (ctx, inst, app) => ({
    id: inst.id,
    account: { login: model.owners.get(lc(inst.owner)) || inst.owner, id: 90000 + inst.id, type: 'Organization' },
    repository_selection: 'all',
    access_tokens_url: `${ctx.origin}/api/v3/app/installations/${inst.id}/access_tokens`,
    app_id: Number(app.appId), app_slug: app.slug, target_type: 'Organization',
    permissions: PERMISSIONS, events: [],
    created_at: new Date(inst.createdAt).toISOString(), updated_at: new Date(inst.createdAt).toISOString(),
  });
  const byOwner = (owner) => (ctx) => {
    const app = needApp(ctx);
    const inst = auth.installationFor(app, owner(ctx.params));
    if (!inst) throw new HttpError(404, 'Not Found', { doc: DOC });
    return { status: 200, body: installationView(ctx, inst, app) };
  };
  return [
    ['GET', '/app', (ctx) => {
      const app = needApp(ctx);
      return { status: 200, body: { id: Number(app.appId), client_id: app.clientId, slug: app.slug, name: app.slug, permissions: PERMISSIONS } };
    }],
    ['GET', '/repos/{owner}/{repo}/installation', byOwner((p) => p.owner)],
    ['GET', '/orgs/{org}/installation', byOwner((p) => p.org)],
    ['GET', '/repositories/{repository_id}/installation', (ctx) => { resolveRepository(model, ctx); return byOwner((p) => p.owner)(ctx); }],
    ['POST', '/app/installations/{installation_id}/access_tokens', (ctx) => {
      const app = needApp(ctx);
      const inst = auth.installations.get(Number(ctx.params.installation_id));
      if (!inst || inst.appId !== app.appId) throw new HttpError(404, 'Not Found', { doc: DOC });
      const t = auth.issueInstallationToken(inst);
      return { status: 201, body: { ...t, permissions: PERMISSIONS, repository_selection: 'all' } };
    }],
  ];
}

module.exports = { routes };
