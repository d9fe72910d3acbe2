// A real OpenID Connect provider for the OIDC sign-in tests (tests/oidc_provider.py starts it):
// oidc-provider, with the clients, accounts and misbehaviour a test asks for.
//
//   node provider.mjs CONFIG.json   (prints "listening <port>" once it answers)
//
// CONFIG: {issuer, port, kid, clients: [{client_id, client_secret, redirect_uris}]}.
// The signing key is drawn at start: two instances with the same kid sign with different keys
// (the tests' impostor at the same issuer). Test-only routes, never in a real provider:
//   POST /_test/accounts  {id, email, email_verified}   an account the login can pick
//   POST /_test/mode      {clockOffsetSeconds, tokenClientAs: {client_id, client_secret},
//                          tokenAnswer: {status, contentType, body}}
//   GET  /interaction/:uid?account=ID                   the login, completed at once
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const accounts = new Map();
const plainMode = { clockOffsetSeconds: 0, tokenClientAs: null, tokenAnswer: null };
const mode = { ...plainMode };

// A provider whose clock is wrong issues tokens already expired (or not yet valid).
const realNow = Date.now;
Date.now = () => realNow() + mode.clockOffsetSeconds * 1000;

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: config.kid, use: 'sig', alg: 'RS256' };

const provider = new Provider(config.issuer, {
  clients: config.clients.map((client) => ({
    ...client,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  })),
  jwks: { keys: [signingKey] },
  cookies: { keys: ['test-cookie-key-not-secret'] },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // The email claims in the ID token itself, as most providers put them.
  conformIdTokenClaims: false,
  // Cookies outlive the tests' wrong clocks (a cookie already expired is never sent back).
  ttl: { IdToken: 300, AuthorizationCode: 60, Interaction: 3600, Session: 7200, Grant: 7200 },
  findAccount: async (ctx, id) => {
    const account = accounts.get(id);
    if (!account) return undefined;
    return {
      accountId: id,
      claims: async () => ({ sub: id, email: account.email,
                             email_verified: account.email_verified, name: id }),
    };
  },
  // A first-party client: consent is implied, as with a company's own applications.
  loadExistingGrant: async (ctx) => {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
});

async function jsonBody(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return JSON.parse(text || '{}');
}

provider.use(async (ctx, next) => {
  if (ctx.method === 'POST' && ctx.path === '/_test/accounts') {
    const { id, email, email_verified } = await jsonBody(ctx.req);
    accounts.set(id, { email, email_verified });
    ctx.status = 204;
    return;
  }
  if (ctx.method === 'POST' && ctx.path === '/_test/mode') {
    Object.assign(mode, plainMode, await jsonBody(ctx.req));
    ctx.status = 204;
    return;
  }
  const interaction = ctx.path.match(/^\/interaction\/([^/]+)$/);
  if (ctx.method === 'GET' && interaction) {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const accountId = ctx.query.account;
    if (details.prompt.name !== 'login' || !accounts.has(accountId)) {
      ctx.status = 400;
      ctx.body = { error: `no login for ${accountId} at prompt ${details.prompt.name}` };
      return;
    }
    await provider.interactionFinished(ctx.req, ctx.res, { login: { accountId } },
                                       { mergeWithLastSubmission: false });
    ctx.respond = false;
    return;
  }
  if (ctx.path === '/token' && mode.tokenAnswer) {
    // A token endpoint answering nonsense (a login page, a huge body) in place of tokens.
    ctx.status = mode.tokenAnswer.status;
    ctx.type = mode.tokenAnswer.contentType;
    ctx.body = mode.tokenAnswer.body;
    return;
  }
  if (ctx.path === '/token' && mode.tokenClientAs) {
    // Whoever sits at the token endpoint answers as another client: its tokens name that
    // client as their audience.
    const { client_id, client_secret } = mode.tokenClientAs;
    const basic = Buffer.from(`${client_id}:${client_secret}`).toString('base64');
    ctx.req.headers.authorization = `Basic ${basic}`;
  }
  await next();
});

provider.listen(config.port, '127.0.0.1', () => {
  console.log(`listening ${config.port}`);
});
