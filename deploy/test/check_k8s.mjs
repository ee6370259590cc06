// Checks Drape's Kubernetes manifests and compose trial (tests/test_deploy.c runs it).
//
//   node deploy/test/check_k8s.mjs schema FILE...
//       every document against the Kubernetes API schemas (kubernetes-models,
//       and prometheus-operator's models for the ServiceMonitor);
//       Kustomization files are skipped (kustomize itself reads them)
//   node deploy/test/check_k8s.mjs strict FILE...
//       unknown fields (a misspelt readinessProbe passes the schemas, which
//       allow extra properties): every document is type-checked as an object
//       literal of the model's TypeScript interface (tsc's excess-property check)
//   node deploy/test/check_k8s.mjs overlay NAME RENDERED.yaml HELP.txt ADAPTER.yaml METRICS.txt
//       a rendered overlay (cpu or gpu): schemas, then how the objects fit
//       together and with draped (its --help and a real /metrics scrape)
//   node deploy/test/check_k8s.mjs compose COMPOSE.yaml HELP.txt NGINX_DIR
//       the compose trial: three replicas, nginx in front with drape.conf
//
// Prints every problem and exits 1, or one "ok" line.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, parse } from "yaml";

const problems = [];
let checks = 0;
function check(cond, msg) {
  checks++;
  if (!cond) problems.push(msg);
  return cond;
}

function docs(path) {
  const out = [];
  for (const d of parseAllDocuments(readFileSync(path, "utf8"))) {
    if (d.errors.length) problems.push(`${path}: ${d.errors.map((e) => e.message).join("; ")}`);
    const v = d.toJS();
    if (v !== null && v !== undefined) out.push(v);
  }
  return out;
}

