# nnserve container: the service on port 8080 with its state in the /data volume.
FROM denoland/deno:2.9.6
WORKDIR /app
COPY deno.json deno.lock ./
COPY . .
RUN deno install --frozen && deno cache main.ts driver/executor_worker.ts \
    && mkdir -p /data && chown deno:deno /data
ENV PORT=8080 HOST=0.0.0.0 NNSERVE_DATA_DIR=/data
VOLUME /data
EXPOSE 8080
USER deno
CMD ["task", "start"]
