# nnserve container: the service on port 8080 with its state in the /data volume and its
# model repository in /models (empty here: COPY models there in an image built FROM this one,
# or mount a directory on it).
FROM denoland/deno:2.9.6
WORKDIR /app
COPY deno.json deno.lock ./
COPY . .
RUN deno install --frozen && deno cache main.ts driver/executor_worker.ts \
    && mkdir -p /data /models && chown deno:deno /data
ENV PORT=8080 HOST=0.0.0.0 NNSERVE_DATA_DIR=/data NNSERVE_MODEL_REPOSITORY=/models
VOLUME /data /models
EXPOSE 8080
USER deno
# Healthy once ready: state open and the model repository compiled (`/readyz`).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD ["deno", "eval", "const r = await fetch(`http://127.0.0.1:${Deno.env.get('PORT') ?? 8080}/readyz`); Deno.exit(r.ok ? 0 : 1)"]
CMD ["task", "start"]
