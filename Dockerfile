# The API in a container: `docker compose up --build` (see docker-compose.yml and README).
FROM node:24-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY config ./config
COPY migrations ./migrations
COPY src ./src
COPY scripts ./scripts
COPY widget ./widget
COPY tsconfig.json ./
# Compiled once in the image (as `npm start` does before it starts): the container runs plain node.
RUN node scripts/build.mjs --verbose
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3030 DATA_DIR=/data
EXPOSE 3030
VOLUME /data
# node itself (not npm or a shell) is the process the runtime signals: SIGTERM shuts down gracefully.
# The node options are the start script's (package.json).
CMD ["node", "--heap-growing-percent=100", "dist/src/index.js"]
