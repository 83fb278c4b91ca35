"""Runs what the chart's rendered broker StatefulSet would run, without Kubernetes.

Each pod becomes a local process in its own network namespace (its own address, so every pod
uses the ports the manifest names), with an /etc/hosts (`/etc/netns/NAME/hosts`, which
`ip netns exec` mounts) mapping every pod's DNS name and the client Service's to the pods'
addresses. The container's command and args are taken from the manifest as they are, with the
environment its fieldRefs give (POD_NAME, POD_INDEX) expanded the way Kubernetes expands
`$(VAR)`, the ConfigMap's files at their mount path and an empty data directory for the
volume claim. Then, as Kubernetes would: the readiness probe must pass on every pod, and a
client inside the network must find the cluster through the Service name, see every broker
and the quorum, create a replicated topic and read back what it wrote.

With --pipelines, the rendered pipeline Deployments' pods run too, next to the brokers (their
pods named <deployment>-sim-<n>; Secrets played by SECRETS below): each must pass its readiness
probe, lines are POSTed to every copy of an http source (as its Service would spread them), and
each sink must get every line exactly once — a stdout sink split between the copies by
partition, a kafka sink (one writer) on the topic its ${VAR} names.

With values that turn `security` on (TLS, SCRAM, ACLs), the Secrets the chart names are made
here (a CA and the brokers' certificate with openssl, the users' passwords), the security Job's
script runs once the brokers are ready — and again, changing nothing — and the client checks
log in as the super user `admin`; then what must be refused is: a PLAINTEXT client, a wrong
password, a client without a certificate on the INTERNAL listener, and the pipeline's user
creating a topic or reading one no ACL gives it.

Usage: python simulate_pods.py HELM CHART WEIR [VALUES [--pipelines]]   (root: network namespaces)
"""

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

NAMESPACE = "streams"
RELEASE = "demo"
# The Secrets the values name: name → key → value (the TLS Secret is added by make_tls_secret).
SECRETS = {
    "web-output": {"topic": "web-copied"},
    "weir-users": {"admin": "admin-secret", "web": "web-secret"},
}
LINES = 2000


def sh(*args, **kwargs):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs)


def render(helm, chart, values):
    args = [helm, "template", RELEASE, chart, "--namespace", NAMESPACE]
    if values:
        args += ["-f", values]
    docs = [d for d in yaml.safe_load_all(sh(*args).stdout) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


class Network:
    """A bridge and one namespace per pod, each with its own address and hosts file."""

    def __init__(self, names, hosts):
        tag = os.getpid() % 1000
        self.prefix = f"wpod{tag}"
        self.subnet = f"10.124.{tag % 250}"
        self.names = names
        self.bridge = f"{self.prefix}br"
        self.remove()
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{self.subnet}.254/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        lines = [f"127.0.0.1 localhost"]
        for index, name in enumerate(names):
            lines.append(f"{self.address(index)} {name}")
        for alias, index in hosts.items():
            lines.append(f"{self.address(index)} {alias}")
        for index in range(len(names)):
            namespace, outside = self.namespace(index), f"{self.prefix}v{index}"
            sh("ip", "netns", "add", namespace)
            sh("ip", "link", "add", outside, "type", "veth", "peer", "name", "eth0",
               "netns", namespace)
            sh("ip", "link", "set", outside, "master", self.bridge)
            sh("ip", "link", "set", outside, "up")
            inside = ["ip", "netns", "exec", namespace, "ip"]
            sh(*inside, "addr", "add", f"{self.address(index)}/24", "dev", "eth0")
            sh(*inside, "link", "set", "eth0", "up")
            sh(*inside, "link", "set", "lo", "up")
            os.makedirs(f"/etc/netns/{namespace}", exist_ok=True)
            with open(f"/etc/netns/{namespace}/hosts", "w") as hosts_file:
                hosts_file.write("\n".join(lines) + "\n")

    def namespace(self, index):
        return f"{self.prefix}-{index}"

    def address(self, index):
        return f"{self.subnet}.{index + 1}"

    def remove(self):
        for index in range(len(self.names)):
            subprocess.run(["ip", "netns", "del", self.namespace(index)], capture_output=True)
            shutil.rmtree(f"/etc/netns/{self.namespace(index)}", ignore_errors=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


def field_env(container, pod_name, ordinal):
    """The container's environment as Kubernetes would set it for this pod."""
    fields = {
        "metadata.name": pod_name,
        "metadata.namespace": NAMESPACE,
        "metadata.labels['apps.kubernetes.io/pod-index']": str(ordinal),
    }
    env = {}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        elif "secretKeyRef" in var["valueFrom"]:
            ref = var["valueFrom"]["secretKeyRef"]
            env[var["name"]] = SECRETS[ref["name"]][ref["key"]]
        else:
            path = var["valueFrom"]["fieldRef"]["fieldPath"]
            if path not in fields:
                raise SystemExit(f"unsupported fieldRef {path}")
            env[var["name"]] = fields[path]
    return env


def expand(arg, env):
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m[1], m[0]), arg)


