# syntax=docker/dockerfile:1
# A linux/amd64 image: the only onnxruntime binaries kept are linux/x64's (the package ships
# macOS, Windows and linux/arm64 builds too, ~290 MB in all). On an arm64 machine, build with
# `docker build --platform linux/amd64 .` (the FROM lines pin it).

# Build stage: production dependencies only; no npm cache or dev tools reach the image.
FROM --platform=linux/amd64 node:22-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev \
 && npm cache clean --force \
 && find node_modules/onnxruntime-node/bin -mindepth 3 -maxdepth 3 -type d ! -path '*/linux/x64' -exec rm -rf {} + \
 && find node_modules/onnxruntime-node/bin -mindepth 2 -maxdepth 2 -type d ! -name linux -exec rm -rf {} + \
 && test -e node_modules/onnxruntime-node/bin/napi-v6/linux/x64/onnxruntime_binding.node

# Node 22 (22.18+ strips TypeScript types by default: the sources run as they are).
FROM --platform=linux/amd64 node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production DATA_DIR=/app/data PORT=3000 HOST=0.0.0.0
COPY --from=dependencies --chown=root:root /app/node_modules ./node_modules
COPY package.json LICENSE ./
COPY bin ./bin
COPY sql ./sql
COPY src ./src
COPY models ./models
# The code stays root-owned and read-only to the service; only its data folder is writable
# (the embedded PostgreSQL lives there when DATABASE_URL is unset).
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
# Web and worker in one process; with DATABASE_URL set it migrates that database first. For
# separate containers run `node src/cli.ts web` and `node src/cli.ts worker` (see compose.yaml).
CMD ["node", "src/cli.ts", "serve"]
