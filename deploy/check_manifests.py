"""What must agree across forkbox's deploy files, beyond what the Kubernetes schemas check.

    python check_manifests.py CONTAINERFILE RENDERED.yaml...

Each RENDERED.yaml is one overlay as `kustomize build` prints it. Prints one line per problem
and exits 1 if there is any.
"""

import re
import sys
from pathlib import Path

import yaml

# Slack between the drain's grace period and the pod's: deleting the remaining forks and
# exiting take time after the drain itself has ended.
DELETE_MARGIN_SECS = 10

problems = []


def problem(where, msg):
    problems.append(f"{where}: {msg}")


def flag(args, name):
    """The value of `--name=value` (or `--name value`) in a container's args, else None."""
    for i, a in enumerate(args):
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
        if a == f"--{name}" and i + 1 < len(args):
            return args[i + 1]
    return None


def port_of(addr):
    m = re.fullmatch(r".*:(\d+)", addr or "")
    return int(m.group(1)) if m else None


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).get("matchLabels", {}).items())


def check_container(where, c, pod_sc):
    sc = c.get("securityContext") or {}
    if sc.get("allowPrivilegeEscalation") is not False:
        problem(where, "allowPrivilegeEscalation must be false")
    if sc.get("readOnlyRootFilesystem") is not True:
        problem(where, "readOnlyRootFilesystem must be true")
    if sc.get("privileged"):
        problem(where, "must not be privileged")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        problem(where, "capabilities must drop ALL")
    if (sc.get("capabilities") or {}).get("add"):
        problem(where, "must add no capabilities")
    if not (sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot")):
        problem(where, "must run as non-root")
    if sc.get("runAsUser", pod_sc.get("runAsUser")) in (None, 0):
        problem(where, "runAsUser must be a non-zero id")
    res = c.get("resources") or {}
    for kind in ("requests", "limits"):
        for r in ("cpu", "memory"):
            if r not in (res.get(kind) or {}):
                problem(where, f"resources.{kind}.{r} missing")


def check_overlay(path):
    name = Path(path).stem
    docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)

    deps = [d for d in by_kind.get("Deployment", []) if d["metadata"]["name"] == "forkbox"]
    if len(deps) != 1:
        problem(name, "exactly one Deployment named forkbox expected")
        return
    dep = deps[0]
    spec = dep["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"].get("labels", {})
    where = f"{name}: Deployment/forkbox"

    if spec.get("replicas", 1) < 2:
        problem(where, "needs several replicas")
    if not selects(spec["selector"], labels):
        problem(where, "selector does not select its own pods")

    pod_sc = pod.get("securityContext") or {}
    if (pod_sc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
        problem(where, "pod seccompProfile must be RuntimeDefault")
    if pod.get("automountServiceAccountToken") is not False:
        problem(where, "the service account token must not be mounted")
    for c in pod.get("initContainers", []) + pod["containers"]:
        check_container(f"{where}: container {c['name']}", c, pod_sc)

    servers = [c for c in pod["containers"] if (c.get("args") or [None])[0] == "serve"]
    if len(servers) != 1:
        problem(where, "one container must run `forkbox serve`")
        return
    c = servers[0]
    args = c["args"]

    # Every $(VAR) in the args is defined, or Kubernetes passes it through literally.
    config = {}
    for cm in by_kind.get("ConfigMap", []):
        for ref in c.get("envFrom", []):
            if (ref.get("configMapRef") or {}).get("name") == cm["metadata"]["name"]:
                config.update(cm.get("data") or {})
    secret_refs = [
        (r.get("secretRef") or {}).get("name") for r in c.get("envFrom", []) if r.get("secretRef")
    ]
    defined = set(config) | {e["name"] for e in c.get("env", [])}
    for a in args:
        for var in re.findall(r"\$\((\w+)\)", a):
            if var not in defined:
                problem(where, f"{a}: ${var} is defined by no env or ConfigMap entry")

    def resolved(value):
        return re.sub(r"\$\((\w+)\)", lambda m: str(config.get(m.group(1), m.group(0))), value or "")

    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    ssh_port = port_of(flag(args, "listen"))
    http_port = port_of(flag(args, "http-listen"))
    if ssh_port is None or ports.get("ssh") != ssh_port:
        problem(where, f"the ssh containerPort must be the --listen port ({ssh_port})")
    if http_port is None or ports.get("http") != http_port:
        problem(where, f"the http containerPort must be the --http-listen port ({http_port})")

    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = (c.get(probe) or {}).get("httpGet") or {}
        port = get.get("port")
        port = ports.get(port, port) if isinstance(port, str) else port
        if get.get("path") != path or port != http_port:
            problem(where, f"{probe} must GET {path} on the --http-listen port")
        if http_port == ssh_port:
            problem(where, "probes must use a port separate from SSH")

    drain = resolved(flag(args, "drain-grace"))
    if not drain.isdigit():
        problem(where, f"--drain-grace must be a number of seconds, not {drain!r}")
    else:
        grace = pod.get("terminationGracePeriodSeconds", 30)
        if grace < int(drain) + DELETE_MARGIN_SECS:
            problem(
                where,
                f"terminationGracePeriodSeconds {grace} leaves the {drain} s drain less than "
                f"{DELETE_MARGIN_SECS} s to delete forks and exit",
            )

    # The host key comes from one Secret, so every replica presents the same key.
    key = flag(args, "host-key")
    mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    from_secret = [
        n for n, p in mounts.items()
        if key and key.startswith(p.rstrip("/") + "/") and "secret" in volumes.get(n, {})
    ]
    if not from_secret:
        problem(where, "--host-key must be a file of a mounted Secret volume")

    if flag(args, "backend") == "s3" and "forkbox-store" not in secret_refs:
        problem(where, "store credentials must come from the Secret forkbox-store")
    for key_name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        if key_name in config:
            problem(name, f"ConfigMap holds {key_name}: credentials belong in a Secret")

    # The PodDisruptionBudget, Services and NetworkPolicy are about these pods.
    pdbs = [p for p in by_kind.get("PodDisruptionBudget", []) if selects(p["spec"]["selector"], labels)]
    if not pdbs:
        problem(name, "no PodDisruptionBudget selects the forkbox pods")
    lbs = [
        s for s in by_kind.get("Service", [])
        if s["spec"].get("type") == "LoadBalancer" and all(labels.get(k) == v for k, v in s["spec"]["selector"].items())
    ]
    if not any(p["port"] == 22 and p.get("targetPort") in ("ssh", ssh_port) for s in lbs for p in s["spec"]["ports"]):
        problem(name, "no LoadBalancer Service sends port 22 to the ssh port")
    for s in by_kind.get("Service", []):
        if s["spec"].get("type") == "LoadBalancer":
            for p in s["spec"]["ports"]:
                if p.get("targetPort") in ("http", http_port):
                    problem(name, f"Service/{s['metadata']['name']} exposes metrics outside the cluster")
    policies = [n for n in by_kind.get("NetworkPolicy", []) if selects(n["spec"]["podSelector"], labels)]
    if not policies:
        problem(name, "no NetworkPolicy selects the forkbox pods")
    for n in policies:
        types = n["spec"].get("policyTypes", [])
        if "Ingress" not in types or "Egress" not in types:
            problem(name, f"NetworkPolicy/{n['metadata']['name']} must restrict both ingress and egress")
        in_ports = {p.get("port") for r in n["spec"].get("ingress", []) for p in r.get("ports", [])}
        if ssh_port not in in_ports or http_port not in in_ports:
            problem(name, f"NetworkPolicy/{n['metadata']['name']} must admit SSH and metrics")
        for r in n["spec"].get("egress", []):
            if not r.get("ports"):
                problem(name, f"NetworkPolicy/{n['metadata']['name']} has an egress rule open on every port")


def check_containerfile(path):
    text = Path(path).read_text()
    stages = re.split(r"(?m)^FROM\s", text)[1:]
    if len(stages) < 2:
        problem(path, "a multi-stage build is expected (build, then a small runtime)")
    for m in re.finditer(r"(?m)^FROM\s+(\S+)", text):
        image = m.group(1)
        if ":" not in image.split("/")[-1] or image.endswith(":latest"):
            problem(path, f"FROM {image}: pin a tag")
    if "--locked" not in text:
        problem(path, "cargo must build with --locked")
    final = stages[-1] if stages else ""
    users = re.findall(r"(?m)^USER\s+(\S+)", final)
    if not users or users[-1].split(":")[0] in ("0", "root"):
        problem(path, "the runtime stage must end as a non-root USER")
    elif not users[-1].split(":")[0].isdigit():
        problem(path, "USER must be numeric so runAsNonRoot can verify it")


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    check_containerfile(argv[1])
    for path in argv[2:]:
        check_overlay(path)
    for p in problems:
        print(f"deploy/check: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
