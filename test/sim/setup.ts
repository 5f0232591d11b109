import type { TokenResponse } from '../../protocol/auth.js';
import type { Cast } from './actions.js';
import { Model } from './model.js';
import type { SimService } from './service.js';

/**
 * The simulation's people: PEOPLE users who buy, sell and request payouts, and two admins (the
 * role given by `atrium admin grant`, as an operator would), registered on the fresh database
 * under names that are the same on every run.
 */

const PEOPLE = 10;
const PASSWORD = 'simulation password';

async function post<T>(baseUrl: string, path: string, body: object): Promise<T> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

function register(baseUrl: string, username: string): Promise<TokenResponse> {
  return post(baseUrl, '/api/auth/register', {
    username,
    password: PASSWORD,
    accept_terms: true,
    confirm_18_plus: true,
  });
}

/** The model, its users registered, and who plays which part. */
export async function castUsers(service: SimService): Promise<{ model: Model; cast: Cast }> {
  const base = service.baseUrl;
  const names = [...Array.from({ length: PEOPLE }, (_, i) => `sim_user_${i}`), 'sim_admin_0', 'sim_admin_1'];
  const tokens: TokenResponse[] = [];
  for (const name of names) tokens.push(await register(base, name));
  const admins = names.filter((n) => n.startsWith('sim_admin'));
  await Promise.all(admins.map((name) => service.grantAdmin(name)));
  for (const [i, name] of names.entries()) {
    // A token issued after the grant carries the role.
    if (admins.includes(name))
      tokens[i] = await post(base, '/api/auth/login', { username: name, password: PASSWORD });
  }
  const settings = await fetch(`${base}/api/economy/settings`, {
    headers: { authorization: `Bearer ${tokens[0]?.access_token}` },
  }).then((r) => r.json() as Promise<{ fee_bps: number; hold_seconds: number; payout_minimum: number }>);
  const model = new Model({
    feeBps: settings.fee_bps,
    holdMs: settings.hold_seconds * 1000,
    payoutMinimum: settings.payout_minimum,
  });
  for (const [i, name] of names.entries()) {
    const token = tokens[i] as TokenResponse;
    model.addUser({
      id: token.user.id,
      username: name,
      token: token.access_token,
      admin: admins.includes(name),
    });
  }
  const people = model.users.filter((u) => !u.admin).map((u) => u.ix);
  return { model, cast: { people, admins: model.users.filter((u) => u.admin).map((u) => u.ix) } };
}
