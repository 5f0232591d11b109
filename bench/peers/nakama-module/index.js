/**
 * The peers bench's Nakama runtime module (Nakama's JavaScript runtime loads index.js from
 * runtime.path): the rpcs the bench calls. Nakama finds registered functions by name among the
 * module's top-level functions, so each is declared at the top level.
 */

/** The platform's share of a sale, as the Atrium side's ECONOMY_FEE_BPS (3000). */
var FEE_BPS = 3000;

/** The echo rpc: answers its payload. */
function echo(_ctx, _logger, _nk, payload) {
  return payload;
}

/** Funds the caller's wallet before the purchases (setup only). */
function grant(ctx, _logger, nk, payload) {
  var amount = JSON.parse(payload).amount;
  nk.walletUpdate(ctx.userId, { coin: amount }, { reason: 'bench' }, true);
  return '{}';
}

/**
 * A purchase: the buyer's wallet debited (Nakama refuses a negative balance), the seller's
 * credited with the price less the fee, both with ledger rows, and the item written to the buyer's
 * inventory, in one multiUpdate (one transaction).
 */
function purchase(ctx, _logger, nk, payload) {
  var order = JSON.parse(payload);
  var earnings = order.price - Math.floor((order.price * FEE_BPS) / 10000);
  var result = nk.multiUpdate(
    null,
    [
      {
        collection: 'inventory',
        key: order.item_id,
        userId: ctx.userId,
        value: { item_id: order.item_id, quantity: 1, acquired_at: Date.now() },
        permissionRead: 1,
        permissionWrite: 0,
      },
    ],
    null,
    // In user id order, so two purchases never wait for each other's wallet in opposite orders.
    [
      { userId: ctx.userId, changeset: { coin: -order.price }, metadata: { item_id: order.item_id } },
      { userId: order.seller_id, changeset: { coin: earnings }, metadata: { item_id: order.item_id } },
    ].sort((a, b) => (a.userId < b.userId ? -1 : 1)),
    true,
  );
  return JSON.stringify({ item_id: order.item_id, version: result.storageWriteAcks[0].version });
}

// biome-ignore lint/correctness/noUnusedVariables: Nakama calls InitModule by name.
function InitModule(_ctx, _logger, _nk, initializer) {
  initializer.registerRpc('echo', echo);
  initializer.registerRpc('grant', grant);
  initializer.registerRpc('purchase', purchase);
}
