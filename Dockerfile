# syntax=docker/dockerfile:1

# Node 20 on Debian (glibc), not Alpine and not Node 22+: the uWebSockets.js package the service
# depends on ships native Linux builds for Node 20 with glibc only (see docs/operations.md).

# Build stage: install every dependency, compile src/, protocol/ and migrations/ into dist/,
# then drop the dev dependencies so only runtime packages are copied on.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci runs the package's prepare script, which finds no sources yet and does nothing here.
COPY scripts/prepare.mjs scripts/build-freshness.mjs ./scripts/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY protocol ./protocol
COPY migrations ./migrations
COPY src ./src
COPY scripts/copy-build-assets.ts ./scripts/copy-build-assets.ts
COPY examples/gameserver/server.mjs ./examples/gameserver/server.mjs
COPY deploy/agones/gameserver-template.yaml ./deploy/agones/gameserver-template.yaml
# npm run build compiles, then copies beside the modules the files they read (the console's assets,
# the local spawner's default program, the agones spawner's default GameServer template). The
# prepare script then finds the build as new as the sources (so it does not build again) and
# makes the embedded database's cluster cache in node_modules/.cache/atrium,
# which the image carries, so a container's first start without DATABASE_URL runs no initdb.
RUN npm run build && node scripts/prepare.mjs && npm prune --omit=dev --no-audit --no-fund

# Runtime stage.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    HTTP_PORT=8080 \
    WS_PORT=8081 \
    DATA_DIR=/app/data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The embedded database and generated keys live here when DATABASE_URL is not set.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
VOLUME /app/data
EXPOSE 8080 8081
# The slim image has no curl; Node 20's built-in fetch does the probe.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HTTP_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# A young generation of at most 8 MiB, 1 MiB at rest, and one V8 platform thread: see
# "Node runtime flags" in docs/operations.md.
CMD ["node", "--min-semi-space-size=1", "--max-semi-space-size=8", "--v8-pool-size=1", "dist/src/main.js", "serve"]
