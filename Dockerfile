# The production image: one image for the API (`npm run server`), the worker (`npm run worker`) and
# the one-off migration (`npm run migrate`). Node 24 runs the TypeScript sources directly (type
# stripping). A production install (`npm ci --omit=dev`) leaves out the development packages: the
# embedded PostgreSQL and S3 store (nothing is embedded in production: the service refuses to start
# without DATABASE_URL, the S3 settings, JWT_SECRET and an OTP sender), pino-pretty, the test tools
# and the pinned `node` package (the image's own Node 24 runs the scripts).
FROM node:24-bookworm-slim
# libheif's heif-convert: the worker decodes HEIC uploads with it (IMAGE_HEIC).
RUN apt-get update && apt-get install -y --no-install-recommends libheif-examples && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY config.ts logger.ts bounded-map.ts main.ts ./
COPY db ./db
COPY migrations ./migrations
COPY server ./server
COPY worker ./worker
COPY web ./web
USER node
# 3000: the API; 9464: Prometheus metrics (METRICS_PORT, bound to METRICS_HOST, loopback by default).
EXPOSE 3000 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
CMD ["npm", "run", "server"]