def pod_command(workload, configmaps, weir, pod_name, ordinal, root):
    """The pod's process: command and args with the mounts moved under `root`, and the
    environment the manifest gives it."""
    spec = workload["spec"]["template"]["spec"]
    container = spec["containers"][0]
    env = field_env(container, pod_name, ordinal)
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    mounts = {mount["mountPath"]: os.path.join(root, mount["name"])
              for mount in container.get("volumeMounts", [])}

    def moved(text):
        # Longest mount paths first: /etc/weir/tls before /etc/weir.
        for mount_path in sorted(mounts, key=len, reverse=True):
            text = text.replace(mount_path, mounts[mount_path])
        return text

    for mount in container.get("volumeMounts", []):
        local = mounts[mount["mountPath"]]
        os.makedirs(local, exist_ok=True)
        volume = volumes.get(mount["name"], {})
        if "configMap" in volume:
            files = configmaps[volume["configMap"]["name"]]["data"]
        elif "secret" in volume:
            data = SECRETS[volume["secret"]["secretName"]]
            items = volume["secret"].get("items") or [{"key": k, "path": k} for k in data]
            files = {item["path"]: data[item["key"]] for item in items}
        else:
            files = {}
        for path, text in files.items():
            with open(os.path.join(local, path), "w") as out:
                out.write(moved(text))
    command = container["command"]
    assert command[0] in ("weir", "sh"), command
    args = [moved(expand(arg, env)) for arg in command[1:] + container.get("args", [])]
    if command[0] == "sh":
        env["PATH"] = f"{os.path.dirname(os.path.abspath(weir))}:{os.environ['PATH']}"
        return ["sh"] + args, container, env
    return [weir] + args, container, env


def http_status(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except Exception:
        return None


def check_dashboard(chart, endpoints, pipelines):
    """Every metric the chart's Grafana dashboard queries is one the pods export: the
    brokers' (`pipelines` false) or the pipeline pods' (`weir_pipeline_*`), at `endpoints`
    ((address, port) pairs)."""
    with open(os.path.join(chart, "dashboards", "weir.json")) as dashboard_file:
        dashboard = json.load(dashboard_file)
    queried = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            queried.update(re.findall(r"\bweir_[a-z_]+", target["expr"]))
    queried = {m for m in queried if m.startswith("weir_pipeline_") == pipelines}
    exported = set()
    deadline = time.time() + 30
    while True:
        for address, port in endpoints:
            with urllib.request.urlopen(f"http://{address}:{port}/metrics", timeout=5) as scrape:
                exported.update(re.findall(r"^(weir_[a-z_]+)", scrape.read().decode(), re.M))
        missing = queried - exported
        if not missing:
            break
        if time.time() > deadline:
            raise SystemExit(f"the dashboard queries metrics no pod exports: {sorted(missing)}")
        time.sleep(1)
    print(f"pods: the dashboard's {len(queried)} {'pipeline' if pipelines else 'broker'} "
          f"metrics are all exported", file=sys.stderr)


class Client:
    """`weir` client commands inside the pods' network (namespace 0) through the client
    Service, secured as the brokers' CLIENT listener asks: TLS trusting the CA, SCRAM as a
    user of SECRETS (the super user `admin` unless told)."""

    def __init__(self, network, weir, bootstrap, protocol, mechanism, ca):
        self.prefix = ["ip", "netns", "exec", network.namespace(0), weir]
        self.bootstrap, self.protocol, self.mechanism, self.ca = bootstrap, protocol, mechanism, ca

    def login(self, user, password):
        if self.protocol == "PLAINTEXT":
            return []
        args = ["-X", f"security.protocol={self.protocol}", "-X", f"ssl.ca.location={self.ca}"]
        if self.protocol == "SASL_SSL":
            args += ["-X", f"sasl.mechanism={self.mechanism}", "-X", f"sasl.username={user}",
                     "-X", f"sasl.password={password}"]
        return args

    def run(self, *args, user="admin", password=None, bootstrap=None, login=None, check=True,
            input=None):
        if login is None:
            login = self.login(user, password or SECRETS["weir-users"].get(user, ""))
        command = self.prefix + list(args) + ["-b", bootstrap or self.bootstrap] + login
        result = subprocess.run(command, capture_output=True, text=True, input=input,
                                timeout=120)
        if check and result.returncode != 0:
            raise SystemExit(f"pods: weir {' '.join(args)} failed:\n{result.stderr[-3000:]}")
        return result


def make_tls_secret(work, secret_name, common_name, names):
    """The Secret a cert-manager Certificate would make: a CA, and a certificate for `names`
    (server and client auth) with `common_name`, as tls.crt, tls.key and ca.crt."""
    directory = os.path.join(work, "tls-secret")
    os.makedirs(directory)
    path = lambda name: os.path.join(directory, name)
    with open(path("ext"), "w") as ext:
        ext.write("subjectAltName=" + ",".join(f"DNS:{n}" for n in names) + "\n"
                  "extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n")
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("ca.key"),
       "-out", path("ca.crt"), "-days", "2", "-subj", "/CN=Weir simulation CA")
    sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("tls.key"),
       "-out", path("tls.csr"), "-subj", f"/CN={common_name}")
    sh("openssl", "x509", "-req", "-in", path("tls.csr"), "-CA", path("ca.crt"), "-CAkey",
       path("ca.key"), "-CAcreateserial", "-out", path("tls.crt"), "-days", "2", "-extfile",
       path("ext"))
    SECRETS[secret_name] = {}
    for key in ("tls.crt", "tls.key", "ca.crt"):
        with open(path(key)) as pem:
            SECRETS[secret_name][key] = pem.read()
    return path("ca.crt")