// apiVersion/kind -> the model module that validates it
function modelPath(apiVersion, kind) {
  if (apiVersion.startsWith("monitoring.coreos.com/"))
    return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

async function validate(doc, where) {
  const what = `${where}: ${doc.kind}/${doc.metadata?.name}`;
  if (!check(doc.apiVersion && doc.kind, `${where}: a document without apiVersion/kind`)) return;
  if (doc.apiVersion.startsWith("kustomize.config.k8s.io/")) return;
  let mod;
  try {
    mod = await import(modelPath(doc.apiVersion, doc.kind));
  } catch {
    check(false, `${what}: unknown apiVersion/kind ${doc.apiVersion} ${doc.kind}`);
    return;
  }
  try {
    new mod[doc.kind](doc).validate();
    check(true, "");
  } catch (e) {
    check(false, `${what}: ${e.message}`);
  }
}

function strict(files) {
  const here = dirname(fileURLToPath(import.meta.url));
  const lines = [];
  const where = []; // line number -> document
  let n = 0;
  for (const f of files)
    for (const d of docs(f)) {
      if (!d.apiVersion || d.apiVersion.startsWith("kustomize.config.k8s.io/")) continue;
      const label = `${f}: ${d.kind}/${d.metadata?.name}`;
      lines.push(`import type { I${d.kind} as T${n} } from "${modelPath(d.apiVersion, d.kind)}";`);
      const body = `export const d${n}: T${n} = ${JSON.stringify(d, null, 1)};`.split("\n");
      body.forEach(() => where.push(label));
      lines.push(...body.map((l) => l));
      n++;
    }
  const imports = lines.filter((l) => l.startsWith("import "));
  const rest = lines.filter((l) => !l.startsWith("import "));
  const dir = mkdtempSync(join(tmpdir(), "drape-k8s-"));
  try {
    symlinkSync(join(here, "..", "node_modules"), join(dir, "node_modules"));
    writeFileSync(join(dir, "m.ts"), [...imports, ...rest].join("\n") + "\n");
    const tsc = join(here, "..", "node_modules", "typescript", "bin", "tsc");
    try {
      execFileSync(process.execPath, [tsc, "--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module",
        "esnext", "--moduleResolution", "bundler", "--pretty", "false", join(dir, "m.ts")], { encoding: "utf8" });
      check(true, "");
    } catch (e) {
      for (const l of String(e.stdout).split("\n").filter(Boolean)) {
        const m = l.match(/m\.ts\((\d+),\d+\): (.*)/);
        const line = m ? Number(m[1]) - imports.length - 1 : -1;
        check(false, m ? `${where[line] ?? "?"}: ${m[2]}` : l);
      }
    }
    checks += n;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function helpVars(helpPath) {
  const text = readFileSync(helpPath, "utf8");
  return new Set(text.match(/\bDRAPE_[A-Z0-9_]+\b/g) || []);
}

const sameLabels = (sel, labels) => Object.entries(sel || {}).every(([k, v]) => labels?.[k] === v);

async function schema(files) {
  for (const f of files) for (const d of docs(f)) await validate(d, f);
}

async function overlay(name, rendered, helpPath, adapterPath, metricsPath) {
  const all = docs(rendered);
  for (const d of all) await validate(d, `${name} overlay`);
  const one = (kind) => {
    const l = all.filter((d) => d.kind === kind);
    check(l.length === 1, `${name}: expected one ${kind}, found ${l.length}`);
    return l[0] || {};
  };
  const dep = one("Deployment"), svc = one("Service"), pdb = one("PodDisruptionBudget");
  const hpa = one("HorizontalPodAutoscaler"), sm = one("ServiceMonitor"), ing = one("Ingress");
  const cm = one("ConfigMap");
  const vars = helpVars(helpPath);
  const pod = dep.spec?.template ?? {};
  const podLabels = pod.metadata?.labels ?? {};
  const c = pod.spec?.containers?.[0] ?? {};
  const cfg = cm.data ?? {};

  // the ConfigMap holds draped's variables and nothing else
  for (const k of Object.keys(cfg)) check(vars.has(k), `${name}: ConfigMap key ${k} is not a draped variable`);
  for (const e of c.env ?? []) check(vars.has(e.name), `${name}: env ${e.name} is not a draped variable`);
  check(c.envFrom?.some((e) => e.configMapRef?.name === cm.metadata?.name), `${name}: the container does not read the ConfigMap`);
  const want = { cpu: "cpu", gpu: "cuda" }[name];
  check(cfg.DRAPE_BACKEND === want, `${name}: DRAPE_BACKEND is ${cfg.DRAPE_BACKEND}, expected ${want}`);
  check(c.env?.some((e) => e.name === "DRAPE_INSTANCE" && e.valueFrom?.fieldRef?.fieldPath === "metadata.name"),
    `${name}: X-Drape-Instance should name the pod (DRAPE_INSTANCE from metadata.name)`);

  // probes, drain, resources, security
  const port = c.ports?.find((p) => p.name === "http");
  check(port && String(port.containerPort) === String(cfg.DRAPE_PORT), `${name}: containerPort differs from DRAPE_PORT`);
  check(c.readinessProbe?.httpGet?.path === "/readyz", `${name}: readiness is not on /readyz`);
  check(c.livenessProbe?.httpGet?.path === "/healthz", `${name}: liveness is not on /healthz`);
  const pre = c.lifecycle?.preStop;
  const preS = pre?.sleep?.seconds ?? Number(pre?.exec?.command?.find((t) => /^\d+$/.test(t)));
  check(preS > 0, `${name}: no preStop pause before SIGTERM`);
  const grace = pod.spec?.terminationGracePeriodSeconds;
  const drain = Number(cfg.DRAPE_DRAIN_MS ?? 5000) / 1000;
  check(grace >= preS + drain + 5, `${name}: terminationGracePeriodSeconds ${grace} < preStop ${preS} s + drain ${drain} s + 5 s`);
  for (const part of ["requests", "limits"])
    for (const r of ["cpu", "memory"]) check(c.resources?.[part]?.[r], `${name}: no ${part}.${r}`);
  const gpus = c.resources?.limits?.["nvidia.com/gpu"];
  if (name === "gpu") {
    check(Number(gpus) === 1, `${name}: limits nvidia.com/gpu should be 1`);
    check(Number(c.resources?.requests?.["nvidia.com/gpu"]) === 1, `${name}: requests nvidia.com/gpu should be 1`);
  } else check(gpus === undefined, `${name}: a CPU replica requests a GPU`);
  check(pod.spec?.securityContext?.runAsNonRoot === true, `${name}: runAsNonRoot is not set`);
  check(/-(cpu|cuda)$/.test(c.image ?? "") && c.image.endsWith(name === "gpu" ? "-cuda" : "-cpu"),
    `${name}: image ${c.image} is not the ${name} flavor`);

  // selectors and references line up
  check(sameLabels(dep.spec?.selector?.matchLabels, podLabels), `${name}: the Deployment's selector misses its pods`);
  check(sameLabels(svc.spec?.selector, podLabels), `${name}: the Service does not select the pods`);
  check(sameLabels(pdb.spec?.selector?.matchLabels, podLabels), `${name}: the PodDisruptionBudget does not select the pods`);
  const svcPort = svc.spec?.ports?.find((p) => p.targetPort === "http");
  check(svcPort, `${name}: the Service does not target the http port`);
  check(sameLabels(sm.spec?.selector?.matchLabels, svc.metadata?.labels), `${name}: the ServiceMonitor does not select the Service`);
  check(sm.spec?.endpoints?.some((e) => e.port === svcPort?.name && e.path === "/metrics"),
    `${name}: the ServiceMonitor does not scrape /metrics on the Service's port`);
  check(hpa.spec?.scaleTargetRef?.kind === "Deployment" && hpa.spec?.scaleTargetRef?.name === dep.metadata?.name,
    `${name}: the HPA does not scale the Deployment`);
  const be = ing.spec?.rules?.[0]?.http?.paths?.[0]?.backend?.service;
  check(be?.name === svc.metadata?.name && (be?.port?.name === svcPort?.name || be?.port?.number === svcPort?.port),
    `${name}: the Ingress does not route to the Service`);

  // ingress-nginx: consistent hashing on the hint, long WebSocket timeouts
  const an = ing.metadata?.annotations ?? {};
  check(an["nginx.ingress.kubernetes.io/upstream-hash-by"] === "$arg_identity", `${name}: Ingress does not hash on $arg_identity`);
  for (const t of ["proxy-read-timeout", "proxy-send-timeout"])
    check(Number(an[`nginx.ingress.kubernetes.io/${t}`]) >= 3600, `${name}: Ingress ${t} below 3600 s`);
  check(ing.spec?.ingressClassName === "nginx", `${name}: the Ingress is not for ingress-nginx`);

  // the HPA's metric is the one the adapter rule makes, from a histogram draped exports
  const m = hpa.spec?.metrics?.find((x) => x.type === "Pods");
  check(m, `${name}: the HPA has no Pods metric`);
  const adapter = docs(adapterPath).find((d) => d.kind === "ConfigMap");
  const rules = parse(adapter?.data?.["config.yaml"] ?? "")?.rules ?? [];
  const rule = rules.find((r) => r.name?.as === m?.pods?.metric?.name);
  if (check(rule, `${name}: no prometheus-adapter rule makes ${m?.pods?.metric?.name}`)) {
    const series = (rule.seriesQuery.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)/) || [])[1];
    const metrics = readFileSync(metricsPath, "utf8");
    check(series && new RegExp(`^${series}\\{`, "m").test(metrics), `${name}: draped's /metrics has no ${series}`);
    check(/^# TYPE drape_frame_queue_seconds histogram$/m.test(metrics), `${name}: drape_frame_queue_seconds is not a histogram`);
    check(new RegExp(`^${rule.name.matches.replace(/^\^|\$$/g, "")}$`).test(series), `${name}: the rule's name.matches misses ${series}`);
    check(/histogram_quantile\(0\.99, sum by \(le, <<\.GroupBy>>\) \(rate\(<<\.Series>>\{<<\.LabelMatchers>>\}\[1m\]\)\)\)/.test(rule.metricsQuery),
      `${name}: unexpected metricsQuery ${rule.metricsQuery}`);
    check(rule.resources?.overrides?.pod?.resource === "pod" && rule.resources?.overrides?.namespace?.resource === "namespace",
      `${name}: the rule does not map the pod and namespace labels`);
  }
}

function compose(path, helpPath, nginxDir) {
  const c = parse(readFileSync(path, "utf8"), { merge: true });
  const vars = helpVars(helpPath);
  const svcs = c.services ?? {};
  const replicas = Object.keys(svcs).filter((k) => /^draped-\d+$/.test(k));
  check(replicas.length === 3, `compose: ${replicas.length} draped replicas, expected 3`);
  const instances = new Set();
  for (const r of replicas) {
    const s = svcs[r];
    const env = Array.isArray(s.environment)
      ? Object.fromEntries(s.environment.map((e) => e.split("=")))
      : { ...(s.environment ?? {}) };
    const all = env;
    for (const k of Object.keys(all)) check(vars.has(k), `compose: ${r}: ${k} is not a draped variable`);
    instances.add(all.DRAPE_INSTANCE);
    check((s.build?.dockerfile ?? "Dockerfile") === "Dockerfile" || s.image, `compose: ${r} is not built from the Dockerfile`);
    check(s.healthcheck === undefined || JSON.stringify(s.healthcheck).includes("/healthz"), `compose: ${r}: healthcheck`);
    check(String(s.stop_grace_period ?? "").match(/^\d+s$/) && parseInt(s.stop_grace_period) >= 10,
      `compose: ${r}: stop_grace_period should cover the drain (>= 10s)`);
  }
  check(instances.size === 3 && !instances.has(undefined), "compose: each replica needs its own DRAPE_INSTANCE");
  const ng = svcs.nginx;
  if (check(ng, "compose: no nginx service")) {
    check(/^nginx:\d+\.\d+(\.\d+)?(-[a-z0-9]+)?$/.test(ng.image ?? ""), `compose: nginx image ${ng.image} is not pinned by a tag`);
    const vols = (ng.volumes ?? []).map(String);
    check(vols.some((v) => v.startsWith("./nginx/drape.conf:")), "compose: nginx does not mount nginx/drape.conf");
    check(vols.some((v) => v.startsWith("./nginx/drape:")), "compose: nginx does not mount nginx/drape/");
    for (const r of replicas)
      check(ng.depends_on?.[r]?.condition === "service_healthy", `compose: nginx does not wait for ${r} to be healthy`);
  }
  // nginx's upstream lists exactly the compose replicas, on DRAPE_PORT
  const ups = readFileSync(`${nginxDir}/drape/replicas.upstream`, "utf8");
  const servers = [...ups.matchAll(/^\s*server\s+([^\s;]+)/gm)].map((m) => m[1]);
  const port = c["x-draped"]?.environment?.DRAPE_PORT ?? "8080";
  check(JSON.stringify(servers.sort()) === JSON.stringify(replicas.sort().map((r) => `${r}:${port}`)),
    `compose: replicas.upstream lists ${servers}, compose has ${replicas} on ${port}`);
}

const [mode, ...args] = process.argv.slice(2);
if (mode === "schema") await schema(args);
else if (mode === "strict") strict(args);
else if (mode === "overlay") await overlay(...args);
else if (mode === "compose") compose(...args);
else problems.push(`unknown mode ${mode}`);

if (problems.length) {
  for (const p of problems) console.log(`${mode}: ${p}`);
  process.exit(1);
}
console.log(`${mode}: ok (${checks} checks)`);
