# nnserve container: the service on port 8080 with its state in the /data volume and its
# model repository in /models (empty here: COPY models there in an image built FROM this one,
# or mount a directory on it).
FROM denoland/deno:2.9.6
# The service's npm packages in a layer of their own, rebuilt only when the dependencies
# change: deno.json cut to the service's imports (tools/image_deps.ts; the test and benchmark
# packages never enter the image) and the lock pruned to them at the locked versions.
WORKDIR /deps
COPY deno.json deno.lock tools/image_deps.ts ./
RUN deno run --allow-read=. --allow-write=. image_deps.ts && deno install
WORKDIR /app
COPY . .
# The sources with the cut config, cached (no downloads: --frozen fails if one were needed),
# including the workers the service starts by URL.
RUN cp /deps/deno.json /deps/deno.lock ./ \
    && deno cache --frozen main.ts driver/execution/executors/worker.ts driver/execution/executors/spawner.ts \
       kernels/lane_worker.ts converter/onnx/worker.ts \
       driver/execution/precise_timer/worker.ts \
    && mkdir -p /data /models && chown deno:deno /data
ENV PORT=8080 HOST=0.0.0.0 NNSERVE_DATA_DIR=/data NNSERVE_MODEL_REPOSITORY=/models
VOLUME /data /models
EXPOSE 8080
USER deno
# Healthy once ready: state open and the model repository compiled (`/readyz`).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD ["deno", "eval", "const r = await fetch(`http://127.0.0.1:${Deno.env.get('PORT') ?? 8080}/readyz`); Deno.exit(r.ok ? 0 : 1)"]
CMD ["task", "start"]