def run_security_job(pods, job, runs=2):
    """The security Job's pod, run `runs` times (an upgrade runs it again): each must succeed,
    and the last lists the users and the ACLs."""
    for run in range(runs):
        pod = pods.start(job, f"{job['metadata']['name']}-sim-{run}", 0)
        try:
            pod.process.wait(timeout=job["spec"]["activeDeadlineSeconds"])
        except subprocess.TimeoutExpired:
            raise SystemExit(f"pods: the security Job did not end:\n{pods.log(pod)[-3000:]}")
        if pod.process.returncode != 0:
            raise SystemExit(f"pods: the security Job failed (run {run + 1}):\n"
                             + pods.log(pod)[-3000:])
    return pods.log(pod)


def check_refusals(client, internal_address):
    """What a secured cluster must refuse, each with the reason the broker gives."""
    refusals = {
        "a PLAINTEXT client": client.run("cluster", "info", login=[], check=False),
        "a wrong password": client.run("cluster", "info", password="wrong", check=False),
        "no client certificate on INTERNAL": client.run(
            "cluster", "info", bootstrap=internal_address, check=False,
            login=["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={client.ca}"]),
        "the pipeline's user creating a topic": client.run(
            "topic", "create", "forbidden", user="web", check=False),
    }
    for what, result in refusals.items():
        if result.returncode == 0:
            raise SystemExit(f"pods: {what} was not refused:\n{result.stdout[-2000:]}")
    created = refusals["the pipeline's user creating a topic"].stderr
    assert "authoriz" in created.lower(), created
    assert "authentication" in refusals["a wrong password"].stderr.lower(), \
        refusals["a wrong password"].stderr
    # Topics the user may not describe are left out of what it is told.
    listed = client.run("topic", "list", user="web").stdout.split()
    assert "pods" not in listed and "pods" in client.run("topic", "list").stdout.split(), listed
    print(f"pods: refused as they must be: {', '.join(refusals)}; topic pods hidden from web",
          file=sys.stderr)


Pod = collections.namedtuple("Pod", "workload name index log_path container process")


class Pods:
    """The rendered pods, started as processes, each in its own network namespace."""

    def __init__(self, network, configmaps, weir, work):
        self.network, self.configmaps, self.weir, self.work = network, configmaps, weir, work
        self.started = []

    def start(self, workload, pod_name, index):
        """Starts `pod_name` of `workload` (a StatefulSet or Deployment) in namespace `index`."""
        root = os.path.join(self.work, pod_name)
        command, container, env = pod_command(workload, self.configmaps, self.weir,
                                              pod_name, index, root)
        log_path = os.path.join(self.work, f"{pod_name}.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.network.namespace(index)] + command,
                stdout=log, stderr=log, env={**os.environ, **env, "RUST_LOG": "info"})
        pod = Pod(workload["metadata"]["name"], pod_name, index, log_path, container, process)
        self.started.append(pod)
        return pod

    def log(self, pod):
        with open(pod.log_path) as log_file:
            return log_file.read()

    def stop(self):
        for pod in self.started:
            pod.process.kill()
            pod.process.wait()


