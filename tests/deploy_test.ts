/**
 * The deployment files say what the service does: `deploy/haproxy.cfg` is valid for
 * Debian's haproxy (`haproxy -c`), and `deploy/kubernetes/nnserve.yaml` runs the replicas
 * with the probes, the shutdown grace, the replica name and the settings (from a Secret) the
 * service reads, non-root, behind a balancer configured for every replica.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { DEFAULT_SHUTDOWN_TIMEOUT_SECONDS } from "../server.ts";

const DEPLOY = new URL("../deploy/", import.meta.url).pathname;

Deno.test("deploy/haproxy.cfg is valid for haproxy", async () => {
  const check = await new Deno.Command("haproxy", {
    args: ["-c", "-f", `${DEPLOY}haproxy.cfg`],
    env: {
      NNSERVE_LB_BIND: "127.0.0.1:8080",
      NNSERVE_REPLICA_1: "127.0.0.1:8081",
      NNSERVE_REPLICA_2: "127.0.0.1:8082",
      NNSERVE_REPLICA_3: "127.0.0.1:8083",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(check.stdout) + new TextDecoder().decode(check.stderr);
  strictEqual(check.code, 0, text);
  ok(!/WARNING/.test(text), text);
});

// deno-lint-ignore no-explicit-any
type Doc = any;

Deno.test("deploy/kubernetes/nnserve.yaml runs the replicas as the service expects", async () => {
  const docs: Doc[] = parseAllDocuments(await Deno.readTextFile(`${DEPLOY}kubernetes/nnserve.yaml`))
    .map((d) => d.toJS());
  const kinds = docs.map((d) => `${d.kind}/${d.metadata.name}`);
  for (
    const kind of [
      "Secret/nnserve",
      "StatefulSet/nnserve",
      "Service/nnserve",
      "PodDisruptionBudget/nnserve",
      "Deployment/nnserve-balancer",
      "Service/nnserve-balancer",
    ]
  ) {
    ok(kinds.includes(kind), `${kind} in ${kinds}`);
  }
  const set = docs.find((d) => d.kind === "StatefulSet");
  const pod = set.spec.template.spec;
  const container = pod.containers[0];
  strictEqual(container.readinessProbe.httpGet.path, "/readyz");
  strictEqual(container.livenessProbe.httpGet.path, "/livez");
  ok(pod.terminationGracePeriodSeconds > DEFAULT_SHUTDOWN_TIMEOUT_SECONDS, "SIGTERM drains first");
  ok(pod.securityContext.runAsNonRoot);
  deepStrictEqual(
    container.env.find((e: Doc) => e.name === "NNSERVE_REPLICA").valueFrom.fieldRef.fieldPath,
    "metadata.name",
  );
  strictEqual(container.envFrom[0].secretRef.name, "nnserve");
  const secret = docs.find((d) => d.kind === "Secret");
  const configuration = await Deno.readTextFile(
    new URL("../docs/configuration.md", import.meta.url),
  );
  for (const name of Object.keys(secret.stringData)) {
    ok(
      name.startsWith("AWS_") || configuration.includes(`\`${name}\``),
      `${name} is a variable of docs/configuration.md`,
    );
  }
  for (const name of ["NNSERVE_DATABASE_URL", "NNSERVE_S3_BUCKET"]) {
    ok(name in secret.stringData, name);
  }
  const balancer = docs.find((d) =>
    d.kind === "ConfigMap" && d.metadata.name === "nnserve-balancer"
  );
  const listed = Object.keys(balancer.data).filter((k) => k.startsWith("NNSERVE_REPLICA_"));
  strictEqual(listed.length, set.spec.replicas, "the balancer lists every replica");
  const config = await Deno.readTextFile(`${DEPLOY}haproxy.cfg`);
  for (const name of Object.keys(balancer.data)) ok(config.includes(`\${${name}}`), name);
});