def metrics_port(container):
    return next(p["containerPort"] for p in container["ports"] if p["name"] == "metrics")


def wait_until(what, check, logs, timeout=90):
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            raise SystemExit(f"pods: no {what} within {timeout} s\n{logs()[-6000:]}")
        time.sleep(0.5)


def port_open(address, port):
    import socket
    try:
        socket.create_connection((address, port), timeout=1).close()
        return True
    except OSError:
        return False


def post(address, port, path, body):
    request = urllib.request.Request(f"http://{address}:{port}{path}", data=body.encode(),
                                     method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


def check_pipelines(pods, pipeline_pods, deployments, client):
    """Each pipeline pod ready; lines POSTed to every copy land once in each sink."""
    all_logs = lambda: "\n".join(f"--- {pod.name}:\n{pods.log(pod)[-2500:]}"
                                  for pod in pipeline_pods)
    for pod in pipeline_pods:
        probe = pod.container["readinessProbe"]["tcpSocket"]
        port = next(p["containerPort"] for p in pod.container["ports"]
                    if p["name"] == probe["port"])
        address = pods.network.address(pod.index)
        wait_until(f"readiness of {pod.name}", lambda: port_open(address, port), all_logs)
    print(f"pods: {len(pipeline_pods)} pipeline pods ready", file=sys.stderr)
    for deployment in deployments:
        name = deployment["metadata"]["name"]
        config = yaml.safe_load(pods.configmaps[name]["data"]["pipeline.yaml"])
        copies = [pod for pod in pipeline_pods if pod.workload == name]
        port = int(config["source"]["listen"].rsplit(":", 1)[1])
        lines = [f"line-{n}" for n in range(LINES)]
        for request, start in enumerate(range(0, LINES, 100)):
            index = copies[request % len(copies)].index
            body = "".join(line + "\n" for line in lines[start:start + 100])
            status = post(pods.network.address(index), port, f"/ingest/{config['name']}", body)
            assert status == 200, status
        topic = SECRETS["web-output"]["topic"]
        copied = []

        def read_copied():
            # The sink creates the topic at its first commit.
            read = client.run("consume", topic, "--isolation", "read_committed", check=False)
            if read.returncode != 0:
                return False
            out = read.stdout
            copied[:] = [json.loads(line)["value"] for line in out.splitlines() if line]
            return len(copied) >= LINES

        wait_until(f"{LINES} lines copied to {topic}", read_copied, all_logs)
        assert sorted(copied) == sorted(lines), f"{len(copied)} copied, not each line once"
        printed = {}

        def read_printed():
            for pod in copies:
                printed[pod.name] = [json.loads(line)["value"]
                                     for line in pods.log(pod).splitlines()
                                     if line.startswith('{"value":')]
            return sum(len(rows) for rows in printed.values()) >= LINES

        wait_until(f"{LINES} lines printed", read_printed, all_logs)
        every = [row for rows in printed.values() for row in rows]
        assert sorted(every) == sorted(lines), f"{len(every)} printed, not each line once"
        assert all(printed.values()), f"a copy printed nothing: { {p: len(r) for p, r in printed.items()} }"
        print(f"pods: pipeline {config['name']}: {LINES} lines POSTed to {len(copies)} copies, "
              f"copied once to {topic}, printed once "
              f"({', '.join(str(len(r)) for r in printed.values())} by copy)", file=sys.stderr)


def main():
    # A SIGTERM (a timeout) still removes the namespaces and stops the pods.
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("pods: terminated"))
    helm, chart, weir = sys.argv[1:4]
    values = sys.argv[4] if len(sys.argv) > 4 else None
    run_pipelines = "--pipelines" in sys.argv[5:]
    objects = render(helm, chart, values)
    statefulset = next(o for (kind, _), o in objects.items() if kind == "StatefulSet")
    configmaps = {name: o for (kind, name), o in objects.items() if kind == "ConfigMap"}
    services = {name: o for (kind, name), o in objects.items() if kind == "Service"}
    name = statefulset["metadata"]["name"]
    replicas = statefulset["spec"]["replicas"]
    headless = statefulset["spec"]["serviceName"]
    # The pods' DNS domain, as the advertised listeners name it: <pod>.<headless>.<ns>.svc.<cluster domain>.
    advertised = next(a for a in statefulset["spec"]["template"]["spec"]["containers"][0]["args"]
                      if a.startswith("--set=advertised.listeners="))
    domain = advertised.split("$(POD_NAME).", 1)[1].split(":", 1)[0]
    assert domain.startswith(f"{headless}.{NAMESPACE}.svc."), advertised
    cluster_domain = domain.split(".svc.", 1)[1]
    client_service = next(s for n, s in services.items() if n != headless)
    client_name = f"{client_service['metadata']['name']}.{NAMESPACE}.svc.{cluster_domain}"
    pod_names = [f"{name}-{i}.{domain}" for i in range(replicas)]
    deployments = [o for (kind, _), o in objects.items() if kind == "Deployment"]
    pipeline_pods = [(d, f"{d['metadata']['name']}-sim-{n}") for d in deployments
                     for n in range(d["spec"]["replicas"])] if run_pipelines else []
    network = Network(pod_names + [pod for _, pod in pipeline_pods], {client_name: 0})
    work = tempfile.mkdtemp()
    pods = Pods(network, configmaps, weir, work)
    container = statefulset["spec"]["template"]["spec"]["containers"][0]
    protocols = dict(entry.split(":") for entry in next(
        a for a in container["args"] if a.startswith("--set=listener.security.protocol.map=")
    ).split("=", 2)[2].split(","))
    broker_config = yaml.safe_load(configmaps[name]["data"]["broker.yaml"])
    mechanism = broker_config.get("listener.name.client.sasl.enabled.mechanisms")
    tls_volume = next((v for v in statefulset["spec"]["template"]["spec"]["volumes"]
                       if v["name"] == "tls"), None)
    ca = None
    if tls_volume:
        principal = broker_config["super.users"].split(";")[0]
        ca = make_tls_secret(work, tls_volume["secret"]["secretName"],
                             principal.split(":", 1)[1], [f"*.{domain}", client_name])
    try:
        brokers = [pods.start(statefulset, f"{name}-{ordinal}", ordinal)
                   for ordinal in range(replicas)]
        probe = container["readinessProbe"]["httpGet"]
        port = next(p["containerPort"] for p in container["ports"] if p["name"] == probe["port"])
        deadline = time.time() + 60
        for broker in brokers:
            url = f"http://{network.address(broker.index)}:{port}{probe['path']}"
            while http_status(url) != 200:
                if time.time() > deadline or broker.process.poll() is not None:
                    raise SystemExit(f"pod {broker.name} never ready at {url}:\n"
                                     + pods.log(broker)[-3000:])
                time.sleep(0.5)
        print(f"pods: {replicas} ready", file=sys.stderr)
        kafka_port = next(p["port"] for p in client_service["spec"]["ports"] if p["name"] == "kafka")
        bootstrap = f"{client_name}:{kafka_port}"
        client = Client(network, weir, bootstrap, protocols["CLIENT"], mechanism, ca)
        jobs = [o for (kind, _), o in objects.items() if kind == "Job"]
        if jobs:
            listed = run_security_job(pods, jobs[0])
            assert "admin" in listed and "User:web" in listed, listed
            print("pods: the security Job made the users and ACLs, and ran again unchanged",
                  file=sys.stderr)
        info = client.run("cluster", "info").stdout
        brokers = [line for line in info.split("brokers:")[1].splitlines() if line.startswith("  ")]
        assert len(brokers) == replicas, info
        assert all(domain in line for line in brokers), info
        voters = len(re.findall(r"^  voter ", info, re.M))
        observers = len(re.findall(r"^  observer ", info, re.M))
        assert voters + observers == replicas and voters % 2 == 1, info
        # On every broker: the group's coordinator exports weir_group_lag only for partitions
        # it hosts (checked with the dashboard below).
        client.run("topic", "create", "pods", "--partitions", "3", "--replicas", str(replicas))
        lines = "".join(f"record-{i}\n" for i in range(100))
        client.run("produce", "pods", "--acks", "all", input=lines)
        read = client.run("consume", "pods", "--count", "100", "-g", "pods-reader").stdout.split()
        assert sorted(read) == sorted(lines.split()), read[:5]
        if "authorizer.class.name" in broker_config:
            internal_port = next(p["containerPort"] for p in container["ports"]
                                 if p["name"] == "internal")
            check_refusals(client, f"{pod_names[0]}:{internal_port}")
        check_dashboard(chart, [(network.address(i), port) for i in range(replicas)], False)
        print(f"pods: cluster of {replicas} formed ({voters} voters, {observers} observers), "
              f"100 records written and read through {bootstrap}", file=sys.stderr)
        if run_pipelines:
            copies = [pods.start(deployment, pod_name, replicas + index)
                      for index, (deployment, pod_name) in enumerate(pipeline_pods)]
            check_pipelines(pods, copies, deployments, client)
            check_dashboard(chart, [(network.address(pod.index), metrics_port(pod.container))
                                    for pod in copies], True)
    finally:
        pods.stop()
        network.remove()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
